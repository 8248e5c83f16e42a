/*
 * batch.c -- libbfeed's batches: made from a verified BATCH payload
 * (decoded, decompressed, u8 images expanded into pooled memory), and the public accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "client.h"

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

/* zstd data into pooled memory of exactly n bytes (*out, *out_cap): 0, or
 * ECODEC / ENOMEM with the reason. */
static int batch_unzstd(bfeed_client *c, const msg_batch *m, uint64_t n, uint8_t **out, size_t *out_cap, char *why,
                        size_t cap) {
  unsigned long long declared = ZSTD_getFrameContentSize(m->data, m->data_size);
  size_t raw_cap = 0;
  uint8_t *raw = declared == n ? bufpool_get(c->cache, n, &raw_cap) : NULL;
  size_t got = raw ? ZSTD_decompress(raw, n, m->data, m->data_size) : 0;
  if (!raw || ZSTD_isError(got) || got != n) {
    bufpool_put(c->cache, raw, raw_cap);
    snprintf(why, cap, "BATCH %llu: zstd data does not decompress to its declared %llu bytes%s%s",
             (unsigned long long)m->seq, (unsigned long long)n, ZSTD_isError(got) ? ": " : "",
             ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
    return raw || declared != n ? BFEED_ECODEC : BFEED_ENOMEM;
  }
  *out = raw;
  *out_cap = raw_cap;
  return 0;
}

/* Codec u8's data (msg.h) expanded into the raw tensors: every pixel
 * through its channel's table into the layout the head names, then the
 * other tensors copied. The table entries keep their little-endian bytes,
 * so the result is byte for byte what codec none carries. */
static int batch_expand_u8(bfeed_client *c, const msg_batch *m, const uint8_t *data, bfeed_batch *b, char *why,
                           size_t cap) {
  const msg_tensor *t = &m->t[0];
  int nhwc = data[0] == 1;
  if (data[0] > 1 || (data[1] | data[2] | data[3]) || (nhwc ? t->shape[3] : t->shape[1]) != 3)
    return snprintf(why, cap, "BATCH %llu: u8 layout byte %u does not fit the image shape",
                    (unsigned long long)m->seq, data[0]), BFEED_EPROTO;
  uint16_t lut[3][256];
  memcpy(lut, data + 4, sizeof lut);
  size_t raw_cap;
  uint8_t *raw = bufpool_get(c->cache, m->raw_size, &raw_cap);
  if (!raw) return snprintf(why, cap, "out of memory for a %llu-byte batch", (unsigned long long)m->raw_size),
                BFEED_ENOMEM;
  const uint8_t *px = data + MSG_U8_HEAD;
  size_t n = (size_t)t->shape[0], hw = (size_t)(nhwc ? t->shape[1] * t->shape[2] : t->shape[2] * t->shape[3]);
  uint16_t *out = (uint16_t *)raw; /* 64-byte aligned */
  if (nhwc)
    for (size_t i = 0; i < n * hw; i++, px += 3, out += 3) {
      out[0] = lut[0][px[0]];
      out[1] = lut[1][px[1]];
      out[2] = lut[2][px[2]];
    }
  else
    for (size_t i = 0; i < n; i++, out += 3 * hw)
      for (size_t p = 0; p < hw; p++, px += 3) {
        out[p] = lut[0][px[0]];
        out[hw + p] = lut[1][px[1]];
        out[2 * hw + p] = lut[2][px[2]];
      }
  memcpy(raw + t->nbytes, px, m->raw_size - t->nbytes);
  batch_adopt(c, b, raw, raw_cap);
  return 0;
}

/* A compressed or u8 batch's data into raw tensors in b. */
static int batch_decode_data(bfeed_client *c, const msg_batch *m, bfeed_batch *b, char *why, size_t cap) {
  int u8 = msg_codec_u8(m->codec);
  const uint8_t *data = m->data;
  uint8_t *plain = NULL;
  size_t plain_cap = 0;
  if (msg_codec_zstd(m->codec)) {
    int rc = batch_unzstd(c, m, u8 ? msg_batch_u8_size(m) : m->raw_size, &plain, &plain_cap, why, cap);
    if (rc < 0) return rc;
    if (!u8) return batch_adopt(c, b, plain, plain_cap), 0;
    data = plain;
  }
  int rc = batch_expand_u8(c, m, data, b, why, cap);
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
  if (m.codec != BFEED_CODEC_NONE && (rc = batch_decode_data(c, &m, b, why, cap)) < 0) {
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
