/*
 * single_batch.c -- a single client's batches, made by its reader thread
 * (single_reader.c) from a verified BATCH payload (decoded, decompressed
 * and u8 images expanded into pooled memory by proto/codec.h) or a BATCH_SHM's slot
 * (single_shm.c), and given back when released (api_batch.c) or dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "single.h"

static void single_batch_dispose(bfeed_batch *b, int ack) {
  if (!b) return;
  if (b->shm) single_shm_release(b->shm, b->seq, b->raw, ack);
  bufcache_put(b->cache, b->mem, b->mem_cap);
  bufcache_unref(b->cache);
  free(b);
}

void single_batch_free(bfeed_batch *b) { single_batch_dispose(b, 1); }
void single_batch_drop(bfeed_batch *b) { single_batch_dispose(b, 0); }

/* The buffer cache's lock may have been held at the fork: the child's copy
 * of the memory is freed by itself, the cache left to the parent. */
void single_batch_forget(bfeed_batch *b) {
  if (!b) return;
  if (b->shm) single_shm_unref(b->shm); /* atomic: no lock, no ACK */
  free(b->mem);
  free(b);
}

/* buf (pooled) becomes b's tensor memory; the payload is done with. */
static void single_batch_adopt(single_client *c, bfeed_batch *b, uint8_t *buf, size_t buf_cap) {
  bufcache_put(c->cache, b->mem, b->mem_cap);
  b->mem = buf;
  b->mem_cap = buf_cap;
  b->raw = buf;
}

/* A compressed or u8 batch's data into raw tensors in b (proto/codec.h
 * says what each codec holds): decompressed into pooled memory of exactly
 * its plain size, then, for the u8 form, expanded through the stream's
 * table into pooled memory of the raw size. */
static int single_batch_decode_data(single_client *c, const msg_batch *m, bfeed_batch *b, char *err, size_t errlen) {
  const codec_info *info = codec_get(m->codec);
  const uint8_t *data = m->data;
  uint8_t *plain = NULL, *raw = NULL;
  size_t plain_cap = 0, raw_cap = 0, n = (size_t)codec_plain_size(m);
  int rc = 0;
  if (info->comp) {
    if (!(plain = bufcache_get(c->cache, n, &plain_cap)))
      return api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %zu-byte batch", n);
    if ((rc = codec_decompress(m, plain, n, err, errlen)) < 0) goto done;
    data = plain;
  }
  if (!info->u8) return single_batch_adopt(c, b, plain, plain_cap), 0;
  if (!(raw = bufcache_get(c->cache, m->raw_size, &raw_cap))) {
    rc = api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %llu-byte batch", (unsigned long long)m->raw_size);
    goto done;
  }
  if ((rc = codec_u8_expand(m, data, raw, err, errlen)) < 0) bufcache_put(c->cache, raw, raw_cap);
  else single_batch_adopt(c, b, raw, raw_cap);
done:
  bufcache_put(c->cache, plain, plain_cap);
  return rc;
}

/* The fields every batch takes from its decoded frame. */
static void single_batch_fields(bfeed_batch *b, const frame_header *h, const msg_batch *m) {
  b->epoch = m->epoch;
  b->index = m->index;
  b->seq = m->seq;
  b->ntensors = (int)m->ntensors;
  memcpy(b->t, m->t, sizeof m->t);
  b->raw_size = m->raw_size;
  b->wire_bytes = FRAME_HEADER_SIZE + (size_t)h->length;
}

int single_batch_from_shm(single_client *c, single_shm *t, const frame_header *h, const uint8_t *p,
                          bfeed_batch **out, char *err, size_t errlen) {
  msg_batch m;
  uint32_t slot;
  int rc = t ? single_shm_batch_decode(t, p, h->length, &m, &slot, err, errlen)
             : api_err(err, errlen, BFEED_EPROTO, "BATCH_SHM before its stream's SHM_RING");
  if (rc < 0) return rc;
  bfeed_batch *b = calloc(1, sizeof *b);
  if (!b) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  b->cache = bufcache_ref(c->cache);
  b->forks = c->base.forks;
  single_batch_fields(b, h, &m);
  if ((rc = single_shm_batch(c, t, &m, slot, b, err, errlen)) < 0) {
    single_batch_drop(b);
    return rc;
  }
  *out = b;
  return 0;
}

int single_batch_from_payload(single_client *c, const frame_header *h, uint8_t *mem, size_t mem_cap, size_t pad,
                              bfeed_batch **out, char *err, size_t errlen) {
  bfeed_batch *b = calloc(1, sizeof *b);
  if (!b) {
    bufcache_put(c->cache, mem, mem_cap);
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  }
  b->cache = bufcache_ref(c->cache);
  b->forks = c->base.forks;
  b->mem = mem;
  b->mem_cap = mem_cap;
  msg_batch m;
  int rc = msg_batch_decode(mem + pad, h->length, FRAME_MAX_PAYLOAD, &m, err, errlen);
  if (rc < 0) {
    single_batch_free(b);
    return rc;
  }
  single_batch_fields(b, h, &m);
  b->raw = m.data;
  if (!codec_is_plain(m.codec) && (rc = single_batch_decode_data(c, &m, b, err, errlen)) < 0) {
    single_batch_free(b);
    return rc;
  }
  *out = b;
  return 0;
}
