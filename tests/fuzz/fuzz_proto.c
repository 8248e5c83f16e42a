/*
 * fuzz_proto.c -- fuzz target for the wire format (proto/).
 *
 * Arbitrary bytes go to the frame header parser, to every message decoder,
 * to the TLV walker and to the address parser. A sanitizer catches reads
 * outside the input; beyond that the target checks what a correct codec
 * guarantees, and abort()s when a guarantee fails:
 *
 *   - a header that decodes re-encodes to the same 24 bytes, and a looser
 *     limit never refuses what a tighter one accepted;
 *   - a refusal comes with one of the documented codes and a reason;
 *   - a message that decodes re-encodes, through a complete frame, to bytes
 *     that decode to the same message;
 *   - an accepted BATCH really satisfies PROTOCOL.md's rules, re-checked in
 *     128-bit arithmetic so that a 64-bit wrap in the decoder shows up;
 *   - TLV items and BATCH data always lie inside the input;
 *   - the incremental frame reader (fuzz_freader.c) sees the same frames
 *     and the same first error however the input is cut.
 *
 * OPEN with the TLV walker (fuzz_open.c) and the frame reader are also
 * libFuzzer targets of their own, so that each grows a corpus of its own.
 *
 * Inputs of 24 bytes or more are read as a frame: the first 24 bytes are the
 * header, the rest is the payload every decoder sees. Shorter inputs are a
 * payload only. See README.md for running it.
 */
#include "fuzz_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "bfeed_types.h"
#include "names.h"
#include "frame.h"
#include "msg.h"
#include "tlv.h"

/* ------------------------------------------------------------------ */

static int fuzz_header(const uint8_t *data) {
  static const uint32_t limits[] = {0, 64, FRAME_MAX_CONTROL, FRAME_MAX_PAYLOAD, UINT32_MAX};
  int accepted_below = 0, ok_any = 0;
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
    frame_header h;
    char why[256] = "";
    int rc = frame_header_decode(data, limits[i], &h, why, sizeof why);
    if (rc < 0) {
      CHECK(!accepted_below);
      CHECK(rc == BFEED_EPROTO || rc == BFEED_EVERSION || rc == BFEED_ETOOBIG);
      CHECK(why[0] != 0);
      continue;
    }
    accepted_below = ok_any = 1;
    CHECK(rc == 0);
    CHECK(h.version == 1);
    CHECK(h.type >= 1 && h.type <= FRAME_TYPE_MAX_);
    CHECK(strcmp(frame_type_name(h.type), "?") != 0);
    CHECK(h.length <= limits[i] && h.length <= FRAME_MAX_PAYLOAD);
    uint8_t again[FRAME_HEADER_SIZE];
    frame_header_encode(&h, again);
    CHECK(memcmp(again, data, FRAME_HEADER_SIZE) == 0);
  }
  return ok_any ? FUZZ_HEADER : 0;
}

typedef union fuzz_msg {
  msg_hello hello;
  msg_hello_ok hello_ok;
  msg_open open;
  msg_open_ok open_ok;
  msg_request request;
  uint64_t u64;
  msg_error error;
  msg_timing timing;
  msg_classes_req classes_req;
} fuzz_msg;

typedef struct fuzz_codec {
  int result, frame;  /* FUZZ_* bit; FRAME_* type */
  int code_a, code_b; /* the refusals this decoder documents */
  size_t fixed;       /* a fixed-size body: accepted iff at least that long, re-encoded to the same bytes
                         (fields added since, which the input lacks, as zeros: OPEN_OK's fingerprint) */
  size_t later[4];    /* where the fields added since end (0: no more): OPEN_OK's fingerprint, features */
  int shrinks;        /* re-encoding may only drop trailing bytes */
  int (*decode)(const uint8_t *p, size_t n, fuzz_msg *m, char *why, size_t whylen);
  void (*encode)(wbuf *w, const fuzz_msg *m);
  void (*accepted)(const fuzz_msg *m); /* what a decoded message guarantees; NULL: nothing more */
  void (*same)(const fuzz_msg *a, const fuzz_msg *b);
} fuzz_codec;

/* Each decoder behind one signature; the encoders that take the message. */
#define FUZZ_DEFINE_DECODE(msg)                                                                       \
  static int fuzz_decode_##msg(const uint8_t *p, size_t n, fuzz_msg *m, char *why, size_t whylen) { \
    return msg_##msg##_decode(p, n, &m->msg, why, whylen);                                          \
  }
#define FUZZ_DEFINE_ENCODE(msg) \
  static void fuzz_encode_##msg(wbuf *w, const fuzz_msg *m) { msg_##msg##_encode(w, &m->msg); }
FUZZ_DEFINE_DECODE(hello)
FUZZ_DEFINE_DECODE(hello_ok)
FUZZ_DEFINE_DECODE(open)
FUZZ_DEFINE_DECODE(open_ok)
FUZZ_DEFINE_DECODE(request)
FUZZ_DEFINE_DECODE(u64)
FUZZ_DEFINE_DECODE(error)
FUZZ_DEFINE_DECODE(timing)
FUZZ_DEFINE_DECODE(classes_req)
FUZZ_DEFINE_ENCODE(hello)
FUZZ_DEFINE_ENCODE(hello_ok)
FUZZ_DEFINE_ENCODE(open)
FUZZ_DEFINE_ENCODE(open_ok)
FUZZ_DEFINE_ENCODE(request)
FUZZ_DEFINE_ENCODE(timing)
FUZZ_DEFINE_ENCODE(classes_req)
static void fuzz_encode_u64(wbuf *w, const fuzz_msg *m) { msg_u64_encode(w, m->u64); }
static void fuzz_encode_error(wbuf *w, const fuzz_msg *m) { msg_error_encode(w, m->error.code, m->error.message); }

static void fuzz_accepted_hello(const fuzz_msg *m) {
  CHECK(strlen(m->hello.agent) < sizeof m->hello.agent && strlen(m->hello.token) < sizeof m->hello.token);
}

static void fuzz_accepted_open(const fuzz_msg *m) {
  CHECK(m->open.dataset[0] != 0 && strlen(m->open.dataset) < sizeof m->open.dataset);
  char reason[128];
  int rc = msg_opts_check(&m->open.opts, reason, sizeof reason);
  CHECK(rc == 0 || (rc == BFEED_EINVAL && reason[0] != 0));
}

static void fuzz_accepted_error(const fuzz_msg *m) { CHECK(m->error.code < 0); }

static void fuzz_same_hello(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->hello.min_version == b->hello.min_version && a->hello.max_version == b->hello.max_version);
  CHECK(strcmp(a->hello.agent, b->hello.agent) == 0 && strcmp(a->hello.token, b->hello.token) == 0);
}

static void fuzz_same_hello_ok(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->hello_ok.version == b->hello_ok.version && a->hello_ok.max_frame == b->hello_ok.max_frame);
  CHECK(strcmp(a->hello_ok.server, b->hello_ok.server) == 0);
}

/* keep_partial is a flag: any non-zero byte means yes, and the encoder
 * sends 1. */
static void fuzz_same_open(const fuzz_msg *am, const fuzz_msg *bm) {
  const bfeed_stream_opts *a = &am->open.opts, *b = &bm->open.opts;
  CHECK(strcmp(am->open.dataset, bm->open.dataset) == 0);
  CHECK(a->batch == b->batch && a->size == b->size && a->mode == b->mode && a->layout == b->layout &&
        a->normalize == b->normalize && memcmp(a->mean, b->mean, sizeof a->mean) == 0 &&
        memcmp(a->std, b->std, sizeof a->std) == 0 && a->seed == b->seed && a->epoch == b->epoch &&
        a->batch_index == b->batch_index && a->shard_index == b->shard_index &&
        a->shard_count == b->shard_count && a->codec == b->codec && a->codec_level == b->codec_level &&
        a->window == b->window && a->shuffle == b->shuffle && !a->keep_partial == !b->keep_partial &&
        a->epochs == b->epochs);
  CHECK(a->select == b->select && a->select_mod == b->select_mod && a->select_rem == b->select_rem);
}

static void fuzz_same_open_ok(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->open_ok.samples == b->open_ok.samples &&
        a->open_ok.batches_per_epoch == b->open_ok.batches_per_epoch && a->open_ok.classes == b->open_ok.classes &&
        a->open_ok.fingerprint == b->open_ok.fingerprint);
}

static void fuzz_accepted_request(const fuzz_msg *m) {
  CHECK(m->request.count >= 1 && m->request.count <= MSG_MAX_REQUEST);
}

static void fuzz_same_request(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->request.count == b->request.count);
  CHECK(memcmp(a->request.b, b->request.b, a->request.count * sizeof a->request.b[0]) == 0);
}

static void fuzz_same_timing(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(memcmp(&a->timing, &b->timing, sizeof a->timing) == 0);
}

static void fuzz_same_classes_req(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->classes_req.first == b->classes_req.first);
}

static void fuzz_same_u64(const fuzz_msg *a, const fuzz_msg *b) { CHECK(a->u64 == b->u64); }

static void fuzz_same_error(const fuzz_msg *a, const fuzz_msg *b) {
  CHECK(a->error.code == b->error.code && strcmp(a->error.message, b->error.message) == 0);
}

static const fuzz_codec fuzz_codecs[] = {
    {FUZZ_HELLO, FRAME_HELLO, BFEED_EPROTO, BFEED_EPROTO, 0, {0}, 1, fuzz_decode_hello, fuzz_encode_hello,
     fuzz_accepted_hello, fuzz_same_hello},
    {FUZZ_HELLO_OK, FRAME_HELLO_OK, BFEED_EPROTO, BFEED_EPROTO, 0, {0}, 1, fuzz_decode_hello_ok, fuzz_encode_hello_ok,
     NULL, fuzz_same_hello_ok},
    {FUZZ_OPEN, FRAME_OPEN, BFEED_EPROTO, BFEED_EINVAL, 0, {0}, 0, fuzz_decode_open, fuzz_encode_open,
     fuzz_accepted_open, fuzz_same_open},
    {FUZZ_OPEN_OK, FRAME_OPEN_OK, BFEED_EPROTO, BFEED_EPROTO, 20, {28, 32}, 0, fuzz_decode_open_ok, fuzz_encode_open_ok,
     NULL, fuzz_same_open_ok},
    {FUZZ_REQUEST, FRAME_REQUEST, BFEED_EPROTO, BFEED_EPROTO, 0, {0}, 0, fuzz_decode_request, fuzz_encode_request,
     fuzz_accepted_request, fuzz_same_request},
    {FUZZ_U64, FRAME_ACK, BFEED_EPROTO, BFEED_EPROTO, 8, {0}, 0, fuzz_decode_u64, fuzz_encode_u64, NULL, fuzz_same_u64},
    /* TIMING: seven u64, then the flags where whole (else 0); a later
     * client's fields after them are dropped */
    {FUZZ_TIMING, FRAME_TIMING, BFEED_EPROTO, BFEED_EPROTO, MSG_TIMING_SIZE, {MSG_TIMING_FLAGS_SIZE}, 0, fuzz_decode_timing,
     fuzz_encode_timing, NULL, fuzz_same_timing},
    {FUZZ_ERROR, FRAME_ERROR, BFEED_EPROTO, BFEED_EPROTO, 0, {0}, 0, fuzz_decode_error, fuzz_encode_error,
     fuzz_accepted_error, fuzz_same_error},
    /* CLASSES_REQ: u32 first; a later client's fields after it are dropped */
    {FUZZ_CLASSES_REQ, FRAME_CLASSES_REQ, BFEED_EPROTO, BFEED_EPROTO, 4, {0}, 1, fuzz_decode_classes_req,
     fuzz_encode_classes_req, NULL, fuzz_same_classes_req},
};

static int fuzz_round_trip(const fuzz_codec *c, const uint8_t *p, size_t n) {
  fuzz_msg a, b;
  char why[256] = "";
  int rc = c->decode(p, n, &a, why, sizeof why);
  if (c->fixed) CHECK((rc == 0) == (n >= c->fixed));
  if (rc < 0) return check_refusal(rc, why, c->code_a, c->code_b), 0;
  if (c->accepted) c->accepted(&a);
  wbuf w = frame_start();
  c->encode(&w, &a);
  payload q = as_frame(&w, c->frame);
  if (c->fixed) {
    /* Short of the later fields, the input re-encodes with them zero:
     * the same bytes up to the last field it holds whole. */
    size_t same = c->fixed;
    for (int k = 0; k < 4 && c->later[k]; k++)
      if (c->later[k] <= n && c->later[k] <= q.n) same = c->later[k];
    CHECK(q.n >= c->fixed && memcmp(q.p, p, same) == 0);
    for (size_t i = same; i < q.n; i++) CHECK(q.p[i] == 0);
  }
  if (c->shrinks) CHECK(q.n <= n); /* only trailing bytes may have been dropped */
  CHECK(c->decode(q.p, q.n, &b, why, sizeof why) == 0);
  c->same(&a, &b);
  wbuf_free(&w);
  return c->result;
}

static int fuzz_stats(const uint8_t *p, size_t n) {
  msg_counter a[MSG_MAX_COUNTERS], b[MSG_MAX_COUNTERS], few[2];
  size_t na = 0, nb = 0, nfew = 0;
  char why[256] = "", why_few[256] = "";
  int rc = msg_stats_decode(p, n, a, MSG_MAX_COUNTERS, &na, why, sizeof why);
  /* How many slots the caller has must not change what is valid. */
  int rc_few = msg_stats_decode(p, n, few, 2, &nfew, why_few, sizeof why_few);
  CHECK(rc == rc_few);
  if (rc < 0) return check_refusal(rc, why, BFEED_EPROTO, BFEED_ETOOBIG), 0;
  CHECK(na <= MSG_MAX_COUNTERS && nfew == (na < 2 ? na : 2));
  for (size_t i = 0; i < nfew; i++)
    CHECK(strcmp(few[i].name, a[i].name) == 0 && few[i].value == a[i].value);
  for (size_t i = 0; i < na; i++) CHECK(a[i].name[0] != 0 && strlen(a[i].name) < sizeof a[i].name);
  wbuf w = frame_start();
  msg_stats_encode(&w, a, na);
  payload q = as_frame(&w, FRAME_STATS);
  CHECK(q.n == n && memcmp(q.p, p, n) == 0); /* no trailing bytes are allowed */
  CHECK(msg_stats_decode(q.p, q.n, b, MSG_MAX_COUNTERS, &nb, why, sizeof why) == 0);
  CHECK(nb == na);
  for (size_t i = 0; i < na; i++)
    CHECK(strcmp(a[i].name, b[i].name) == 0 && a[i].value == b[i].value);
  wbuf_free(&w);
  return FUZZ_STATS;
}

/* A decoded CLASSES page's names as C strings (the decoder let no NUL
 * through); the caller frees them with fuzz_classes_free. */
static char **fuzz_classes_names(const msg_classes *m) {
  char **v = calloc(m->count ? m->count : 1, sizeof *v);
  size_t off = 0, len;
  CHECK(v != NULL);
  for (uint32_t i = 0; i < m->count; i++) {
    const char *s = msg_classes_name(m, &off, &len);
    CHECK(off <= m->names_len && memchr(s, 0, len) == NULL);
    CHECK((v[i] = strndup(s, len)) != NULL);
  }
  CHECK(off == m->names_len);
  return v;
}

static void fuzz_classes_free(char **v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* CLASSES: an accepted page names no class past its total and moves a
 * client on; it re-encodes byte for byte with room for all of it, and
 * with a byte less the page holds a prefix of its names (the one cut, if
 * any, a prefix of its own), still a page that decodes. */
static int fuzz_classes(const uint8_t *p, size_t n) {
  msg_classes a, b;
  char why[256] = "";
  int rc = msg_classes_decode(p, n, &a, why, sizeof why);
  if (rc < 0) return check_refusal(rc, why, BFEED_EPROTO, BFEED_EPROTO), 0;
  CHECK(a.first <= a.total && a.count <= a.total - a.first && (a.count > 0 || a.first == a.total));
  char **names = fuzz_classes_names(&a);
  for (size_t room = n; room + 1 >= n && room >= MSG_CLASSES_HEAD + (a.count ? 2u : 0u); room--) {
    wbuf w = frame_start();
    uint32_t count = msg_classes_encode(&w, a.total, a.first, (const char *const *)names, a.count, room);
    payload q = as_frame(&w, FRAME_CLASSES);
    CHECK(q.n <= room && (count > 0 || a.count == 0) && count <= a.count);
    if (room == n) CHECK(count == a.count && q.n == n && memcmp(q.p, p, n) == 0);
    CHECK(msg_classes_decode(q.p, q.n, &b, why, sizeof why) == 0);
    CHECK(b.total == a.total && b.first == a.first && b.count == count);
    char **again = fuzz_classes_names(&b);
    for (uint32_t i = 0; i < count; i++)
      CHECK(strncmp(again[i], names[i], strlen(again[i])) == 0 && (i + 1 == count || !strcmp(again[i], names[i])));
    fuzz_classes_free(again, count);
    wbuf_free(&w);
  }
  fuzz_classes_free(names, a.count);
  return FUZZ_CLASSES;
}

typedef unsigned __int128 u128;

/* PROTOCOL.md's rules for an accepted batch, in arithmetic that cannot
 * wrap: a product above 2^64 is kept as 2^64 + 1, which no nbytes equals. */
static void check_batch_rules(const msg_batch *m, const uint8_t *p, size_t n, uint64_t raw_limit) {
  const u128 too_big = ((u128)1 << 64) + 1;
  CHECK(m->ntensors <= MSG_MAX_TENSORS);
  int u8 = m->codec == BFEED_CODEC_U8 || m->codec == BFEED_CODEC_U8_ZSTD || m->codec == BFEED_CODEC_U8_LZ4;
  CHECK(u8 || m->codec == BFEED_CODEC_NONE || m->codec == BFEED_CODEC_ZSTD || m->codec == BFEED_CODEC_LZ4);
  CHECK(m->raw_size <= raw_limit);
  CHECK(m->data >= p && m->data_size <= n && m->data + m->data_size == p + n);
  if (m->codec == BFEED_CODEC_NONE) CHECK(m->data_size == m->raw_size);
  if (u8) {
    /* "Codec u8": the first tensor is `image`, bf16 [B,3,H,W] or [B,H,W,3] at 0. */
    const msg_tensor *im = &m->t[0];
    CHECK(m->ntensors >= 1 && strcmp(im->name, "image") == 0 && im->dtype == BFEED_DTYPE_BF16);
    CHECK(im->ndim == 4 && im->offset == 0 && (im->shape[1] == 3 || im->shape[3] == 3));
    if (m->codec == BFEED_CODEC_U8)
      CHECK((u128)m->data_size == (u128)1540 + im->nbytes / 2 + (m->raw_size - im->nbytes));
  }
  for (uint32_t i = 0; i < m->ntensors; i++) {
    const msg_tensor *t = &m->t[i];
    size_t len = strlen(t->name);
    CHECK(len >= 1 && len < MSG_TENSOR_NAME_MAX);
    CHECK(t->ndim <= BFEED_MAX_DIMS);
    size_t es = names_dtype_size(t->dtype);
    CHECK(es != 0);
    u128 count = 1;
    for (int d = 0; d < t->ndim; d++) {
      count *= t->shape[d];
      if (count > too_big) count = too_big;
    }
    CHECK(count * es == t->nbytes);
    CHECK((u128)t->offset + t->nbytes <= m->raw_size);
  }
}

static void same_batch(const msg_batch *a, const msg_batch *b) {
  CHECK(a->epoch == b->epoch && a->index == b->index && a->seq == b->seq);
  CHECK(a->codec == b->codec && a->ntensors == b->ntensors && a->raw_size == b->raw_size);
  for (uint32_t i = 0; i < a->ntensors; i++) {
    const msg_tensor *s = &a->t[i], *t = &b->t[i];
    CHECK(strcmp(s->name, t->name) == 0 && s->dtype == t->dtype && s->ndim == t->ndim);
    CHECK(memcmp(s->shape, t->shape, s->ndim * sizeof s->shape[0]) == 0);
    CHECK(s->offset == t->offset && s->nbytes == t->nbytes);
  }
  CHECK(a->data_size == b->data_size);
  CHECK(a->data_size == 0 || memcmp(a->data, b->data, a->data_size) == 0);
}

static int fuzz_batch_limit(const uint8_t *p, size_t n, uint64_t raw_limit) {
  msg_batch a, b;
  char why[256] = "";
  int rc = msg_batch_decode(p, n, raw_limit, &a, why, sizeof why);
  if (rc < 0) return check_refusal(rc, why, BFEED_EPROTO, BFEED_ETOOBIG), 0;
  check_batch_rules(&a, p, n, raw_limit);
  wbuf w = frame_start();
  msg_batch_encode_head(&w, &a);
  wbuf_bytes(&w, a.data, a.data_size);
  payload q = as_frame(&w, FRAME_BATCH);
  CHECK(q.n == n);
  CHECK(msg_batch_decode(q.p, q.n, raw_limit, &b, why, sizeof why) == 0);
  same_batch(&a, &b);
  wbuf_free(&w);
  return FUZZ_BATCH;
}

static int fuzz_batch(const uint8_t *p, size_t n) {
  int loose = fuzz_batch_limit(p, n, UINT64_MAX);
  int tight = fuzz_batch_limit(p, n, n);
  CHECK(loose || !tight); /* a lower limit never admits more */
  return loose;
}

static int fuzz_addr(const uint8_t *p, size_t n) {
  char s[1024], why[256];
  size_t len = n < sizeof s - 1 ? n : sizeof s - 1;
  memcpy(s, p, len);
  s[len] = 0;
  addr_spec a;
  why[0] = 0;
  int rc = addr_parse(s, &a, why, sizeof why);
  if (rc < 0) {
    CHECK(rc == BFEED_EINVAL && why[0] != 0);
    return 0;
  }
  CHECK(rc == 0);
  if (a.kind == ADDR_UNIX) {
    CHECK(strncmp(s, "unix:", 5) == 0 && strcmp(a.path, s + 5) == 0);
    CHECK(a.path[0] != 0 && strlen(a.path) < sizeof a.path);
  } else {
    CHECK(a.kind == ADDR_TCP);
    CHECK(a.host[0] != 0 && strlen(a.host) < sizeof a.host);
    CHECK(strstr(s, a.host) != NULL);
  }
  return FUZZ_ADDR;
}

/* The shared-memory messages: what a decoder accepts can never point a
 * client outside its ring (slot, extents), and the lengths add up. */
static void fuzz_shm(const uint8_t *p, size_t n) {
  char why[256] = "";
  msg_shm_ring r;
  if (msg_shm_ring_decode(p, n, &r, why, sizeof why) == 0)
    CHECK(r.slots >= 1 && r.slots <= MSG_SHM_MAX_SLOTS && r.slot_size % 64 == 0 && r.size == r.slots * r.slot_size);
  const msg_shm_ring ring = {.slots = 3, .slot_size = 4096, .size = 3 * 4096};
  msg_batch m;
  uint32_t slot;
  if (msg_batch_shm_decode(p, n, &ring, &m, &slot, why, sizeof why) == 0) {
    CHECK(slot < ring.slots && m.raw_size <= ring.slot_size && m.codec == BFEED_CODEC_NONE);
    for (uint32_t i = 0; i < m.ntensors; i++) CHECK(m.t[i].offset + m.t[i].nbytes <= m.raw_size);
  }
  msg_ack a;
  if (msg_ack_decode(p, n, &a, why, sizeof why) == 0)
    CHECK(a.nreleased <= MSG_ACK_MAX_RELEASED && n == 8 + (a.nreleased ? 4 + 8 * (size_t)a.nreleased : 0));
}

int fuzz_proto_one(const uint8_t *data, size_t size) {
  int accepted = 0;
  const uint8_t *p = data;
  size_t n = size;
  if (size >= FRAME_HEADER_SIZE) {
    accepted |= fuzz_header(data);
    p += FRAME_HEADER_SIZE;
    n -= FRAME_HEADER_SIZE;
  }
  for (size_t i = 0; i < sizeof fuzz_codecs / sizeof fuzz_codecs[0]; i++)
    accepted |= fuzz_round_trip(&fuzz_codecs[i], p, n);
  accepted |= fuzz_stats(p, n);
  accepted |= fuzz_classes(p, n);
  accepted |= fuzz_batch(p, n);
  fuzz_shm(p, n);
  accepted |= fuzz_open_tlv(p, n);
  accepted |= fuzz_addr(data, size);
  accepted |= fuzz_freader_one(data, size);
  return accepted;
}

/* OPEN alone, for fuzz_open. */
int fuzz_proto_open(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < sizeof fuzz_codecs / sizeof fuzz_codecs[0]; i++)
    if (fuzz_codecs[i].frame == FRAME_OPEN) return fuzz_round_trip(&fuzz_codecs[i], p, n);
  return 0;
}

#ifdef FUZZ_MAIN_PROTO
FUZZ_UTIL_TARGET(fuzz_proto_one)
#endif
