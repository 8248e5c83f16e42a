/*
 * single_batch.c -- a single client's batches, made by its reader thread
 * (single_reader.c) from a verified BATCH payload (decoded, decompressed,
 * u8 images expanded into pooled memory) or a BATCH_SHM's slot
 * (single_shm.c), and given back when released (api_batch.c) or dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "single.h"

static void single_batch_dispose(bfeed_batch *b, int ack) {
  if (!b) return;
  if (b->shm) single_shm_release(b->shm, b->seq, ack);
  bufpool_put(b->cache, b->mem, b->mem_cap);
  bufpool_unref(b->cache);
  free(b);
}

void single_batch_free(bfeed_batch *b) { single_batch_dispose(b, 1); }
void single_batch_drop(bfeed_batch *b) { single_batch_dispose(b, 0); }

/* buf (pooled) becomes b's tensor memory; the payload is done with. */
static void single_batch_adopt(single_client *c, bfeed_batch *b, uint8_t *buf, size_t buf_cap) {
  bufpool_put(c->cache, b->mem, b->mem_cap);
  b->mem = buf;
  b->mem_cap = buf_cap;
  b->raw = buf;
}

/* zstd data into pooled memory of exactly n bytes (*out, *out_cap): 0, or
 * ECODEC / ENOMEM with the reason. */
static int single_batch_unzstd(single_client *c, const msg_batch *m, uint64_t n, uint8_t **out, size_t *out_cap,
                               char *err, size_t errlen) {
  unsigned long long declared = ZSTD_getFrameContentSize(m->data, m->data_size);
  size_t raw_cap = 0;
  uint8_t *raw = declared == n ? bufpool_get(c->cache, n, &raw_cap) : NULL;
  size_t got = raw ? ZSTD_decompress(raw, n, m->data, m->data_size) : 0;
  if (!raw || ZSTD_isError(got) || got != n) {
    bufpool_put(c->cache, raw, raw_cap);
    return api_err(err, errlen, raw || declared != n ? BFEED_ECODEC : BFEED_ENOMEM,
                   "BATCH %llu: zstd data does not decompress to its declared %llu bytes%s%s",
                   (unsigned long long)m->seq, (unsigned long long)n, ZSTD_isError(got) ? ": " : "",
                   ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
  }
  *out = raw;
  *out_cap = raw_cap;
  return 0;
}

/* Codec u8's data (msg.h) expanded into the raw tensors: every pixel
 * through its channel's table into the layout the head names, then the
 * other tensors copied. The table entries keep their little-endian bytes,
 * so the result is byte for byte what codec none carries. */
static int single_batch_expand_u8(single_client *c, const msg_batch *m, const uint8_t *data, bfeed_batch *b,
                                  char *err, size_t errlen) {
  const msg_tensor *t = &m->t[0];
  int nhwc = data[0] == 1;
  if (data[0] > 1 || (data[1] | data[2] | data[3]) || (nhwc ? t->shape[3] : t->shape[1]) != 3)
    return api_err(err, errlen, BFEED_EPROTO, "BATCH %llu: u8 layout byte %u does not fit the image shape",
                   (unsigned long long)m->seq, data[0]);
  uint16_t lut[3][256];
  memcpy(lut, data + 4, sizeof lut);
  size_t raw_cap;
  uint8_t *raw = bufpool_get(c->cache, m->raw_size, &raw_cap);
  if (!raw)
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %llu-byte batch", (unsigned long long)m->raw_size);
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
  single_batch_adopt(c, b, raw, raw_cap);
  return 0;
}

/* A compressed or u8 batch's data into raw tensors in b. */
static int single_batch_decode_data(single_client *c, const msg_batch *m, bfeed_batch *b, char *err, size_t errlen) {
  int u8 = msg_codec_u8(m->codec);
  const uint8_t *data = m->data;
  uint8_t *plain = NULL;
  size_t plain_cap = 0;
  if (msg_codec_zstd(m->codec)) {
    int rc = single_batch_unzstd(c, m, u8 ? msg_batch_u8_size(m) : m->raw_size, &plain, &plain_cap, err, errlen);
    if (rc < 0) return rc;
    if (!u8) return single_batch_adopt(c, b, plain, plain_cap), 0;
    data = plain;
  }
  int rc = single_batch_expand_u8(c, m, data, b, err, errlen);
  bufpool_put(c->cache, plain, plain_cap);
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
  b->cache = bufpool_ref(c->cache);
  single_batch_fields(b, h, &m);
  if ((rc = single_shm_batch(t, &m, slot, b, err, errlen)) < 0) {
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
    bufpool_put(c->cache, mem, mem_cap);
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  }
  b->cache = bufpool_ref(c->cache);
  b->mem = mem;
  b->mem_cap = mem_cap;
  msg_batch m;
  const char *w;
  int rc = msg_batch_decode(mem + pad, h->length, FRAME_MAX_PAYLOAD, &m, &w);
  if (rc < 0) {
    api_err(err, errlen, rc, "%s", w);
    single_batch_free(b);
    return rc;
  }
  single_batch_fields(b, h, &m);
  b->raw = m.data;
  if (m.codec != BFEED_CODEC_NONE && (rc = single_batch_decode_data(c, &m, b, err, errlen)) < 0) {
    single_batch_free(b);
    return rc;
  }
  *out = b;
  return 0;
}
