/*
 * batch.c -- libbfeed's batches: made from a verified BATCH payload
 * (decoded, decompressed into pooled memory), and the public accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "client.h"

void batch_free(bfeed_batch *b) {
  if (!b) return;
  bufpool_put(b->cache, b->mem, b->mem_cap);
  bufpool_unref(b->cache);
  free(b);
}

/* zstd data into pooled memory of exactly raw_size bytes: 0, or ECODEC /
 * ENOMEM with the reason. */
static int batch_decompress(bfeed_client *c, const msg_batch *m, bfeed_batch *b, char *why, size_t cap) {
  unsigned long long declared = ZSTD_getFrameContentSize(m->data, m->data_size);
  size_t raw_cap = 0;
  uint8_t *raw = declared == m->raw_size ? bufpool_get(c->cache, m->raw_size, &raw_cap) : NULL;
  size_t got = raw ? ZSTD_decompress(raw, m->raw_size, m->data, m->data_size) : 0;
  if (!raw || ZSTD_isError(got) || got != m->raw_size) {
    bufpool_put(c->cache, raw, raw_cap);
    snprintf(why, cap, "BATCH %llu: zstd data does not decompress to its declared %llu bytes%s%s",
             (unsigned long long)m->seq, (unsigned long long)m->raw_size, ZSTD_isError(got) ? ": " : "",
             ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
    return raw || declared != m->raw_size ? BFEED_ECODEC : BFEED_ENOMEM;
  }
  bufpool_put(c->cache, b->mem, b->mem_cap); /* the compressed bytes are done with */
  b->mem = raw;
  b->mem_cap = raw_cap;
  b->raw = raw;
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
  b->epoch = m.epoch;
  b->index = m.index;
  b->seq = m.seq;
  b->ntensors = (int)m.ntensors;
  memcpy(b->t, m.t, sizeof m.t);
  b->raw_size = m.raw_size;
  b->wire_bytes = FRAME_HEADER_SIZE + (size_t)h->length;
  b->raw = m.data;
  if (m.codec != BFEED_CODEC_NONE && (rc = batch_decompress(c, &m, b, why, cap)) < 0) {
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
