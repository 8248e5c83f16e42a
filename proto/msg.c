/* msg.c -- message payload encoding and decoding (see msg.h, PROTOCOL.md). */
#include "msg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "names.h"
#include "wire.h"

/* OPEN option tags. All current options change the bytes served, so all are
 * critical: a daemon that does not know one must refuse, not ignore it. */
enum {
  OPT_DATASET = 1,
  OPT_BATCH = 2,
  OPT_SIZE = 3,
  OPT_MODE = 4,
  OPT_LAYOUT = 5,
  OPT_NORMALIZE = 6,
  OPT_MEAN = 7,
  OPT_STD = 8,
  OPT_SEED = 9,
  OPT_EPOCH = 10,
  OPT_BATCH_INDEX = 11,
  OPT_SHARD_INDEX = 12,
  OPT_SHARD_COUNT = 13,
  OPT_CODEC = 14,
  OPT_CODEC_LEVEL = 15,
  OPT_WINDOW = 16,
  OPT_SHUFFLE = 17,
  OPT_KEEP_PARTIAL = 18,
  OPT_EPOCHS = 19,
  /* Text options: a block of their own, from 32. */
  OPT_POOL = 32,
  OPT_MAX_LEN = 33,
  OPT_FIXED_LEN = 34,
  OPT_BUCKET = 35,
  /* Subsets of the batches (several daemons behind one stream). */
  OPT_SELECT = 20,
  OPT_SELECT_MOD = 21,
  OPT_SELECT_REM = 22,
  /* Not critical: how the batches travel, never what they hold; a daemon
   * that does not know it serves over the socket (the fallback). */
  OPT_TRANSPORT = 23,
};
#define C(tag) ((uint16_t)(TLV_CRITICAL | (tag)))

size_t msg_begin(wbuf *w) {
  size_t at = w->len;
  wbuf_grow(w, FRAME_HEADER_SIZE);
  return at;
}

int msg_finish(wbuf *w, size_t at, int type, uint32_t stream) {
  if (w->failed) return BFEED_ENOMEM;
  size_t len = w->len - at - FRAME_HEADER_SIZE;
  if (len > FRAME_MAX_PAYLOAD) return BFEED_ETOOBIG;
  frame_header h;
  frame_header_init(&h, type, stream, w->data + at + FRAME_HEADER_SIZE, (uint32_t)len);
  frame_header_encode(&h, w->data + at);
  return 0;
}

/* Decoders share this ending: a payload that was short, or had bytes left
 * over where none may be, is malformed. */
static int finish_read(const rbuf *r, int allow_trailing, const char **why, const char *what) {
  if (r->failed || (!allow_trailing && rbuf_left(r) != 0)) {
    *why = what;
    return BFEED_EPROTO;
  }
  return 0;
}

static void put_name(wbuf *w, const char *s) {
  size_t n = strnlen(s, MSG_NAME_MAX - 1);
  wbuf_u16(w, (uint16_t)n);
  wbuf_bytes(w, s, n);
}

static int get_name(rbuf *r, char *dst, size_t cap) {
  uint16_t n = rbuf_u16(r);
  const uint8_t *p = rbuf_bytes(r, n);
  if (!p || n >= cap || memchr(p, 0, n)) return -1;
  memcpy(dst, p, n);
  dst[n] = 0;
  return 0;
}

/* HELLO extension tags (TLV items after the agent). */
enum { HELLO_EXT_TOKEN = 1 };

void msg_hello_encode(wbuf *w, const msg_hello *m) {
  wbuf_u32(w, m->min_version);
  wbuf_u32(w, m->max_version);
  put_name(w, m->agent);
  if (m->token[0]) tlv_put(w, HELLO_EXT_TOKEN, m->token, (uint32_t)strnlen(m->token, MSG_TOKEN_MAX - 1));
}

int msg_hello_decode(const void *p, size_t n, msg_hello *m, const char **why) {
  rbuf r;
  tlv_item it;
  int rc;
  rbuf_init(&r, p, n);
  m->min_version = rbuf_u32(&r);
  m->max_version = rbuf_u32(&r);
  m->token[0] = 0;
  if (get_name(&r, m->agent, sizeof m->agent) < 0) r.failed = 1;
  /* Extensions: a peer skips the ones it does not know unless they are
   * critical, so clients may add some without breaking older daemons. */
  while (!r.failed && (rc = tlv_next(&r, &it)) != 0) {
    if (rc < 0) return *why = "malformed HELLO extension", BFEED_EPROTO;
    if (it.tag == HELLO_EXT_TOKEN && tlv_str(&it, m->token, sizeof m->token) < 0)
      return *why = "HELLO token is longer than 255 bytes or holds a NUL", BFEED_EPROTO;
    if (it.tag != HELLO_EXT_TOKEN && (it.tag & TLV_CRITICAL))
      return *why = "HELLO carries a critical extension this peer does not know", BFEED_EPROTO;
  }
  return finish_read(&r, 0, why, "malformed HELLO");
}

void msg_hello_ok_encode(wbuf *w, const msg_hello_ok *m) {
  wbuf_u32(w, m->version);
  wbuf_u32(w, m->max_frame);
  put_name(w, m->server);
}

int msg_hello_ok_decode(const void *p, size_t n, msg_hello_ok *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->version = rbuf_u32(&r);
  m->max_frame = rbuf_u32(&r);
  if (get_name(&r, m->server, sizeof m->server) < 0) r.failed = 1;
  return finish_read(&r, 1, why, "malformed HELLO_OK");
}

void msg_opts_defaults(bfeed_stream_opts *o) {
  static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
  static const float imagenet_std[3] = {0.229f, 0.224f, 0.225f};
  /* Zero first, padding included (callers compare whole structs): seed,
   * epoch, batch_index, shard_index, keep_partial, epochs, max_len,
   * fixed_len, bucket and select_rem default to 0. */
  memset(o, 0, sizeof *o);
  o->batch = 64, o->size = 224, o->mode = BFEED_MODE_TRAIN, o->layout = BFEED_LAYOUT_NCHW;
  o->normalize = BFEED_NORM_IMAGENET;
  memcpy(o->mean, imagenet_mean, sizeof o->mean);
  memcpy(o->std, imagenet_std, sizeof o->std);
  o->shard_count = 1, o->codec = BFEED_CODEC_NONE, o->codec_level = 3, o->window = 4;
  o->shuffle = BFEED_SHUFFLE_AUTO, o->pool = BFEED_POOL_NONE, o->select = BFEED_SELECT_ALL, o->select_mod = 1;
  o->transport = BFEED_TRANSPORT_SOCKET;
}

void msg_open_encode(wbuf *w, const msg_open *m) {
  const bfeed_stream_opts *o = &m->opts;
  tlv_put_str(w, C(OPT_DATASET), m->dataset);
  tlv_put_u32(w, C(OPT_BATCH), o->batch);
  tlv_put_u32(w, C(OPT_SIZE), o->size);
  tlv_put_u8(w, C(OPT_MODE), (uint8_t)o->mode);
  tlv_put_u8(w, C(OPT_LAYOUT), (uint8_t)o->layout);
  tlv_put_u8(w, C(OPT_NORMALIZE), (uint8_t)o->normalize);
  tlv_put_f32s(w, C(OPT_MEAN), o->mean, 3);
  tlv_put_f32s(w, C(OPT_STD), o->std, 3);
  tlv_put_u64(w, C(OPT_SEED), o->seed);
  tlv_put_u64(w, C(OPT_EPOCH), o->epoch);
  tlv_put_u64(w, C(OPT_BATCH_INDEX), o->batch_index);
  tlv_put_u32(w, C(OPT_SHARD_INDEX), o->shard_index);
  tlv_put_u32(w, C(OPT_SHARD_COUNT), o->shard_count);
  tlv_put_u8(w, C(OPT_CODEC), (uint8_t)o->codec);
  tlv_put_u32(w, C(OPT_CODEC_LEVEL), (uint32_t)o->codec_level);
  tlv_put_u32(w, C(OPT_WINDOW), o->window);
  tlv_put_u8(w, C(OPT_SHUFFLE), (uint8_t)o->shuffle);
  tlv_put_u8(w, C(OPT_KEEP_PARTIAL), (uint8_t)(o->keep_partial != 0));
  tlv_put_u64(w, C(OPT_EPOCHS), o->epochs);
  /* The text options are sent only when set, so that a client of this
   * version still opens image streams on daemons that predate them. */
  if (o->pool != BFEED_POOL_NONE) tlv_put_u8(w, C(OPT_POOL), (uint8_t)o->pool);
  if (o->max_len) tlv_put_u32(w, C(OPT_MAX_LEN), o->max_len);
  if (o->fixed_len) tlv_put_u8(w, C(OPT_FIXED_LEN), 1);
  if (o->bucket) tlv_put_u32(w, C(OPT_BUCKET), o->bucket);
  /* Sent only when not the default, like the text options. */
  if (o->select != BFEED_SELECT_ALL) tlv_put_u8(w, C(OPT_SELECT), (uint8_t)o->select);
  if (o->select_mod != 1) tlv_put_u64(w, C(OPT_SELECT_MOD), o->select_mod);
  if (o->select_rem) tlv_put_u64(w, C(OPT_SELECT_REM), o->select_rem);
  if (o->transport != BFEED_TRANSPORT_SOCKET) tlv_put_u8(w, OPT_TRANSPORT, (uint8_t)o->transport);
}

static int open_item(const tlv_item *it, msg_open *m, int *have_dataset) {
  bfeed_stream_opts *o = &m->opts;
  uint8_t b;
  uint32_t u;
  int rc;
  switch (it->tag & ~TLV_CRITICAL) {
    case OPT_DATASET: *have_dataset = 1; return tlv_str(it, m->dataset, sizeof m->dataset);
    case OPT_BATCH: return tlv_u32(it, &o->batch);
    case OPT_SIZE: return tlv_u32(it, &o->size);
    case OPT_MODE: rc = tlv_u8(it, &b); o->mode = (bfeed_mode)b; return rc;
    case OPT_LAYOUT: rc = tlv_u8(it, &b); o->layout = (bfeed_layout)b; return rc;
    case OPT_NORMALIZE: rc = tlv_u8(it, &b); o->normalize = (bfeed_norm)b; return rc;
    case OPT_MEAN: return tlv_f32s(it, o->mean, 3);
    case OPT_STD: return tlv_f32s(it, o->std, 3);
    case OPT_SEED: return tlv_u64(it, &o->seed);
    case OPT_EPOCH: return tlv_u64(it, &o->epoch);
    case OPT_BATCH_INDEX: return tlv_u64(it, &o->batch_index);
    case OPT_SHARD_INDEX: return tlv_u32(it, &o->shard_index);
    case OPT_SHARD_COUNT: return tlv_u32(it, &o->shard_count);
    case OPT_CODEC: rc = tlv_u8(it, &b); o->codec = (bfeed_codec)b; return rc;
    case OPT_CODEC_LEVEL: rc = tlv_u32(it, &u); o->codec_level = (int32_t)u; return rc;
    case OPT_WINDOW: return tlv_u32(it, &o->window);
    case OPT_SHUFFLE: rc = tlv_u8(it, &b); o->shuffle = (bfeed_shuffle)b; return rc;
    case OPT_KEEP_PARTIAL: rc = tlv_u8(it, &b); o->keep_partial = b != 0; return rc;
    case OPT_EPOCHS: return tlv_u64(it, &o->epochs);
    case OPT_POOL: rc = tlv_u8(it, &b); o->pool = (bfeed_pool)b; return rc;
    case OPT_MAX_LEN: return tlv_u32(it, &o->max_len);
    case OPT_FIXED_LEN: rc = tlv_u8(it, &b); o->fixed_len = b != 0; return rc;
    case OPT_BUCKET: return tlv_u32(it, &o->bucket);
    case OPT_SELECT: rc = tlv_u8(it, &b); o->select = (bfeed_select)b; return rc;
    case OPT_SELECT_MOD: return tlv_u64(it, &o->select_mod);
    case OPT_SELECT_REM: return tlv_u64(it, &o->select_rem);
    case OPT_TRANSPORT: rc = tlv_u8(it, &b); o->transport = (bfeed_transport)b; return rc;
    default: return (it->tag & TLV_CRITICAL) ? BFEED_EINVAL : 0;
  }
}

int msg_open_decode(const void *p, size_t n, msg_open *m, const char **why) {
  rbuf r;
  tlv_item it;
  int rc, have_dataset = 0;
  memset(m, 0, sizeof *m);
  msg_opts_defaults(&m->opts);
  rbuf_init(&r, p, n);
  while ((rc = tlv_next(&r, &it)) == 1) {
    rc = open_item(&it, m, &have_dataset);
    if (rc == BFEED_EINVAL) {
      *why = "OPEN has an option this daemon does not support (upgrade bfeedd)";
      return rc;
    }
    if (rc < 0) {
      *why = "OPEN has an option with a malformed value";
      return BFEED_EPROTO;
    }
  }
  if (rc < 0) {
    *why = "OPEN has a truncated option";
    return BFEED_EPROTO;
  }
  if (!have_dataset || !m->dataset[0]) {
    *why = "OPEN names no dataset";
    return BFEED_EINVAL;
  }
  return 0;
}

int msg_opts_check(const bfeed_stream_opts *o, char *why, size_t cap) {
#define BAD(...) return snprintf(why, cap, __VA_ARGS__), BFEED_EINVAL
  if (o->batch < 1 || o->batch > 65536) BAD("batch %u out of range 1..65536", o->batch);
  if (o->size < 8 || o->size > 4096) BAD("size %u out of range 8..4096", o->size);
  if (o->mode != BFEED_MODE_TRAIN && o->mode != BFEED_MODE_EVAL) BAD("unknown mode %d", (int)o->mode);
  if (o->layout != BFEED_LAYOUT_NCHW && o->layout != BFEED_LAYOUT_NHWC)
    BAD("unknown layout %d", (int)o->layout);
  if ((unsigned)o->normalize > BFEED_NORM_CUSTOM) BAD("unknown normalization %d", (int)o->normalize);
  for (int c = 0; c < 3; c++) {
    if (!isfinite(o->mean[c])) BAD("mean[%d] is not finite", c);
    if (!isfinite(o->std[c]) || o->std[c] == 0.0f) BAD("std[%d] must be finite and non-zero", c);
  }
  if (o->shard_count < 1) BAD("shard count must be at least 1");
  if (o->shard_index >= o->shard_count)
    BAD("shard index %u must be below the shard count %u", o->shard_index, o->shard_count);
  if ((unsigned)o->codec > BFEED_CODEC_U8_ZSTD) BAD("unknown codec %d", (int)o->codec);
  if (msg_codec_zstd(o->codec) && (o->codec_level < 1 || o->codec_level > 19))
    BAD("zstd level %d out of range 1..19", o->codec_level);
  if (o->window < 1 || o->window > 64) BAD("window %u out of range 1..64", o->window);
  if ((unsigned)o->shuffle > BFEED_SHUFFLE_OFF) BAD("unknown shuffle setting %d", (int)o->shuffle);
  if ((unsigned)o->pool > BFEED_POOL_MEAN) BAD("unknown pooling %d", (int)o->pool);
  if (o->max_len > MSG_MAX_LEN_LIMIT) BAD("max_len %u out of range 0..%u", o->max_len, MSG_MAX_LEN_LIMIT);
  if (o->bucket > 65536) BAD("bucket %u out of range 0..65536", o->bucket);
  if ((unsigned)o->select > BFEED_SELECT_ON_DEMAND) BAD("unknown select %d", (int)o->select);
  if ((unsigned)o->transport > BFEED_TRANSPORT_SHM) BAD("unknown transport %d", (int)o->transport);
  if (o->select_mod < 1) BAD("select_mod must be at least 1");
  if (o->select_rem >= o->select_mod)
    BAD("select_rem %llu must be below select_mod %llu", (unsigned long long)o->select_rem,
        (unsigned long long)o->select_mod);
  /* Whether a batch fits one frame depends on the dataset's kind: the
   * daemon checks that when it opens the stream (batch_spec_check). */
#undef BAD
  return 0;
}

void msg_open_ok_encode(wbuf *w, const msg_open_ok *m) {
  wbuf_u64(w, m->samples);
  wbuf_u64(w, m->batches_per_epoch);
  wbuf_u32(w, m->classes);
  wbuf_u64(w, m->fingerprint);
}

int msg_open_ok_decode(const void *p, size_t n, msg_open_ok *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->samples = rbuf_u64(&r);
  m->batches_per_epoch = rbuf_u64(&r);
  m->classes = rbuf_u32(&r);
  /* The fingerprint came later: a daemon that predates it sends 20 bytes. */
  m->fingerprint = rbuf_left(&r) >= 8 ? rbuf_u64(&r) : 0;
  return finish_read(&r, 1, why, "malformed OPEN_OK");
}

void msg_request_encode(wbuf *w, const msg_request *m) {
  wbuf_u32(w, m->count);
  for (uint32_t i = 0; i < m->count && i < MSG_MAX_REQUEST; i++) {
    wbuf_u64(w, m->b[i].epoch);
    wbuf_u64(w, m->b[i].index);
  }
}

int msg_request_decode(const void *p, size_t n, msg_request *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->count = rbuf_u32(&r);
  if (r.failed) return *why = "REQUEST truncated", BFEED_EPROTO;
  if (m->count < 1 || m->count > MSG_MAX_REQUEST) return *why = "REQUEST asks for 0 or over 1024 batches", BFEED_EPROTO;
  for (uint32_t i = 0; i < m->count; i++) {
    m->b[i].epoch = rbuf_u64(&r);
    m->b[i].index = rbuf_u64(&r);
  }
  return finish_read(&r, 0, why, "malformed REQUEST (its length is not 4 + 16 x count)");
}

void msg_u64_encode(wbuf *w, uint64_t v) { wbuf_u64(w, v); }

int msg_u64_decode(const void *p, size_t n, uint64_t *v, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  *v = rbuf_u64(&r);
  return finish_read(&r, 1, why, "malformed counter message");
}

void msg_error_encode(wbuf *w, int32_t code, const char *message) {
  size_t n = strnlen(message, MSG_ERROR_MAX - 1);
  wbuf_u32(w, (uint32_t)code);
  wbuf_u16(w, (uint16_t)n);
  wbuf_bytes(w, message, n);
}

int msg_error_decode(const void *p, size_t n, msg_error *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->code = (int32_t)rbuf_u32(&r);
  if (get_name(&r, m->message, sizeof m->message) < 0) r.failed = 1;
  if (m->code >= 0) r.failed = 1; /* an error frame must carry an error */
  return finish_read(&r, 1, why, "malformed ERROR");
}

void msg_stats_encode(wbuf *w, const msg_counter *c, size_t n) {
  wbuf_u32(w, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    size_t len = strnlen(c[i].name, MSG_TENSOR_NAME_MAX - 1);
    wbuf_u8(w, (uint8_t)len);
    wbuf_bytes(w, c[i].name, len);
    wbuf_u64(w, c[i].value);
  }
}

/* A short name (tensor, counter): u8 length then bytes. */
static int get_short_name(rbuf *r, char *dst) {
  uint8_t n = rbuf_u8(r);
  const uint8_t *p = rbuf_bytes(r, n);
  if (!p || n == 0 || n >= MSG_TENSOR_NAME_MAX || memchr(p, 0, n)) return -1;
  memcpy(dst, p, n);
  dst[n] = 0;
  return 0;
}

int msg_stats_decode(const void *p, size_t n, msg_counter *c, size_t max, size_t *count,
                     const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  *count = 0;
  uint32_t k = rbuf_u32(&r);
  if (k > MSG_MAX_COUNTERS) {
    *why = "STATS has too many counters";
    return BFEED_ETOOBIG;
  }
  *count = 0;
  for (uint32_t i = 0; i < k && !r.failed; i++) {
    msg_counter tmp;
    if (get_short_name(&r, tmp.name) < 0) r.failed = 1;
    tmp.value = rbuf_u64(&r);
    if (!r.failed && *count < max) c[(*count)++] = tmp;
  }
  return finish_read(&r, 0, why, "malformed STATS");
}

void msg_batch_encode_head(wbuf *w, const msg_batch *m) {
  wbuf_u64(w, m->epoch);
  wbuf_u64(w, m->index);
  wbuf_u64(w, m->seq);
  wbuf_u8(w, m->codec);
  wbuf_u8(w, (uint8_t)m->ntensors);
  wbuf_u16(w, 0); /* reserved */
  wbuf_u64(w, m->raw_size);
  for (uint32_t i = 0; i < m->ntensors; i++) {
    const msg_tensor *t = &m->t[i];
    size_t len = strnlen(t->name, MSG_TENSOR_NAME_MAX - 1);
    wbuf_u8(w, (uint8_t)len);
    wbuf_bytes(w, t->name, len);
    wbuf_u8(w, t->dtype);
    wbuf_u8(w, t->ndim);
    for (int d = 0; d < t->ndim; d++) wbuf_u64(w, t->shape[d]);
    wbuf_u64(w, t->offset);
    wbuf_u64(w, t->nbytes);
  }
}

size_t msg_batch_head_size(const msg_batch *m) {
  size_t n = MSG_BATCH_PREFIX;
  for (uint32_t i = 0; i < m->ntensors; i++)
    n += 1 + strnlen(m->t[i].name, MSG_TENSOR_NAME_MAX - 1) + 2 + 8 * (size_t)m->t[i].ndim + 16;
  return n;
}

/* A tensor descriptor is sane when its shape gives exactly nbytes, it lies
 * inside the raw data and, unless empty, starts on a 64-byte boundary
 * (bfeed.h promises aligned tensors), and each dimension fits the int64_t
 * of bfeed_tensor; all products are overflow-checked. */
static int tensor_check(const msg_tensor *t, uint64_t raw_size) {
  size_t es = names_dtype_size(t->dtype);
  if (es == 0 || t->ndim > BFEED_MAX_DIMS || (t->nbytes != 0 && t->offset % 64 != 0)) return -1;
  uint64_t count = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] > INT64_MAX) return -1;
    if (t->shape[d] != 0 && count > UINT64_MAX / t->shape[d]) return -1;
    count *= t->shape[d];
  }
  if (count > UINT64_MAX / es || count * es != t->nbytes) return -1;
  if (t->offset > raw_size || t->nbytes > raw_size - t->offset) return -1;
  return 0;
}

/* The MSG_BATCH_PREFIX bytes that open a BATCH payload. */
static void batch_prefix_read(rbuf *r, msg_batch *m) {
  m->epoch = rbuf_u64(r);
  m->index = rbuf_u64(r);
  m->seq = rbuf_u64(r);
  m->codec = rbuf_u8(r);
  m->ntensors = rbuf_u8(r);
  (void)rbuf_u16(r); /* reserved */
  m->raw_size = rbuf_u64(r);
}

void msg_batch_peek(const uint8_t prefix[MSG_BATCH_PREFIX], uint8_t *codec, uint64_t *raw_size) {
  rbuf r;
  msg_batch m;
  rbuf_init(&r, prefix, MSG_BATCH_PREFIX);
  batch_prefix_read(&r, &m);
  *codec = m.codec;
  *raw_size = m.raw_size;
}

/* BATCH's fixed fields and tensor table, checked; m->data is what follows. */
static int batch_decode_table(const void *p, size_t n, uint64_t raw_limit, msg_batch *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  batch_prefix_read(&r, m);
  if (r.failed) return *why = "BATCH header truncated", BFEED_EPROTO;
  if (m->ntensors > MSG_MAX_TENSORS) return *why = "BATCH has too many tensors", BFEED_EPROTO;
  if (m->codec > BFEED_CODEC_U8_ZSTD) return *why = "BATCH uses an unknown codec", BFEED_EPROTO;
  if (m->raw_size > raw_limit) return *why = "BATCH raw size exceeds the limit", BFEED_ETOOBIG;
  for (uint32_t i = 0; i < m->ntensors; i++) {
    msg_tensor *t = &m->t[i];
    if (get_short_name(&r, t->name) < 0) return *why = "BATCH tensor name malformed", BFEED_EPROTO;
    t->dtype = rbuf_u8(&r);
    t->ndim = rbuf_u8(&r);
    if (t->ndim > BFEED_MAX_DIMS) return *why = "BATCH tensor has too many dimensions", BFEED_EPROTO;
    for (int d = 0; d < t->ndim; d++) t->shape[d] = rbuf_u64(&r);
    t->offset = rbuf_u64(&r);
    t->nbytes = rbuf_u64(&r);
    if (r.failed) return *why = "BATCH tensor table truncated", BFEED_EPROTO;
    if (tensor_check(t, m->raw_size) < 0)
      return *why = "BATCH tensor shape, dtype or extent inconsistent", BFEED_EPROTO;
  }
  m->data_size = rbuf_left(&r);
  m->data = r.p + r.off;
  return 0;
}

int msg_batch_decode(const void *p, size_t n, uint64_t raw_limit, msg_batch *m, const char **why) {
  int rc = batch_decode_table(p, n, raw_limit, m, why);
  if (rc < 0) return rc;
  if (m->codec == BFEED_CODEC_NONE && m->data_size != m->raw_size)
    return *why = "BATCH data size differs from its raw size", BFEED_EPROTO;
  if (msg_codec_u8(m->codec) && msg_batch_u8_size(m) == 0)
    return *why = "BATCH codec u8 needs a first tensor `image`, bf16 [B,3,H,W] or [B,H,W,3] at offset 0", BFEED_EPROTO;
  if (m->codec == BFEED_CODEC_U8 && m->data_size != msg_batch_u8_size(m))
    return *why = "BATCH u8 data size differs from what its tensors need", BFEED_EPROTO;
  return 0;
}

uint64_t msg_batch_u8_size(const msg_batch *m) {
  const msg_tensor *t = &m->t[0];
  if (m->ntensors < 1 || strcmp(t->name, "image") != 0 || t->dtype != BFEED_DTYPE_BF16 || t->ndim != 4 ||
      t->offset != 0 || (t->shape[1] != 3 && t->shape[3] != 3))
    return 0;
  return MSG_U8_HEAD + t->nbytes / 2 + (m->raw_size - t->nbytes);
}

/* Shared memory (PROTOCOL.md "Shared memory"). */
void msg_shm_ring_encode(wbuf *w, const msg_shm_ring *m) {
  wbuf_u32(w, m->slots);
  wbuf_u64(w, m->slot_size);
  wbuf_u64(w, m->size);
}

int msg_shm_ring_decode(const void *p, size_t n, msg_shm_ring *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->slots = rbuf_u32(&r);
  m->slot_size = rbuf_u64(&r);
  m->size = rbuf_u64(&r);
  if (r.failed) return *why = "SHM_RING truncated", BFEED_EPROTO;
  if (m->slots < 1 || m->slots > MSG_SHM_MAX_SLOTS) return *why = "SHM_RING slot count out of range", BFEED_EPROTO;
  if (m->slot_size == 0 || m->slot_size % 64 || m->slot_size > FRAME_MAX_PAYLOAD)
    return *why = "SHM_RING slot size out of range or not a multiple of 64", BFEED_EPROTO;
  if (m->size != m->slots * m->slot_size) return *why = "SHM_RING size is not slots x slot_size", BFEED_EPROTO;
  return 0;
}

size_t msg_batch_shm_size(const msg_batch *m) { return msg_batch_head_size(m) + 4; }

void msg_batch_shm_encode(wbuf *w, const msg_batch *m, uint32_t slot) {
  msg_batch_encode_head(w, m);
  wbuf_u32(w, slot);
}

int msg_batch_shm_decode(const void *p, size_t n, const msg_shm_ring *ring, msg_batch *m, uint32_t *slot,
                         const char **why) {
  if (n < MSG_BATCH_PREFIX + 4) return *why = "BATCH_SHM truncated", BFEED_EPROTO;
  int rc = batch_decode_table(p, n - 4, ring->slot_size, m, why);
  if (rc < 0) return rc == BFEED_ETOOBIG ? (*why = "BATCH_SHM raw size exceeds the slot size", BFEED_EPROTO) : rc;
  if (m->codec != BFEED_CODEC_NONE) return *why = "BATCH_SHM carries a codec other than none", BFEED_EPROTO;
  if (m->data_size != 0) return *why = "BATCH_SHM has bytes between its tensor table and its slot", BFEED_EPROTO;
  *slot = wire_get32((const uint8_t *)p + n - 4);
  if (*slot >= ring->slots) return *why = "BATCH_SHM slot outside the ring", BFEED_EPROTO;
  m->data = NULL;
  return 0;
}

void msg_ack_encode(wbuf *w, const msg_ack *m) {
  wbuf_u64(w, m->consumed);
  if (!m->nreleased) return; /* the plain ACK */
  wbuf_u32(w, m->nreleased);
  for (uint32_t i = 0; i < m->nreleased; i++) wbuf_u64(w, m->released[i]);
}

int msg_ack_decode(const void *p, size_t n, msg_ack *m, const char **why) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->consumed = rbuf_u64(&r);
  m->nreleased = n == 8 ? 0 : rbuf_u32(&r);
  if (r.failed) return *why = "ACK truncated", BFEED_EPROTO;
  if (n > 8 && (m->nreleased == 0 || m->nreleased > MSG_ACK_MAX_RELEASED))
    return *why = "ACK's released count out of range", BFEED_EPROTO;
  if (rbuf_left(&r) != 8 * (size_t)m->nreleased) return *why = "ACK's released list has the wrong length", BFEED_EPROTO;
  for (uint32_t i = 0; i < m->nreleased; i++) m->released[i] = rbuf_u64(&r);
  return 0;
}
