/*
 * batch.c -- libbfeed's batches: made from a verified BATCH payload
 * (decoded, decompressed and u8 images expanded into pooled memory by
 * proto/codec.h), and the public accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "codec.h"

static void batch_dispose(bfeed_batch *b, int ack) {
  if (!b) return;
  if (b->shm) shm_release(b->shm, b->seq, ack);
  bufpool_put(b->cache, b->mem, b->mem_cap);
  bufpool_unref(b->cache);
  free(b);
}

void batch_free(bfeed_batch *b) { batch_dispose(b, 1); }
void batch_drop(bfeed_batch *b) { batch_dispose(b, 0); }

/* buf (pooled) becomes b's tensor memory; the payload is done with. */
static void batch_adopt(bfeed_client *c, bfeed_batch *b, uint8_t *buf, size_t buf_cap) {
  bufpool_put(c->cache, b->mem, b->mem_cap);
  b->mem = buf;
  b->mem_cap = buf_cap;
  b->raw = buf;
}

/* A compressed or u8 batch's data into raw tensors in b (proto/codec.h
 * says what each codec holds): decompressed into pooled memory of exactly
 * its plain size, then, for the u8 form, expanded through the stream's
 * table into pooled memory of the raw size. */
static int batch_decode_data(bfeed_client *c, const msg_batch *m, bfeed_batch *b, char *why, size_t cap) {
  const codec_info *info = codec_get(m->codec);
  const uint8_t *data = m->data;
  uint8_t *plain = NULL, *raw = NULL;
  size_t plain_cap = 0, raw_cap = 0, n = (size_t)codec_plain_size(m);
  int rc = 0;
  if (info->comp) {
    if (!(plain = bufpool_get(c->cache, n, &plain_cap)))
      return snprintf(why, cap, "out of memory for a %zu-byte batch", n), BFEED_ENOMEM;
    if ((rc = codec_decompress(m, plain, n, why, cap)) < 0) goto done;
    data = plain;
  }
  if (!info->u8) return batch_adopt(c, b, plain, plain_cap), 0;
  if (!(raw = bufpool_get(c->cache, m->raw_size, &raw_cap))) {
    rc = BFEED_ENOMEM;
    snprintf(why, cap, "out of memory for a %llu-byte batch", (unsigned long long)m->raw_size);
    goto done;
  }
  if ((rc = codec_u8_expand(m, data, raw, why, cap)) < 0) bufpool_put(c->cache, raw, raw_cap);
  else batch_adopt(c, b, raw, raw_cap);
done:
  bufpool_put(c->cache, plain, plain_cap);
  return rc;
}

/* The fields every batch takes from its decoded frame. */
static void batch_fields(bfeed_batch *b, const frame_header *h, const msg_batch *m) {
  b->epoch = m->epoch;
  b->index = m->index;
  b->seq = m->seq;
  b->ntensors = (int)m->ntensors;
  memcpy(b->t, m->t, sizeof m->t);
  b->raw_size = m->raw_size;
  b->wire_bytes = FRAME_HEADER_SIZE + (size_t)h->length;
}

int batch_from_shm(bfeed_client *c, shm_track *t, const frame_header *h, const uint8_t *p, bfeed_batch **out,
                   char *why, size_t cap) {
  msg_batch m;
  uint32_t slot;
  const char *w;
  int rc = t ? shm_batch_decode(t, p, h->length, &m, &slot, &w) : BFEED_EPROTO;
  if (rc < 0) return snprintf(why, cap, "%s", t ? w : "BATCH_SHM before its stream's SHM_RING"), rc;
  bfeed_batch *b = calloc(1, sizeof *b);
  if (!b) return snprintf(why, cap, "out of memory"), BFEED_ENOMEM;
  b->cache = bufpool_ref(c->cache);
  batch_fields(b, h, &m);
  if ((rc = shm_batch(t, &m, slot, b, why, cap)) < 0) {
    batch_drop(b);
    return rc;
  }
  *out = b;
  return 0;
}

int batch_from_payload(bfeed_client *c, const frame_header *h, uint8_t *mem, size_t mem_cap, size_t pad,
                       bfeed_batch **out, char *why, size_t cap) {
  bfeed_batch *b = calloc(1, sizeof *b);
  if (!b) {
    bufpool_put(c->cache, mem, mem_cap);
    return snprintf(why, cap, "out of memory"), BFEED_ENOMEM;
  }
  b->cache = bufpool_ref(c->cache);
  b->mem = mem;
  b->mem_cap = mem_cap;
  msg_batch m;
  const char *w;
  int rc = msg_batch_decode(mem + pad, h->length, FRAME_MAX_PAYLOAD, &m, &w);
  if (rc < 0) {
    snprintf(why, cap, "%s", w);
    batch_free(b);
    return rc;
  }
  batch_fields(b, h, &m);
  b->raw = m.data;
  if (!codec_is_plain(m.codec) && (rc = batch_decode_data(c, &m, b, why, cap)) < 0) {
    batch_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

BFEED_API uint64_t bfeed_batch_epoch(const bfeed_batch *b) { return b->epoch; }
BFEED_API uint64_t bfeed_batch_index(const bfeed_batch *b) { return b->index; }
BFEED_API int bfeed_batch_ntensors(const bfeed_batch *b) { return b->ntensors; }
BFEED_API size_t bfeed_batch_wire_bytes(const bfeed_batch *b) { return b->wire_bytes; }
BFEED_API size_t bfeed_batch_raw_bytes(const bfeed_batch *b) { return b->raw_size; }

BFEED_API int bfeed_batch_tensor(const bfeed_batch *b, int i, bfeed_tensor *out) {
  if (i < 0 || i >= b->ntensors) return BFEED_EINVAL;
  const msg_tensor *t = &b->t[i];
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->dtype = (bfeed_dtype)t->dtype;
  out->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) out->shape[d] = (int64_t)t->shape[d];
  out->data = b->raw + t->offset;
  out->nbytes = t->nbytes;
  return 0;
}

BFEED_API int bfeed_batch_find(const bfeed_batch *b, const char *name, bfeed_tensor *out) {
  for (int i = 0; i < b->ntensors; i++)
    if (strcmp(b->t[i].name, name) == 0) return bfeed_batch_tensor(b, i, out);
  return BFEED_EINVAL;
}

BFEED_API void bfeed_batch_release(bfeed_batch *b) { batch_free(b); }
