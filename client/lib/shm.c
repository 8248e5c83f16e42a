/*
 * shm.c -- libbfeed's side of a shared-memory stream (PROTOCOL.md "Shared
 * memory"): the ring mapped read-only, its batches' tensors pointing into
 * it, and the releases: a slot is written again only after its batch is
 * released, not when it was taken, so each release is told to the daemon
 * (an ACK listing the seq) from whichever thread releases.
 *
 * A ring lives while its stream or any of its batches does (refs, atomic),
 * so batches held past the stream's close, or the client's, stay valid.
 * Locking: t->mu guards c; it is taken before c->wmu
 * (an ACK is sent under it), and never with c->mu or c->wmu held, so a
 * batch released on any thread at any time cannot deadlock the client.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"

struct shm_track {
  int refs;           /* atomic: the stream's and one per batch */
  uint8_t *base;
  msg_shm_ring ring;
  pthread_mutex_t mu;
  bfeed_client *c;    /* NULL once the stream or client is closing: no more ACKs */
  uint64_t gen;       /* the connection the ring came on */
  uint32_t stream;
  uint64_t consumed;  /* atomic: the stream's count of batches taken, sent with each release */
};

static void shm_enc_ack(wbuf *w, const void *m) { msg_ack_encode(w, m); }

int shm_map(bfeed_client *c, uint32_t stream, int fd, const msg_shm_ring *r, shm_track **out, char *why,
            size_t cap) {
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < r->size) {
    close(fd);
    return snprintf(why, cap, "SHM_RING: the memfd is smaller than its %llu-byte ring", (unsigned long long)r->size),
           BFEED_EPROTO;
  }
  /* Unsealed, the daemon could shrink it under our mapping: SIGBUS. */
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
    close(fd);
    return snprintf(why, cap, "SHM_RING: the memfd is not sealed against shrinking"), BFEED_EPROTO;
  }
  void *p = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd); /* the mapping keeps the memory */
  shm_track *t = p == MAP_FAILED ? NULL : calloc(1, sizeof *t);
  if (!t) {
    if (p != MAP_FAILED) munmap(p, r->size);
    return snprintf(why, cap, "SHM_RING: cannot map %llu bytes", (unsigned long long)r->size), BFEED_ENOMEM;
  }
  t->refs = 1;
  t->base = p;
  t->ring = *r;
  pthread_mutex_init(&t->mu, NULL);
  t->c = c;
  t->gen = c->gen;
  t->stream = stream;
  *out = t;
  return 0;
}

void shm_unref(shm_track *t) {
  if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  munmap(t->base, t->ring.size);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

void shm_forget(shm_track *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->c = NULL;
  pthread_mutex_unlock(&t->mu);
}

int shm_batch_decode(const shm_track *t, const uint8_t *p, size_t n, msg_batch *m, uint32_t *slot, const char **why) {
  return msg_batch_shm_decode(p, n, &t->ring, m, slot, why);
}

void shm_ref(shm_track *t) { __atomic_add_fetch(&t->refs, 1, __ATOMIC_ACQ_REL); }

int shm_batch(shm_track *t, const msg_batch *m, uint32_t slot, bfeed_batch *b, char *why, size_t cap) {
  (void)m, (void)why, (void)cap;
  shm_ref(t);
  b->shm = t;
  b->raw = t->base + (uint64_t)slot * t->ring.slot_size; /* the decoder checked every extent against slot_size */
  return 0;
}

void shm_consumed(shm_track *t, uint64_t consumed) {
  if (t) __atomic_store_n(&t->consumed, consumed, __ATOMIC_RELEASE);
}

void shm_release(shm_track *t, uint64_t seq, int ack) {
  if (ack) {
    pthread_mutex_lock(&t->mu);
    if (t->c) { /* on a lost connection conn_send drops it: the new one has a ring of its own */
      msg_ack a = {.consumed = __atomic_load_n(&t->consumed, __ATOMIC_ACQUIRE), .nreleased = 1, .released = {seq}};
      conn_send(t->c, t->gen, FRAME_ACK, t->stream, shm_enc_ack, &a, NULL);
    }
    pthread_mutex_unlock(&t->mu);
  }
  shm_unref(t);
}
