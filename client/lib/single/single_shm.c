/*
 * single_shm.c -- a single client's side of a shared-memory stream
 * (PROTOCOL.md "Shared memory"; single_reader.c maps each ring,
 * single_batch.c puts batches in its slots, and they are released from any
 * thread): the ring mapped copy-on-write, its batches' tensors pointing
 * into it, and the releases: a slot is written again only after its batch
 * is released, not when it was taken, so each release is told to the
 * daemon (an ACK listing the seq) from whichever thread releases.
 *
 * Callers may write into their batches (NumPy and torch take them as
 * writable, and in-place ops are common), so the ring is mapped
 * MAP_PRIVATE with PROT_WRITE: a page the caller writes becomes a private
 * copy, one it only reads stays the daemon's page. Before a release is
 * told, the slot's private pages are dropped (MADV_DONTNEED), so the
 * slot's next batch reads the daemon's bytes again. /proc/self/pagemap
 * says which pages are copies, so that a caller that only reads keeps its
 * pages mapped (each page faulted in again costs more than reading it:
 * bench/README.md "Writing into shared-memory batches"). That needs slots
 * on page boundaries, which this daemon's are; a ring whose slots are not
 * (an older daemon's) is mapped read-only and each of its batches is
 * copied into pooled memory, its slot released at once.
 *
 * A ring lives while its stream or any of its batches does (refs, atomic),
 * so batches held past the stream's close, or the client's, stay valid.
 * Locking: t->mu guards c; it is taken before c->wmu (an ACK is sent under
 * it), and never with c->base.mu or c->wmu held, so a batch released on
 * any thread at any time cannot deadlock the client.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "single.h"

struct single_shm {
  int refs;           /* atomic: the stream's and one per batch */
  uint8_t *base;
  msg_shm_ring ring;
  int copy;           /* slots not page-aligned: batches are copied out (see above) */
  pthread_mutex_t mu;
  int pagemap;        /* /proc/self/pagemap while the stream is open (-1: opened at each release) */
  single_client *c;   /* NULL once the stream or client is closing: no more ACKs */
  uint64_t gen;       /* the connection the ring came on */
  uint32_t stream;
  uint64_t consumed;  /* atomic: the stream's count of batches taken, sent with each release */
};

static void single_shm_enc_ack(wbuf *w, const void *m) { msg_ack_encode(w, m); }

static uint64_t single_shm_page(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (uint64_t)p : 4096;
}

int single_shm_map(single_client *c, uint32_t stream, int fd, const msg_shm_ring *r, single_shm **out, char *err,
                   size_t errlen) {
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < r->size) {
    close(fd);
    return api_err(err, errlen, BFEED_EPROTO, "SHM_RING: the memfd is smaller than its %llu-byte ring",
                   (unsigned long long)r->size);
  }
  /* Unsealed, the daemon could shrink it under our mapping: SIGBUS. */
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
    close(fd);
    return api_err(err, errlen, BFEED_EPROTO, "SHM_RING: the memfd is not sealed against shrinking");
  }
  /* MAP_NORESERVE: the private mapping's size is not charged as if every
   * page were to be copied; only the pages written are. */
  int copy = r->slot_size % single_shm_page() != 0;
  void *p = copy ? mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0)
                 : mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  close(fd); /* the mapping keeps the memory */
  single_shm *t = p == MAP_FAILED ? NULL : calloc(1, sizeof *t);
  if (!t) {
    if (p != MAP_FAILED) munmap(p, r->size);
    return api_err(err, errlen, BFEED_ENOMEM, "SHM_RING: cannot map %llu bytes", (unsigned long long)r->size);
  }
  t->refs = 1;
  t->base = p;
  t->ring = *r;
  t->copy = copy;
  /* Kept open for the releases, which would otherwise open it each time:
   * closed with the stream (no descriptor outlives it). Only this process
   * releases into it: a forked child forgets its batches (api.h). */
  t->pagemap = copy ? -1 : open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  pthread_mutex_init(&t->mu, NULL);
  t->c = c;
  t->gen = c->gen;
  t->stream = stream;
  *out = t;
  return 0;
}

void single_shm_unref(single_shm *t) {
  if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  munmap(t->base, t->ring.size);
  if (t->pagemap >= 0) close(t->pagemap);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

void single_shm_forget(single_shm *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->c = NULL;
  if (t->pagemap >= 0) close(t->pagemap);
  t->pagemap = -1;
  pthread_mutex_unlock(&t->mu);
}

int single_shm_batch_decode(const single_shm *t, const uint8_t *p, size_t n, msg_batch *m, uint32_t *slot,
                            char *err, size_t errlen) {
  return msg_batch_shm_decode(p, n, &t->ring, m, slot, err, errlen);
}

void single_shm_ref(single_shm *t) { __atomic_add_fetch(&t->refs, 1, __ATOMIC_ACQ_REL); }

/* t->mu held: the daemon may write the slot of batch seq again, told by an
 * ACK that releases seq (nothing once the stream or client is closing). */
static void single_shm_tell_release(single_shm *t, uint64_t seq) {
  if (t->c) { /* on a lost connection single_conn_send drops it: the new one has a ring of its own */
    msg_ack a = {.consumed = __atomic_load_n(&t->consumed, __ATOMIC_ACQUIRE), .nreleased = 1, .released = {seq}};
    single_conn_send(t->c, t->gen, FRAME_ACK, t->stream, single_shm_enc_ack, &a, NULL, 0);
  }
}

int single_shm_batch(single_client *c, single_shm *t, const msg_batch *m, uint32_t slot, bfeed_batch *b, char *err,
                     size_t errlen) {
  const uint8_t *at = t->base + (uint64_t)slot * t->ring.slot_size; /* the decoder checked every extent */
  if (!t->copy) {
    single_shm_ref(t);
    b->shm = t;
    b->raw = at;
    return 0;
  }
  size_t cap, n = (size_t)m->raw_size;
  uint8_t *mem = bufcache_get(c->cache, n ? n : 1, &cap);
  if (!mem) return api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %zu-byte batch", n);
  memcpy(mem, at, n);
  b->mem = mem;
  b->mem_cap = cap;
  b->raw = mem;
  pthread_mutex_lock(&t->mu);
  single_shm_tell_release(t, m->seq); /* copied: the slot is the daemon's again */
  pthread_mutex_unlock(&t->mu);
  return 0;
}

void single_shm_consumed(single_shm *t, uint64_t consumed) {
  if (t) __atomic_store_n(&t->consumed, consumed, __ATOMIC_RELEASE);
}

/* Linux 6.7's PAGEMAP_SCAN (<linux/fs.h>), spelt out for older headers:
 * the runs of pages of a range in given states, in one call. */
typedef struct single_shm_region {
  uint64_t start, end, categories;
} single_shm_region;
typedef struct single_shm_scan {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, inverted, mask, anyof, return_mask;
} single_shm_scan;
#define SINGLE_SHM_PAGEMAP_SCAN _IOWR('f', 16, single_shm_scan)
#define SINGLE_SHM_PAGE_FILE (1u << 2)
#define SINGLE_SHM_PAGE_PRESENT (1u << 3)
#define SINGLE_SHM_PAGE_SWAPPED (1u << 4)

/* The pages of [p, p + n) to drop: private copies (present, not the
 * file's page) or pages swapped out, as [*first, *last) in bytes from p
 * (empty: first == last). PAGEMAP_SCAN where the kernel has it, else a
 * read of the range's pagemap entries; when neither works, all of it. */
static void single_shm_copies(int fd, uint8_t *p, size_t n, uint64_t *first, uint64_t *last) {
  uint64_t page = single_shm_page(), base = (uint64_t)(uintptr_t)p, lo = UINT64_MAX, hi = 0, e[512];
  single_shm_region reg[32];
  const uint64_t want = SINGLE_SHM_PAGE_PRESENT | SINGLE_SHM_PAGE_SWAPPED;
  single_shm_scan a = {.size = sizeof a, .start = base, .end = base + n, .vec = (uint64_t)(uintptr_t)reg,
                       .vec_len = 32, .inverted = SINGLE_SHM_PAGE_FILE, .mask = SINGLE_SHM_PAGE_FILE,
                       .anyof = want, .return_mask = want | SINGLE_SHM_PAGE_FILE};
  long got = fd >= 0 ? ioctl(fd, SINGLE_SHM_PAGEMAP_SCAN, &a) : -1;
  for (; got >= 0; got = ioctl(fd, SINGLE_SHM_PAGEMAP_SCAN, &a)) {
    for (long k = 0; k < got; k++) {
      if (lo == UINT64_MAX) lo = reg[k].start - base;
      hi = reg[k].end - base;
    }
    if (a.walk_end >= a.end) break;
    a.start = a.walk_end; /* the regions filled vec: go on from where it stopped */
  }
  for (uint64_t i = 0, pages = n / page; got < 0 && fd >= 0 && i < pages;) {
    uint64_t k = pages - i < 512 ? pages - i : 512;
    if (pread(fd, e, k * 8, (off_t)((base / page + i) * 8)) != (ssize_t)(k * 8)) break;
    for (uint64_t j = 0; j < k; j++)
      if ((e[j] >> 62 & 1) || ((e[j] >> 63 & 1) && !(e[j] >> 61 & 1))) { /* swapped; present, not file */
        if (lo == UINT64_MAX) lo = (i + j) * page;
        hi = (i + j + 1) * page;
      }
    if ((i += k) == pages) got = 0; /* read whole */
  }
  if (got < 0) lo = 0, hi = n; /* could not tell */
  *first = lo == UINT64_MAX ? 0 : lo;
  *last = lo == UINT64_MAX ? 0 : hi;
}

int single_shm_discard(int pagemap, uint8_t *p, size_t n) {
  int fd = pagemap >= 0 ? pagemap : open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  uint64_t first, last;
  single_shm_copies(fd, p, n, &first, &last);
  if (fd >= 0 && fd != pagemap) close(fd);
  return first == last ? 0 : madvise(p + first, last - first, MADV_DONTNEED);
}

void single_shm_release(single_shm *t, uint64_t seq, const uint8_t *raw, int ack) {
  if (ack) {
    /* Pages the caller wrote are private copies: dropped, the next access
     * reads the ring again. Until that is done the slot stays held (no
     * release told): a copy must never show through in a later batch. */
    uint64_t slot = (uint64_t)(raw - t->base) / t->ring.slot_size;
    pthread_mutex_lock(&t->mu);
    if (single_shm_discard(t->pagemap, t->base + slot * t->ring.slot_size, t->ring.slot_size) == 0)
      single_shm_tell_release(t, seq);
    pthread_mutex_unlock(&t->mu);
  }
  single_shm_unref(t);
}
