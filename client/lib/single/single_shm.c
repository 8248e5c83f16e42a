/*
 * single_shm.c -- a single client's side of a shared-memory stream
 * (PROTOCOL.md "Shared memory"; single_reader.c maps each ring,
 * single_batch.c puts batches in its slots, and they are released from any
 * thread): the ring mapped read-only, its batches' tensors pointing into
 * it, and the releases: a slot is written again only after its batch is
 * released, not when it was taken, so each release is told to the daemon
 * (an ACK listing the seq) from whichever thread releases.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "single.h"

struct single_shm {
  int refs;           /* atomic: the stream's and one per batch */
  uint8_t *base;
  msg_shm_ring ring;
  pthread_mutex_t mu;
  single_client *c;   /* NULL once the stream or client is closing: no more ACKs */
  uint64_t gen;       /* the connection the ring came on */
  uint32_t stream;
  uint64_t consumed;  /* atomic: the stream's count of batches taken, sent with each release */
};

static void single_shm_enc_ack(wbuf *w, const void *m) { msg_ack_encode(w, m); }

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
  void *p = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd); /* the mapping keeps the memory */
  single_shm *t = p == MAP_FAILED ? NULL : calloc(1, sizeof *t);
  if (!t) {
    if (p != MAP_FAILED) munmap(p, r->size);
    return api_err(err, errlen, BFEED_ENOMEM, "SHM_RING: cannot map %llu bytes", (unsigned long long)r->size);
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

void single_shm_unref(single_shm *t) {
  if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  munmap(t->base, t->ring.size);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

void single_shm_forget(single_shm *t) {
  if (!t) return;
  pthread_mutex_lock(&t->mu);
  t->c = NULL;
  pthread_mutex_unlock(&t->mu);
}

int single_shm_batch_decode(const single_shm *t, const uint8_t *p, size_t n, msg_batch *m, uint32_t *slot,
                            char *err, size_t errlen) {
  return msg_batch_shm_decode(p, n, &t->ring, m, slot, err, errlen);
}

void single_shm_ref(single_shm *t) { __atomic_add_fetch(&t->refs, 1, __ATOMIC_ACQ_REL); }

int single_shm_batch(single_shm *t, const msg_batch *m, uint32_t slot, bfeed_batch *b, char *err, size_t errlen) {
  (void)m, (void)err, (void)errlen;
  single_shm_ref(t);
  b->shm = t;
  b->raw = t->base + (uint64_t)slot * t->ring.slot_size; /* the decoder checked every extent against slot_size */
  return 0;
}

void single_shm_consumed(single_shm *t, uint64_t consumed) {
  if (t) __atomic_store_n(&t->consumed, consumed, __ATOMIC_RELEASE);
}

void single_shm_release(single_shm *t, uint64_t seq, int ack) {
  if (ack) {
    pthread_mutex_lock(&t->mu);
    if (t->c) { /* on a lost connection single_conn_send drops it: the new one has a ring of its own */
      msg_ack a = {.consumed = __atomic_load_n(&t->consumed, __ATOMIC_ACQUIRE), .nreleased = 1, .released = {seq}};
      single_conn_send(t->c, t->gen, FRAME_ACK, t->stream, single_shm_enc_ack, &a, NULL, 0);
    }
    pthread_mutex_unlock(&t->mu);
  }
  single_shm_unref(t);
}
