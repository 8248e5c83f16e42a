/* decode_mem.c -- see decode_mem.h */
#include "decode_mem.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bfeed_types.h"

static uint64_t decode_mem_limit_bytes, decode_mem_budget_bytes, decode_mem_held_bytes; /* atomics */

/* The decodes running (between enter and leave), and who waits for one to end. */
static pthread_mutex_t decode_mem_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t decode_mem_cv = PTHREAD_COND_INITIALIZER;
static unsigned decode_mem_running;
/* The needs of the decodes entered whose buffers are not counted yet: a
 * decode's need is promised from its enter until decode_mem_settle, so that
 * a second decode entering between the first one's enter and its reserve
 * sees it (without this, four workers arriving at once all fitted an empty
 * count, and two 100 MB decodes ran under a 160M max_memory). */
static uint64_t decode_mem_promised;

void decode_mem_set_limit(uint64_t bytes) { __atomic_store_n(&decode_mem_limit_bytes, bytes, __ATOMIC_RELAXED); }

void decode_mem_set_budget(uint64_t bytes) {
  __atomic_store_n(&decode_mem_budget_bytes, bytes, __ATOMIC_RELAXED);
  pthread_mutex_lock(&decode_mem_mu);
  pthread_cond_broadcast(&decode_mem_cv); /* a larger budget may let waiters in */
  pthread_mutex_unlock(&decode_mem_mu);
}

void decode_mem_enter(uint64_t need) {
  pthread_mutex_lock(&decode_mem_mu);
  for (;;) {
    uint64_t budget = __atomic_load_n(&decode_mem_budget_bytes, __ATOMIC_RELAXED);
    if (!budget || !decode_mem_running || decode_mem_held() + decode_mem_promised + need <= budget) break;
    pthread_cond_wait(&decode_mem_cv, &decode_mem_mu);
  }
  decode_mem_running++;
  decode_mem_promised += need;
  pthread_mutex_unlock(&decode_mem_mu);
}

void decode_mem_settle(uint64_t need) {
  pthread_mutex_lock(&decode_mem_mu);
  decode_mem_promised -= need;
  pthread_mutex_unlock(&decode_mem_mu);
}

void decode_mem_leave(void) {
  pthread_mutex_lock(&decode_mem_mu);
  decode_mem_running--;
  pthread_cond_broadcast(&decode_mem_cv);
  pthread_mutex_unlock(&decode_mem_mu);
}

uint64_t decode_mem_limit(void) { return __atomic_load_n(&decode_mem_limit_bytes, __ATOMIC_RELAXED); }

uint64_t decode_mem_held(void) { return __atomic_load_n(&decode_mem_held_bytes, __ATOMIC_RELAXED); }

int decode_mem_check(const char *what, int width, int height, uint64_t need, char *err, size_t errlen) {
  uint64_t limit = decode_mem_limit(), budget = __atomic_load_n(&decode_mem_budget_bytes, __ATOMIC_RELAXED);
  int by_budget = budget && (!limit || budget < limit);
  if (by_budget) limit = budget;
  if (!limit || need <= limit) return 0;
  snprintf(err, errlen, "%s of %dx%d needs %llu bytes to decode, over %s (%llu)", what, width, height,
           (unsigned long long)need, by_budget ? "max_memory" : "max_decode_memory", (unsigned long long)limit);
  return BFEED_ELIMIT; /* a limit of the daemon's, not a fault of the file: skips.h's too_large */
}

static void decode_mem_count(uint64_t was, uint64_t now) {
  if (now > was) __atomic_add_fetch(&decode_mem_held_bytes, now - was, __ATOMIC_RELAXED);
  else if (was > now) __atomic_sub_fetch(&decode_mem_held_bytes, was - now, __ATOMIC_RELAXED);
}

void decode_mem_take(uint64_t *held, uint64_t bytes) {
  *held += bytes;
  decode_mem_count(0, bytes);
}

void decode_mem_put(uint64_t *held) {
  decode_mem_count(*held, 0);
  *held = 0;
}

/* Large buffers are mapped on their own, so that unmapping returns them to
 * the system whatever malloc's thresholds say. */
static void decode_mem_unmap(decode_mem_buf *b) {
  if (!b->p) return;
  if (b->cap > DECODE_MEM_KEEP) munmap(b->p, b->cap);
  else free(b->p);
  decode_mem_count(b->cap, 0);
  b->p = NULL;
  b->cap = 0;
}

void *decode_mem_reserve(decode_mem_buf *b, size_t n) {
  if (n <= b->cap && b->p) return b->p;
  decode_mem_unmap(b);
  void *p;
  if (n > DECODE_MEM_KEEP) {
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) p = NULL;
  } else {
    p = malloc(n ? n : 1);
  }
  if (!p) return NULL;
  b->p = p;
  b->cap = n;
  decode_mem_count(0, n);
  return p;
}

void decode_mem_trim(decode_mem_buf *b) {
  if (b->cap > DECODE_MEM_KEEP) decode_mem_unmap(b);
}

void decode_mem_release(decode_mem_buf *b) { decode_mem_unmap(b); }
