/* shm_ring.c -- see shm_ring.h */
#define _GNU_SOURCE
#include "shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHM_RING_MAX_SLOTS 64 /* cold is a 64-bit mask */

struct shm_ring {
  int fd;
  int refs;
  uint32_t slots;
  uint64_t slot_size;
  uint8_t *base;
  uint64_t cold; /* bit i: slot i's pages given back (shm_ring_cool) */
  uint32_t holds[SHM_RING_MAX_SLOTS]; /* shm_ring_take's counts */
};

static uint64_t shm_ring_total; /* loop thread only */

uint64_t shm_ring_slot_bytes(uint64_t raw) {
  long page = sysconf(_SC_PAGESIZE);
  uint64_t p = page > 0 ? (uint64_t)page : 4096;
  return raw ? (raw + p - 1) / p * p : p;
}

static shm_ring *shm_ring_make(uint32_t slots, uint64_t slot_size, int cold, char *err, size_t errlen) {
  if (slots > SHM_RING_MAX_SLOTS) slots = SHM_RING_MAX_SLOTS;
  uint64_t size = (uint64_t)slots * slot_size;
  shm_ring *r = calloc(1, sizeof *r);
  if (!r) return snprintf(err, errlen, "out of memory"), NULL;
  r->refs = 1;
  r->cold = cold ? (slots < 64 ? (1ull << slots) - 1 : ~0ull) : 0;
  r->slots = slots;
  r->slot_size = slot_size;
  const char *step = "memfd_create";
  r->fd = memfd_create("bfeed-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (r->fd >= 0) step = "ftruncate";
  if (r->fd >= 0 && ftruncate(r->fd, (off_t)size) == 0) step = "F_ADD_SEALS";
  if (r->fd >= 0 && fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) step = "mmap";
  if (strcmp(step, "mmap") == 0) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (p != MAP_FAILED) {
      r->base = p;
      shm_ring_total += (uint64_t)(slots - (uint32_t)__builtin_popcountll(r->cold)) * slot_size;
      return r;
    }
  }
  snprintf(err, errlen, "shared-memory ring of %u slots of %llu bytes: %s: %s", slots, (unsigned long long)slot_size,
           step, strerror(errno));
  if (r->fd >= 0) close(r->fd);
  free(r);
  return NULL;
}

shm_ring *shm_ring_new(uint32_t slots, uint64_t slot_size, char *err, size_t errlen) {
  return shm_ring_make(slots, slot_size, 0, err, errlen);
}

shm_ring *shm_ring_new_cold(uint32_t slots, uint64_t slot_size, char *err, size_t errlen) {
  return shm_ring_make(slots, slot_size, 1, err, errlen);
}

void shm_ring_ref(shm_ring *r) { r->refs++; }

void shm_ring_free(shm_ring *r) {
  if (!r || --r->refs > 0) return;
  uint64_t size = (uint64_t)r->slots * r->slot_size;
  munmap(r->base, size);
  close(r->fd);
  shm_ring_total -= (uint64_t)(r->slots - (uint32_t)__builtin_popcountll(r->cold)) * r->slot_size;
  free(r);
}

uint64_t shm_ring_cool(shm_ring *r, uint32_t i) {
  if (r->cold >> i & 1) return 0;
  /* The memfd's pages go back to the system; the client's mapping reads
   * zeros there until the slot is written again. The seals (no shrink, no
   * grow) leave holes allowed. */
  if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(i * r->slot_size), (off_t)r->slot_size) < 0)
    return 0;
  r->cold |= 1ull << i;
  shm_ring_total -= r->slot_size;
  return r->slot_size;
}

void shm_ring_warm(shm_ring *r, uint32_t i) {
  if (!(r->cold >> i & 1)) return;
  r->cold &= ~(1ull << i);
  shm_ring_total += r->slot_size;
}

int shm_ring_fd(const shm_ring *r) { return r->fd; }
uint32_t shm_ring_slots(const shm_ring *r) { return r->slots; }
uint64_t shm_ring_slot_size(const shm_ring *r) { return r->slot_size; }
uint8_t *shm_ring_slot(const shm_ring *r, uint32_t i) { return r->base + (uint64_t)i * r->slot_size; }
uint64_t shm_ring_bytes(void) { return shm_ring_total; }

int shm_ring_take(shm_ring *r, int (*admit)(void *arg, uint64_t bytes), void *arg) {
  int cold = -1;
  for (uint32_t i = 0; i < r->slots; i++) {
    if (r->holds[i]) continue;
    if (!(r->cold >> i & 1)) {
      r->holds[i] = 1;
      return (int)i;
    }
    if (cold < 0) cold = (int)i;
  }
  if (cold < 0 || !admit(arg, r->slot_size)) return -1;
  shm_ring_warm(r, (uint32_t)cold);
  r->holds[cold] = 1;
  return cold;
}

void shm_ring_hold(shm_ring *r, uint32_t i) { r->holds[i]++; }
void shm_ring_drop(shm_ring *r, uint32_t i) { r->holds[i]--; }

uint32_t shm_ring_free_slots(const shm_ring *r) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->slots; i++) n += r->holds[i] == 0;
  return n;
}

uint64_t shm_ring_cool_free(shm_ring *r) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < r->slots; i++)
    if (!r->holds[i]) bytes += shm_ring_cool(r, i);
  return bytes;
}
