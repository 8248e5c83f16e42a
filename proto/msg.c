/* msg.c -- message payload encoding and decoding (see msg.h, PROTOCOL.md). */
#include "msg.h"

#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "names.h"
#include "opts.h"
#include "wire.h"

/* OPEN's own tag; the options' tags are opts.def's. */
enum { OPEN_DATASET = 1 };

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
static int finish_read(const rbuf *r, int allow_trailing, char *err, size_t errlen, const char *what) {
  if (r->failed || (!allow_trailing && rbuf_left(r) != 0)) {
    return names_fail(err, errlen, BFEED_EPROTO, what);
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

int msg_hello_decode(const void *p, size_t n, msg_hello *m, char *err, size_t errlen) {
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
    if (rc < 0) return names_fail(err, errlen, BFEED_EPROTO, "malformed HELLO extension");
    if (it.tag == HELLO_EXT_TOKEN && tlv_str(&it, m->token, sizeof m->token) < 0)
      return names_fail(err, errlen, BFEED_EPROTO, "HELLO token is longer than 255 bytes or holds a NUL");
    if (it.tag != HELLO_EXT_TOKEN && (it.tag & TLV_CRITICAL))
      return names_fail(err, errlen, BFEED_EPROTO, "HELLO carries a critical extension this peer does not know");
  }
  return finish_read(&r, 0, err, errlen, "malformed HELLO");
}

void msg_hello_ok_encode(wbuf *w, const msg_hello_ok *m) {
  wbuf_u32(w, m->version);
  wbuf_u32(w, m->max_frame);
  put_name(w, m->server);
}

int msg_hello_ok_decode(const void *p, size_t n, msg_hello_ok *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->version = rbuf_u32(&r);
  m->max_frame = rbuf_u32(&r);
  if (get_name(&r, m->server, sizeof m->server) < 0) r.failed = 1;
  return finish_read(&r, 1, err, errlen, "malformed HELLO_OK");
}

void msg_opts_defaults(bfeed_stream_opts *o) { opts_defaults(o); }

void msg_open_encode(wbuf *w, const msg_open *m) {
  tlv_put_str(w, (uint16_t)(TLV_CRITICAL | OPEN_DATASET), m->dataset);
  opts_encode(w, &m->opts);
}

int msg_open_decode(const void *p, size_t n, msg_open *m, char *err, size_t errlen) {
  rbuf r;
  tlv_item it;
  int rc, have_dataset = 0;
  memset(m, 0, sizeof *m);
  msg_opts_defaults(&m->opts);
  rbuf_init(&r, p, n);
  while ((rc = tlv_next(&r, &it)) == 1) {
    if ((it.tag & ~TLV_CRITICAL) == OPEN_DATASET) {
      have_dataset = 1;
      rc = tlv_str(&it, m->dataset, sizeof m->dataset) < 0 ? BFEED_EPROTO : 1;
    } else {
      rc = opts_decode_item(&it, &m->opts);
    }
    if (rc == BFEED_EINVAL) {
      return names_fail(err, errlen, rc, "OPEN has an option this daemon does not support (upgrade bfeedd)");
    }
    if (rc < 0) {
      return names_fail(err, errlen, BFEED_EPROTO, "OPEN has an option with a malformed value");
    }
  }
  if (rc < 0) {
    return names_fail(err, errlen, BFEED_EPROTO, "OPEN has a truncated option");
  }
  if (!have_dataset || !m->dataset[0]) {
    return names_fail(err, errlen, BFEED_EINVAL, "OPEN names no dataset");
  }
  return 0;
}

int msg_opts_check(const bfeed_stream_opts *o, char *err, size_t errlen) { return opts_check(o, err, errlen); }

void msg_open_ok_encode(wbuf *w, const msg_open_ok *m) {
  wbuf_u64(w, m->samples);
  wbuf_u64(w, m->batches_per_epoch);
  wbuf_u32(w, m->classes);
  wbuf_u64(w, m->fingerprint);
  wbuf_u32(w, m->features);
}

int msg_open_ok_decode(const void *p, size_t n, msg_open_ok *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->samples = rbuf_u64(&r);
  m->batches_per_epoch = rbuf_u64(&r);
  m->classes = rbuf_u32(&r);
  /* The fingerprint came later: a daemon that predates it sends 20 bytes. */
  int later = rbuf_left(&r) >= 8;
  m->fingerprint = later ? rbuf_u64(&r) : 0;
  m->features = later && rbuf_left(&r) >= 4 ? rbuf_u32(&r) : 0; /* later still: after the fingerprint */
  return finish_read(&r, 1, err, errlen, "malformed OPEN_OK");
}

void msg_request_encode(wbuf *w, const msg_request *m) {
  wbuf_u32(w, m->count);
  for (uint32_t i = 0; i < m->count && i < MSG_MAX_REQUEST; i++) {
    wbuf_u64(w, m->b[i].epoch);
    wbuf_u64(w, m->b[i].index);
  }
}

int msg_request_decode(const void *p, size_t n, msg_request *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->count = rbuf_u32(&r);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "REQUEST truncated");
  if (m->count < 1 || m->count > MSG_MAX_REQUEST) return names_fail(err, errlen, BFEED_EPROTO, "REQUEST asks for 0 or over 1024 batches");
  for (uint32_t i = 0; i < m->count; i++) {
    m->b[i].epoch = rbuf_u64(&r);
    m->b[i].index = rbuf_u64(&r);
  }
  return finish_read(&r, 0, err, errlen, "malformed REQUEST (its length is not 4 + 16 x count)");
}

void msg_u64_encode(wbuf *w, uint64_t v) { wbuf_u64(w, v); }

int msg_u64_decode(const void *p, size_t n, uint64_t *v, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  *v = rbuf_u64(&r);
  return finish_read(&r, 1, err, errlen, "malformed counter message");
}

void msg_error_encode(wbuf *w, int32_t code, const char *message) {
  size_t n = strnlen(message, MSG_ERROR_MAX - 1);
  wbuf_u32(w, (uint32_t)code);
  wbuf_u16(w, (uint16_t)n);
  wbuf_bytes(w, message, n);
}

int msg_error_decode(const void *p, size_t n, msg_error *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->code = (int32_t)rbuf_u32(&r);
  if (get_name(&r, m->message, sizeof m->message) < 0) r.failed = 1;
  if (m->code >= 0) r.failed = 1; /* an error frame must carry an error */
  return finish_read(&r, 1, err, errlen, "malformed ERROR");
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
                     char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  *count = 0;
  uint32_t k = rbuf_u32(&r);
  if (k > MSG_MAX_COUNTERS) {
    return names_fail(err, errlen, BFEED_ETOOBIG, "STATS has too many counters");
  }
  *count = 0;
  for (uint32_t i = 0; i < k && !r.failed; i++) {
    msg_counter tmp;
    if (get_short_name(&r, tmp.name) < 0) r.failed = 1;
    tmp.value = rbuf_u64(&r);
    if (!r.failed && *count < max) c[(*count)++] = tmp;
  }
  return finish_read(&r, 0, err, errlen, "malformed STATS");
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
static int batch_decode_table(const void *p, size_t n, uint64_t raw_limit, msg_batch *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  batch_prefix_read(&r, m);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "BATCH header truncated");
  if (m->ntensors > MSG_MAX_TENSORS) return names_fail(err, errlen, BFEED_EPROTO, "BATCH has too many tensors");
  if (!codec_get(m->codec)) return names_fail(err, errlen, BFEED_EPROTO, "BATCH uses an unknown codec");
  if (m->raw_size > raw_limit) return names_fail(err, errlen, BFEED_ETOOBIG, "BATCH raw size exceeds the limit");
  for (uint32_t i = 0; i < m->ntensors; i++) {
    msg_tensor *t = &m->t[i];
    if (get_short_name(&r, t->name) < 0) return names_fail(err, errlen, BFEED_EPROTO, "BATCH tensor name malformed");
    t->dtype = rbuf_u8(&r);
    t->ndim = rbuf_u8(&r);
    if (t->ndim > BFEED_MAX_DIMS) return names_fail(err, errlen, BFEED_EPROTO, "BATCH tensor has too many dimensions");
    for (int d = 0; d < t->ndim; d++) t->shape[d] = rbuf_u64(&r);
    t->offset = rbuf_u64(&r);
    t->nbytes = rbuf_u64(&r);
    if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "BATCH tensor table truncated");
    if (tensor_check(t, m->raw_size) < 0)
      return names_fail(err, errlen, BFEED_EPROTO, "BATCH tensor shape, dtype or extent inconsistent");
  }
  m->data_size = rbuf_left(&r);
  m->data = r.p + r.off;
  return 0;
}

int msg_batch_decode(const void *p, size_t n, uint64_t raw_limit, msg_batch *m, char *err, size_t errlen) {
  int rc = batch_decode_table(p, n, raw_limit, m, err, errlen);
  if (rc < 0) return rc;
  /* Each codec's own form (PROTOCOL.md "Codecs"): uncompressed data is
   * exactly its plain size; compressed data is checked when it is
   * decompressed, to exactly that size. */
  const codec_info *c = codec_get(m->codec);
  if (c->u8 && msg_batch_u8_size(m) == 0)
    return names_fail(err, errlen, BFEED_EPROTO, "BATCH codec u8 needs a first tensor `image`, bf16 [B,3,H,W] or [B,H,W,3] at offset 0");
  if (!c->comp && m->data_size != codec_plain_size(m))
    return names_fail(err, errlen, BFEED_EPROTO,
                      c->u8 ? "BATCH u8 data size differs from what its tensors need"
                            : "BATCH data size differs from its raw size");
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

int msg_shm_ring_decode(const void *p, size_t n, msg_shm_ring *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->slots = rbuf_u32(&r);
  m->slot_size = rbuf_u64(&r);
  m->size = rbuf_u64(&r);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "SHM_RING truncated");
  if (m->slots < 1 || m->slots > MSG_SHM_MAX_SLOTS) return names_fail(err, errlen, BFEED_EPROTO, "SHM_RING slot count out of range");
  if (m->slot_size == 0 || m->slot_size % 64 || m->slot_size > FRAME_MAX_PAYLOAD)
    return names_fail(err, errlen, BFEED_EPROTO, "SHM_RING slot size out of range or not a multiple of 64");
  if (m->size != m->slots * m->slot_size) return names_fail(err, errlen, BFEED_EPROTO, "SHM_RING size is not slots x slot_size");
  return 0;
}

size_t msg_batch_shm_size(const msg_batch *m) { return msg_batch_head_size(m) + 4; }

void msg_batch_shm_encode(wbuf *w, const msg_batch *m, uint32_t slot) {
  msg_batch_encode_head(w, m);
  wbuf_u32(w, slot);
}

int msg_batch_shm_decode(const void *p, size_t n, const msg_shm_ring *ring, msg_batch *m, uint32_t *slot,
                         char *err, size_t errlen) {
  if (n < MSG_BATCH_PREFIX + 4) return names_fail(err, errlen, BFEED_EPROTO, "BATCH_SHM truncated");
  int rc = batch_decode_table(p, n - 4, ring->slot_size, m, err, errlen);
  if (rc == BFEED_ETOOBIG) return names_fail(err, errlen, BFEED_EPROTO, "BATCH_SHM raw size exceeds the slot size");
  if (rc < 0) return rc;
  if (!codec_is_plain(m->codec)) return names_fail(err, errlen, BFEED_EPROTO, "BATCH_SHM carries a codec other than none");
  if (m->data_size != 0) return names_fail(err, errlen, BFEED_EPROTO, "BATCH_SHM has bytes between its tensor table and its slot");
  *slot = wire_get32((const uint8_t *)p + n - 4);
  if (*slot >= ring->slots) return names_fail(err, errlen, BFEED_EPROTO, "BATCH_SHM slot outside the ring");
  m->data = NULL;
  return 0;
}

void msg_ack_encode(wbuf *w, const msg_ack *m) {
  wbuf_u64(w, m->consumed);
  if (!m->nreleased) return; /* the plain ACK */
  wbuf_u32(w, m->nreleased);
  for (uint32_t i = 0; i < m->nreleased; i++) wbuf_u64(w, m->released[i]);
}

int msg_ack_decode(const void *p, size_t n, msg_ack *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->consumed = rbuf_u64(&r);
  m->nreleased = n == 8 ? 0 : rbuf_u32(&r);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "ACK truncated");
  if (n > 8 && (m->nreleased == 0 || m->nreleased > MSG_ACK_MAX_RELEASED))
    return names_fail(err, errlen, BFEED_EPROTO, "ACK's released count out of range");
  if (rbuf_left(&r) != 8 * (size_t)m->nreleased) return names_fail(err, errlen, BFEED_EPROTO, "ACK's released list has the wrong length");
  for (uint32_t i = 0; i < m->nreleased; i++) m->released[i] = rbuf_u64(&r);
  return 0;
}

void msg_timing_encode(wbuf *w, const msg_timing *m) {
  const uint64_t v[] = {m->batches,     m->wait_us,       m->step_us,   m->wait_p50_us,
                        m->wait_p99_us, m->first_wait_us, m->expand_us, m->flags};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) wbuf_u64(w, v[i]);
}

int msg_timing_decode(const void *p, size_t n, msg_timing *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  uint64_t *v[] = {&m->batches,     &m->wait_us,       &m->step_us,  &m->wait_p50_us,
                   &m->wait_p99_us, &m->first_wait_us, &m->expand_us};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) *v[i] = rbuf_u64(&r);
  /* Flags only when whole: a client that predates them sends 56 bytes,
   * and a field cut short reads as none (as OPEN_OK's later fields). */
  m->flags = !r.failed && rbuf_left(&r) >= 8 ? rbuf_u64(&r) : 0;
  /* A later client may add fields: what follows is not ours to judge. */
  return finish_read(&r, 1, err, errlen, "TIMING truncated");
}
