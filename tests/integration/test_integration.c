/*
 * test_integration.c -- the real daemon over real sockets.
 *
 * Each test starts its own bfeedd child (itest_util.c) on a Unix socket,
 * and a TCP port where it matters, serving two small datasets made once
 * for the suite: "demo" (make_demo's stripes, 47 JPEGs in 8 classes; odd,
 * so shards and partial batches have something to drop or keep) and "bad"
 * (48 good JPEGs plus a garbage file and a truncated JPEG).
 *
 * The oracles are independent of the daemon: labels come from scanning the
 * folders here, normalisation is recomputed in float32 with a bf16 rounding
 * written here, and determinism is checked by comparing daemons with
 * different worker counts, codecs and start points byte for byte.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfeed.h"
#include "frame.h"
#include "itest_util.h"
#include "msg.h"
#include "wire.h"

#define NDAEMONS 2
#define STOP_MS 5000 /* "promptly": the daemon's own grace period is 2 s */

typedef struct suite {
  char root[128];
  char demo_dir[192], bad_dir[192];
  char demo_arg[224], bad_arg[224]; /* "NAME=DIR" for --dataset */
  itest_folder demo, bad;
  long garbage_idx, trunc_idx; /* the bad files' sample indices in "bad" */
  itest_daemon d[NDAEMONS];
} suite;

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  char err[512];
  if (!s || itest_tmpdir(s->root, sizeof s->root) < 0) return -1;
  snprintf(s->demo_dir, sizeof s->demo_dir, "%s/demo", s->root);
  snprintf(s->bad_dir, sizeof s->bad_dir, "%s/bad", s->root);
  snprintf(s->demo_arg, sizeof s->demo_arg, "demo=%s", s->demo_dir);
  snprintf(s->bad_arg, sizeof s->bad_arg, "bad=%s", s->bad_dir);
  if (itest_make_dataset(s->demo_dir, 6, err, sizeof err) < 0 ||
      itest_make_dataset(s->bad_dir, 6, err, sizeof err) < 0) {
    fprintf(stderr, "cannot make the datasets: %s\n", err);
    return -1;
  }
  char path[320], path2[320];
  snprintf(path, sizeof path, "%s/red_vertical/0005.jpg", s->demo_dir);
  if (unlink(path) < 0) return -1;

  /* Garbage in the middle of a class, and a real JPEG cut in half as the
   * very last sample, so that its replacement wraps to the epoch's start. */
  uint8_t junk[3000];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
  snprintf(path, sizeof path, "%s/blue_horizontal/0002_garbage.jpg", s->bad_dir);
  if (itest_write_file(path, junk, sizeof junk) < 0) return -1;
  size_t len;
  snprintf(path2, sizeof path2, "%s/green_vertical/0003.jpg", s->bad_dir);
  char *jpeg = itest_read_file(path2, &len);
  snprintf(path, sizeof path, "%s/red_vertical/zz_trunc.jpg", s->bad_dir);
  if (!jpeg || itest_write_file(path, jpeg, len / 2) < 0) return -1;
  free(jpeg);

  if (itest_folder_scan(s->demo_dir, &s->demo) < 0 || itest_folder_scan(s->bad_dir, &s->bad) < 0) return -1;
  s->garbage_idx = itest_folder_find(&s->bad, "blue_horizontal/0002_garbage.jpg");
  s->trunc_idx = itest_folder_find(&s->bad, "red_vertical/zz_trunc.jpg");
  if (s->demo.n != 47 || s->demo.nclasses != 8 || s->bad.n != 50 || s->garbage_idx < 0 ||
      s->trunc_idx != 49)
    return -1;
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  suite *s = *state;
  itest_folder_free(&s->demo);
  itest_folder_free(&s->bad);
  itest_rmtree(s->root);
  free(s);
  return 0;
}

/* A test that failed half-way leaves its daemons running: kill them. */
static int test_teardown(void **state) {
  suite *s = *state;
  for (int i = 0; i < NDAEMONS; i++) itest_daemon_kill(&s->d[i]);
  return 0;
}

static itest_daemon *start_daemon(suite *s, int slot, const char *name, int workers, int tcp) {
  itest_daemon_opts o = {.dir = s->root, .name = name, .workers = workers, .tcp = tcp,
                         .datasets = {s->demo_arg, s->bad_arg, NULL}};
  char err[1024];
  if (itest_daemon_start(&s->d[slot], &o, err, sizeof err) < 0) fail_msg("%s", err);
  return &s->d[slot];
}

static void stop_daemon(itest_daemon *d) {
  char err[1024];
  if (itest_daemon_stop(d, STOP_MS, err, sizeof err) < 0) fail_msg("%s", err);
}

#define OK(call, err)                                                                    \
  do {                                                                                   \
    int rc_ = (call);                                                                    \
    if (rc_ < 0) fail_msg("%s returned %d (%s): %s", #call, rc_, bfeed_strerror(rc_), (err).message); \
  } while (0)

static bfeed_client *connect_to(const char *addr) {
  bfeed_client *c;
  bfeed_error err;
  OK(bfeed_connect(addr, &c, &err), err);
  return c;
}

static bfeed_stream *open_stream(bfeed_client *c, const char *ds, const bfeed_stream_opts *o) {
  bfeed_stream *st;
  bfeed_error err;
  OK(bfeed_stream_open(c, ds, o, &st, &err), err);
  return st;
}

static bfeed_batch *next_batch(bfeed_stream *st) {
  bfeed_batch *b;
  bfeed_error err;
  OK(bfeed_stream_next(st, &b, &err), err);
  return b;
}

/* A whole run; fails the test unless it ends as expected (EEOF for a run
 * with epochs set, or max batches). */
static void fetch_run(const char *addr, const char *ds, const bfeed_stream_opts *o, size_t max, itest_run *run) {
  bfeed_error err;
  int rc = itest_fetch(addr, ds, o, max, run, &err);
  int want = max ? 0 : BFEED_EEOF;
  if (rc != want) fail_msg("run on %s ended with %d (%s): %s", ds, rc, bfeed_strerror(rc), err.message);
}

static void assert_runs_equal(const itest_run *a, const itest_run *b) {
  long at = itest_run_diff(a, b);
  if (at >= 0)
    fail_msg("runs differ at batch %ld (lengths %zu and %zu)%s", at, a->n, b->n,
             (size_t)at < a->n && (size_t)at < b->n ? "" : ": one run is shorter");
}

/* The bf16 the daemon must produce for f: round to nearest even, written
 * here rather than taken from the library under test (no NaNs occur). */
static uint16_t ref_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t px(const bfeed_tensor *t, size_t i) { return wire_get16((const uint8_t *)t->data + 2 * i); }

/* ------------------------------------------------------------------ */
/* 1. Sockets, handshake, refusals                                     */

static void check_serves(const char *addr, size_t nsamples) {
  bfeed_client *c = connect_to(addr);
  assert_int_equal(bfeed_client_version(c), 1);
  assert_true(strncmp(bfeed_client_server(c), "bfeedd/", 7) == 0);
  bfeed_stream_opts o;
  itest_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  bfeed_stream *st = open_stream(c, "demo", &o);
  bfeed_stream_info info;
  bfeed_stream_get_info(st, &info);
  assert_int_equal(info.samples, nsamples);
  assert_int_equal(info.batches_per_epoch, nsamples / 8);
  assert_int_equal(info.classes, 8);
  bfeed_batch *b = next_batch(st);
  itest_rec r;
  assert_int_equal(itest_rec_from_batch(b, &r), 0);
  for (int i = 0; i < 8; i++) assert_int_equal(r.idx[i], i);
  itest_rec_free(&r);
  bfeed_batch_release(b);
  bfeed_stream_close(st);
  bfeed_close(c);
}

static void test_sockets_and_refusals(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "sockets", 1, 1);
  check_serves(d->unix_addr, s->demo.n);
  check_serves(d->tcp_addr, s->demo.n);

  bfeed_client *c = connect_to(d->tcp_addr);
  bfeed_stream_opts o;
  bfeed_stream *st;
  bfeed_error err;
  itest_opts(&o);
  assert_int_equal(bfeed_stream_open(c, "no_such_set", &o, &st, &err), BFEED_ENODATASET);
  assert_int_equal(err.code, BFEED_ENODATASET);
  assert_non_null(strstr(err.message, "no_such_set"));

  /* The library refuses bad options before sending them... */
  bfeed_stream_opts bad[3];
  for (int i = 0; i < 3; i++) itest_opts(&bad[i]);
  bad[0].batch = 0;
  bad[1].window = 0;
  bad[2].shard_index = 2, bad[2].shard_count = 2;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(bfeed_stream_open(c, "demo", &bad[i], &st, &err), BFEED_EINVAL);
    assert_int_equal(err.code, BFEED_EINVAL);
  }
  /* ...and a refused open leaves the connection usable. */
  st = open_stream(c, "demo", &o);
  bfeed_batch_release(next_batch(st));
  bfeed_stream_close(st);
  bfeed_close(c);

  /* The daemon refuses them too, per stream, when a client sends them. */
  int fd = itest_raw_connect(d->unix_addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_hello(fd), 0);
  uint32_t stream;
  int code;
  char msg[256];
  for (uint32_t i = 0; i < 3; i++) {
    assert_int_equal(itest_raw_open(fd, 10 + i, "demo", &bad[i]), 0);
    assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
    assert_int_equal(stream, 10 + i);
    assert_int_equal(code, BFEED_EINVAL);
  }
  assert_int_equal(itest_raw_open(fd, 20, "nope", &o), 0);
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(stream, 20);
  assert_int_equal(code, BFEED_ENODATASET);
  assert_non_null(strstr(msg, "nope"));
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_open(fd, 21, "demo", &o), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  assert_int_equal(h.stream, 21);
  free(p);
  close(fd);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 2. Tensors                                                          */

static void check_tensor(const bfeed_batch *b, int i, const char *name, bfeed_dtype dtype, int ndim,
                         const int64_t *shape) {
  bfeed_tensor t;
  assert_int_equal(bfeed_batch_tensor(b, i, &t), 0);
  assert_string_equal(t.name, name);
  assert_int_equal(t.dtype, dtype);
  assert_int_equal(t.ndim, ndim);
  size_t n = bfeed_dtype_size(dtype);
  for (int d = 0; d < ndim; d++) {
    assert_int_equal(t.shape[d], shape[d]);
    n *= (size_t)shape[d];
  }
  assert_int_equal(t.nbytes, n);
  assert_int_equal((uintptr_t)t.data % 64, 0);
}

static void test_tensors(void **state) {
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "tensors", 2, 0);
  bfeed_client *c = connect_to(d->unix_addr);
  bfeed_stream_opts o;
  itest_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  o.epochs = 1;
  o.normalize = BFEED_NORM_NONE;
  bfeed_stream *raw = open_stream(c, "demo", &o);
  o.layout = BFEED_LAYOUT_NHWC;
  bfeed_stream *nhwc = open_stream(c, "demo", &o);
  o.layout = BFEED_LAYOUT_NCHW;
  o.normalize = BFEED_NORM_IMAGENET;
  bfeed_stream *norm = open_stream(c, "demo", &o);

  const int64_t B = 8, S = 32;
  const int64_t nchw_shape[4] = {B, 3, S, S}, nhwc_shape[4] = {B, S, S, 3}, vec[1] = {B};
  for (int64_t k = 0; k < (int64_t)s->demo.n / B; k++) {
    bfeed_batch *a = next_batch(raw), *h = next_batch(nhwc), *n = next_batch(norm);
    assert_int_equal(bfeed_batch_ntensors(a), 3);
    check_tensor(a, 0, "image", BFEED_DTYPE_BF16, 4, nchw_shape);
    check_tensor(a, 1, "label", BFEED_DTYPE_I32, 1, vec);
    check_tensor(a, 2, "index", BFEED_DTYPE_I64, 1, vec);
    check_tensor(h, 0, "image", BFEED_DTYPE_BF16, 4, nhwc_shape);
    check_tensor(n, 0, "image", BFEED_DTYPE_BF16, 4, nchw_shape);
    assert_int_equal(bfeed_batch_epoch(a), 0);
    assert_int_equal(bfeed_batch_index(a), k);

    bfeed_tensor img, lab, ix, himg, nimg, t;
    bfeed_batch_find(a, "image", &img);
    bfeed_batch_find(a, "label", &lab);
    bfeed_batch_find(a, "index", &ix);
    bfeed_batch_find(h, "image", &himg);
    bfeed_batch_find(n, "image", &nimg);
    /* Eval without shuffling serves the dataset in order, and the labels
     * are the classes of those samples. */
    for (int64_t i = 0; i < B; i++) {
      int64_t idx = (int64_t)wire_get64((const uint8_t *)ix.data + 8 * i);
      assert_int_equal(idx, k * B + i);
      assert_int_equal((int32_t)wire_get32((const uint8_t *)lab.data + 4 * i), s->demo.labels[idx]);
    }
    for (int name = 1; name <= 2; name++) {
      bfeed_tensor x, y;
      const char *nm = name == 1 ? "label" : "index";
      bfeed_batch_find(a, nm, &x);
      bfeed_batch_find(h, nm, &t);
      bfeed_batch_find(n, nm, &y);
      assert_memory_equal(x.data, t.data, x.nbytes);
      assert_memory_equal(x.data, y.data, x.nbytes);
    }
    /* NONE: integers 0..255. NHWC: the same values transposed. IMAGENET:
     * (v/255 - mean)/std in float32, rounded to bf16. */
    float lo = 255, hi = 0;
    for (int64_t i = 0; i < B; i++)
      for (int64_t ch = 0; ch < 3; ch++)
        for (int64_t y = 0; y < S; y++)
          for (int64_t x = 0; x < S; x++) {
            size_t at = (size_t)(((i * 3 + ch) * S + y) * S + x);
            uint16_t v = px(&img, at);
            float f = bf16_value(v);
            if (!(f >= 0 && f <= 255 && f == (float)(int)f))
              fail_msg("sample %lld channel %lld (%lld,%lld): %g is not an integer 0..255", (long long)i,
                       (long long)ch, (long long)y, (long long)x, f);
            lo = f < lo ? f : lo;
            hi = f > hi ? f : hi;
            assert_int_equal(px(&himg, (size_t)(((i * S + y) * S + x) * 3 + ch)), v);
            float want = ((float)(int)f / 255.0f - mean[ch]) / sd[ch];
            if (px(&nimg, at) != ref_bf16(want))
              fail_msg("normalised value 0x%04x for v=%g channel %lld, expected 0x%04x", px(&nimg, at), f,
                       (long long)ch, ref_bf16(want));
          }
    assert_true(hi - lo > 50); /* real pictures, not a constant fill */
    bfeed_batch_release(a);
    bfeed_batch_release(h);
    bfeed_batch_release(n);
  }
  bfeed_stream_close(raw);
  bfeed_stream_close(nhwc);
  bfeed_stream_close(norm);
  bfeed_close(c);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 3. Determinism, resume, shards, partial batches, end of stream      */

/* Indices of epoch e in run (all batches of that epoch, in order). */
static size_t epoch_indices(const itest_run *run, uint64_t e, int64_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < run->n; i++)
    for (uint32_t j = 0; run->b[i].epoch == e && j < run->b[i].count; j++) {
      assert_true(n < cap);
      out[n++] = run->b[i].idx[j];
    }
  return n;
}

/* Every index below n at most once: no duplicates from the shuffle. */
static void assert_distinct(const int64_t *idx, size_t count, size_t n) {
  unsigned char *seen = calloc(n, 1);
  assert_non_null(seen);
  for (size_t i = 0; i < count; i++) {
    assert_true(idx[i] >= 0 && (size_t)idx[i] < n);
    if (seen[idx[i]]) fail_msg("index %lld served twice in one epoch", (long long)idx[i]);
    seen[idx[i]] = 1;
  }
  free(seen);
}

static void train_opts(bfeed_stream_opts *o, uint64_t seed, uint64_t epochs) {
  itest_opts(o);
  o->seed = seed;
  o->epochs = epochs;
}

static void test_same_bytes_any_daemon(void **state) {
  suite *s = *state;
  itest_daemon *d1 = start_daemon(s, 0, "det-w1", 1, 0), *d2 = start_daemon(s, 1, "det-w2", 2, 1);
  bfeed_stream_opts o;
  itest_run a = {0}, b = {0}, z = {0}, other = {0};
  train_opts(&o, 11, 2);
  fetch_run(d1->unix_addr, "demo", &o, 0, &a);
  fetch_run(d2->tcp_addr, "demo", &o, 0, &b);
  o.codec = BFEED_CODEC_ZSTD;
  o.codec_level = 5;
  fetch_run(d2->unix_addr, "demo", &o, 0, &z);
  assert_int_equal(a.n, 2 * (s->demo.n / 8));
  assert_runs_equal(&a, &b);
  assert_runs_equal(&a, &z);

  /* Shuffled: each epoch is a different order without repeats. */
  int64_t e0[64], e1[64], f0[64];
  size_t n0 = epoch_indices(&a, 0, e0, 64), n1 = epoch_indices(&a, 1, e1, 64);
  assert_int_equal(n0, 40);
  assert_int_equal(n1, 40);
  assert_distinct(e0, n0, s->demo.n);
  assert_distinct(e1, n1, s->demo.n);
  assert_memory_not_equal(e0, e1, n0 * sizeof e0[0]);

  /* Another seed, another order. */
  train_opts(&o, 12, 1);
  fetch_run(d1->unix_addr, "demo", &o, 0, &other);
  assert_int_equal(epoch_indices(&other, 0, f0, 64), 40);
  assert_memory_not_equal(e0, f0, n0 * sizeof e0[0]);

  itest_run_free(&a);
  itest_run_free(&b);
  itest_run_free(&z);
  itest_run_free(&other);
  stop_daemon(d1);
  stop_daemon(d2);
}

static void test_resume(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "resume", 2, 0);
  bfeed_stream_opts o;
  itest_run ref = {0}, r1 = {0}, r2 = {0};
  train_opts(&o, 5, 3);
  fetch_run(d->unix_addr, "demo", &o, 0, &ref);
  const size_t bpe = s->demo.n / 8;
  assert_int_equal(ref.n, 3 * bpe);

  /* (epoch 1, batch 2) with epochs=1: the rest of epoch 1. */
  train_opts(&o, 5, 1);
  o.epoch = 1;
  o.batch_index = 2;
  fetch_run(d->unix_addr, "demo", &o, 0, &r1);
  assert_int_equal(r1.n, bpe - 2);
  for (size_t i = 0; i < r1.n; i++) assert_true(itest_rec_equal(&r1.b[i], &ref.b[bpe + 2 + i]));

  /* (epoch 0, batch 3), unbounded: runs on across the epoch boundary. */
  train_opts(&o, 5, 0);
  o.batch_index = 3;
  fetch_run(d->unix_addr, "demo", &o, 6, &r2);
  for (size_t i = 0; i < r2.n; i++) assert_true(itest_rec_equal(&r2.b[i], &ref.b[3 + i]));

  itest_run_free(&ref);
  itest_run_free(&r1);
  itest_run_free(&r2);
  stop_daemon(d);
}

static void test_shards(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "shards", 2, 0);
  const size_t n = s->demo.n, per = n / 2;
  itest_run sh[2] = {{0}}, whole = {0};
  bfeed_stream_opts o;
  for (uint32_t k = 0; k < 2; k++) {
    train_opts(&o, 3, 2);
    o.keep_partial = 1;
    o.shard_index = k;
    o.shard_count = 2;
    fetch_run(d->unix_addr, "demo", &o, 0, &sh[k]);
  }
  for (uint64_t e = 0; e < 2; e++) {
    int64_t idx[2 * 64];
    size_t a = epoch_indices(&sh[0], e, idx, 64);
    size_t b = epoch_indices(&sh[1], e, idx + a, 64);
    assert_int_equal(a, per);
    assert_int_equal(b, per);
    /* Disjoint, no repeats, floor(n/2)*2 samples in all. */
    assert_distinct(idx, a + b, n);
  }

  /* One reader, keep_partial: each epoch serves every sample exactly once. */
  train_opts(&o, 3, 2);
  o.keep_partial = 1;
  fetch_run(d->unix_addr, "demo", &o, 0, &whole);
  for (uint64_t e = 0; e < 2; e++) {
    int64_t idx[64];
    size_t m = epoch_indices(&whole, e, idx, 64);
    assert_int_equal(m, n);
    assert_distinct(idx, m, n);
  }
  itest_run_free(&sh[0]);
  itest_run_free(&sh[1]);
  itest_run_free(&whole);
  stop_daemon(d);
}

static void test_partial_and_eof(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "partial", 1, 0);
  bfeed_client *c = connect_to(d->unix_addr);
  bfeed_stream_opts o;
  itest_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  o.epochs = 1;
  for (int keep = 0; keep <= 1; keep++) {
    o.keep_partial = keep;
    bfeed_stream *st = open_stream(c, "demo", &o);
    bfeed_stream_info info;
    bfeed_stream_get_info(st, &info);
    const uint64_t want_bpe = keep ? (s->demo.n + 7) / 8 : s->demo.n / 8;
    assert_int_equal(info.batches_per_epoch, want_bpe);
    for (uint64_t k = 0; k < want_bpe; k++) {
      bfeed_batch *b = next_batch(st);
      int64_t count = keep && k + 1 == want_bpe ? (int64_t)(s->demo.n % 8) : 8;
      const int64_t img[4] = {count, 3, 32, 32}, vec[1] = {count};
      check_tensor(b, 0, "image", BFEED_DTYPE_BF16, 4, img);
      check_tensor(b, 1, "label", BFEED_DTYPE_I32, 1, vec);
      check_tensor(b, 2, "index", BFEED_DTYPE_I64, 1, vec);
      bfeed_tensor ix;
      bfeed_batch_find(b, "index", &ix);
      for (int64_t i = 0; i < count; i++)
        assert_int_equal(wire_get64((const uint8_t *)ix.data + 8 * i), k * 8 + (uint64_t)i);
      bfeed_batch_release(b);
    }
    bfeed_batch *b;
    bfeed_error err;
    assert_int_equal(bfeed_stream_next(st, &b, &err), BFEED_EEOF);
    assert_null(b);
    assert_int_equal(bfeed_stream_next(st, &b, &err), BFEED_EEOF);
    bfeed_stream_close(st);
  }
  bfeed_close(c);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 4. Two clients at once                                              */

typedef struct fetch_job {
  const char *addr;
  bfeed_stream_opts o;
  itest_run run;
  int rc;
  bfeed_error err;
} fetch_job;

static void *fetch_thread(void *arg) {
  fetch_job *j = arg;
  j->rc = itest_fetch(j->addr, "demo", &j->o, 0, &j->run, &j->err);
  return NULL;
}

static void two_kinds(bfeed_stream_opts *x, bfeed_stream_opts *y) {
  train_opts(x, 21, 3);
  x->window = 6;
  itest_opts(y);
  y->mode = BFEED_MODE_EVAL;
  y->batch = 5;
  y->size = 48;
  y->layout = BFEED_LAYOUT_NHWC;
  y->normalize = BFEED_NORM_NONE;
  y->codec = BFEED_CODEC_ZSTD;
  y->window = 2;
  y->keep_partial = 1;
  y->epochs = 2;
}

static void test_two_clients(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "two", 2, 1);
  fetch_job j[2];
  itest_run ref[2] = {{0}};
  memset(j, 0, sizeof j);
  two_kinds(&j[0].o, &j[1].o);
  j[0].addr = d->unix_addr;
  j[1].addr = d->tcp_addr;
  for (int i = 0; i < 2; i++) fetch_run(d->unix_addr, "demo", &j[i].o, 0, &ref[i]);
  assert_int_equal(ref[0].n, 3 * (s->demo.n / 8));
  assert_int_equal(ref[1].n, 2 * ((s->demo.n + 4) / 5));

  /* Two clients in two threads. */
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, fetch_thread, &j[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    if (j[i].rc != BFEED_EEOF) fail_msg("client %d ended with %d: %s", i, j[i].rc, j[i].err.message);
    assert_runs_equal(&j[i].run, &ref[i]);
    itest_run_free(&j[i].run);
  }

  /* Two streams of one client, their nexts interleaved. */
  bfeed_client *c = connect_to(d->tcp_addr);
  bfeed_stream *st[2] = {open_stream(c, "demo", &j[0].o), open_stream(c, "demo", &j[1].o)};
  int rc[2] = {0, 0};
  bfeed_error err;
  while (rc[0] == 0 || rc[1] == 0)
    for (int i = 0; i < 2; i++)
      if (rc[i] == 0) rc[i] = itest_collect(st[i], j[i].run.n + 1, &j[i].run, &err);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(rc[i], BFEED_EEOF);
    assert_runs_equal(&j[i].run, &ref[i]);
    bfeed_stream_close(st[i]);
    itest_run_free(&j[i].run);
    itest_run_free(&ref[i]);
  }
  bfeed_close(c);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 5. Misbehaving clients                                              */

/* A frame header with its fields set by hand. */
static void put_header(uint8_t out[FRAME_HEADER_SIZE], uint32_t magic, int type, uint32_t stream,
                       uint32_t length, uint64_t checksum) {
  wire_put32(out, magic);
  out[4] = 1;
  out[5] = (uint8_t)type;
  wire_put16(out + 6, 0);
  wire_put32(out + 8, stream);
  wire_put32(out + 12, length);
  wire_put64(out + 16, checksum);
}

/* Send bytes on a fresh connection (after a handshake if asked) and
 * expect the daemon to answer with a connection error of code, then hang
 * up. */
static void expect_rejected(const char *addr, int hello, const void *bytes, size_t n, int code) {
  int fd = itest_raw_connect(addr);
  assert_true(fd >= 0);
  if (hello) assert_int_equal(itest_raw_hello(fd), 0);
  assert_int_equal(itest_raw_write(fd, bytes, n), 0);
  uint32_t stream;
  int got;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(fd, &stream, &got, msg, sizeof msg), 0);
  assert_int_equal(stream, 0);
  if (got != code) fail_msg("expected %s, got %s: %s", bfeed_strerror(code), bfeed_strerror(got), msg);
  assert_int_equal(itest_raw_drain_to_eof(fd), 0);
  close(fd);
}

/* HELLO, OPEN with a deep window, take one batch, hang up without CLOSE. */
static void vanish_mid_stream(const char *addr) {
  int fd = itest_raw_connect(addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_hello(fd), 0);
  bfeed_stream_opts o;
  train_opts(&o, 1, 0);
  o.window = 16;
  o.size = 64;
  assert_int_equal(itest_raw_open(fd, 1, "demo", &o), 0);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_expect(fd, FRAME_BATCH, &h, &p), 0);
  free(p);
  close(fd);
}

static void test_bad_clients(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "bad-clients", 2, 1);
  bfeed_stream_opts o, big;
  itest_run ref = {0}, got = {0}, later = {0};
  bfeed_error err;
  train_opts(&o, 9, 3);
  fetch_run(d->unix_addr, "demo", &o, 0, &ref);

  bfeed_client *c = connect_to(d->tcp_addr);
  bfeed_stream *w = open_stream(c, "demo", &o);
  OK(itest_collect(w, 2, &got, &err), err);

  /* Clients that vanish with batches in flight. */
  for (int i = 0; i < 3; i++) vanish_mid_stream(i == 1 ? d->tcp_addr : d->unix_addr);
  bfeed_client *gone = connect_to(d->unix_addr);
  bfeed_stream *gs = open_stream(gone, "demo", &o);
  bfeed_batch_release(next_batch(gs));
  bfeed_close(gone); /* no CLOSE for gs: the socket just goes */
  OK(itest_collect(w, 4, &got, &err), err);

  /* Bytes that are no bfeed frame at all. */
  static const char http[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  expect_rejected(d->unix_addr, 0, http, sizeof http - 1, BFEED_EPROTO);
  uint8_t hdr[FRAME_HEADER_SIZE];
  put_header(hdr, 0x46454542u, FRAME_HELLO, 0, 0, frame_checksum("", 0));
  expect_rejected(d->tcp_addr, 0, hdr, sizeof hdr, BFEED_EPROTO); /* bad magic */
  put_header(hdr, FRAME_MAGIC, FRAME_OPEN, 1, 0, frame_checksum("", 0));
  expect_rejected(d->unix_addr, 0, hdr, sizeof hdr, BFEED_EPROTO); /* OPEN before HELLO */
  put_header(hdr, FRAME_MAGIC, FRAME_HELLO, 0, UINT32_MAX, 0);
  expect_rejected(d->unix_addr, 0, hdr, sizeof hdr, BFEED_ETOOBIG);
  put_header(hdr, FRAME_MAGIC, FRAME_ACK, 1, FRAME_MAX_CONTROL + 1, 0);
  expect_rejected(d->unix_addr, 1, hdr, sizeof hdr, BFEED_ETOOBIG);
  uint8_t frame[FRAME_HEADER_SIZE + 8];
  wire_put64(frame + FRAME_HEADER_SIZE, 1);
  put_header(frame, FRAME_MAGIC, FRAME_ACK, 1, 8, frame_checksum(frame + FRAME_HEADER_SIZE, 8) ^ 1);
  expect_rejected(d->unix_addr, 1, frame, sizeof frame, BFEED_ECHECKSUM);
  OK(itest_collect(w, 7, &got, &err), err);

  /* Half a header, then gone. */
  int fd = itest_raw_connect(d->unix_addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_write(fd, frame, 10), 0);
  close(fd);

  /* An ACK for batches that were never sent. */
  fd = itest_raw_connect(d->unix_addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_hello(fd), 0);
  train_opts(&big, 1, 0);
  big.window = 1;
  assert_int_equal(itest_raw_open(fd, 1, "demo", &big), 0);
  uint8_t many[8];
  wire_put64(many, 1000);
  assert_int_equal(itest_raw_send(fd, FRAME_ACK, 1, many, sizeof many), 0);
  uint32_t stream;
  int code;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(stream, 0);
  assert_int_equal(code, BFEED_EPROTO);
  assert_int_equal(itest_raw_drain_to_eof(fd), 0);
  close(fd);

  /* A client that opens a deep stream of big batches and never reads. */
  int idle = itest_raw_connect(d->unix_addr);
  assert_true(idle >= 0);
  assert_int_equal(itest_raw_hello(idle), 0);
  train_opts(&big, 2, 0);
  big.batch = 16;
  big.size = 64;
  big.window = 16;
  assert_int_equal(itest_raw_open(idle, 1, "demo", &big), 0);

  int rc = itest_collect(w, 0, &got, &err);
  if (rc != BFEED_EEOF) fail_msg("the well-behaved stream ended with %d: %s", rc, err.message);
  assert_runs_equal(&got, &ref);
  bfeed_stream_close(w);
  bfeed_close(c);

  /* New clients are still served, while the idle one still hangs on. */
  itest_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  fetch_run(d->tcp_addr, "demo", &o, 2, &later);
  assert_int_equal(later.b[1].idx[0], 8);
  assert_true(itest_daemon_alive(d));
  close(idle);
  itest_run_free(&ref);
  itest_run_free(&got);
  itest_run_free(&later);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 6. Corrupt files                                                    */

static int is_bad(const suite *s, int64_t idx) { return idx == s->garbage_idx || idx == s->trunc_idx; }

static void test_corrupt_jpeg(void **state) {
  suite *s = *state;
  itest_daemon *d1 = start_daemon(s, 0, "corrupt-w1", 1, 0), *d2 = start_daemon(s, 1, "corrupt-w2", 2, 0);
  const size_t n = s->bad.n;
  bfeed_client *c = connect_to(d1->unix_addr);
  bfeed_stream_opts o;
  bfeed_error err;
  itest_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  o.normalize = BFEED_NORM_NONE;
  o.keep_partial = 1;
  o.epochs = 1;
  bfeed_stream *st = open_stream(c, "bad", &o);
  itest_run run = {0};
  assert_int_equal(itest_collect(st, 0, &run, &err), BFEED_EEOF);
  assert_int_equal(run.n, (n + 7) / 8);

  /* Full batches; each bad file replaced by the next good sample in the
   * epoch's order (wrapping at the end), whose pixels it then repeats. */
  int64_t served[64];
  const uint8_t *image[64];
  size_t got = 0, img_bytes = 3 * 32 * 32 * 2, nbytes;
  for (size_t k = 0; k < run.n; k++) {
    assert_int_equal(run.b[k].count, k + 1 < run.n ? 8 : n % 8);
    const uint8_t *data = itest_rec_data(&run.b[k], "image", &nbytes);
    assert_non_null(data);
    assert_int_equal(nbytes, run.b[k].count * img_bytes);
    for (uint32_t i = 0; i < run.b[k].count; i++, got++) {
      served[got] = run.b[k].idx[i];
      image[got] = data + i * img_bytes;
    }
  }
  assert_int_equal(got, n);
  for (size_t p = 0; p < n; p++) {
    int64_t want = (int64_t)p;
    while (is_bad(s, want)) want = (want + 1) % (int64_t)n;
    assert_int_equal(served[p], want);
    assert_memory_equal(image[p], image[want], img_bytes);
    assert_int_equal(run.b[p / 8].labels[p % 8], s->bad.labels[want]);
  }
  static const char *const skipped_name[] = {"skipped"};
  uint64_t skipped;
  OK(itest_counters(st, skipped_name, &skipped, 1, &err), err);
  assert_int_equal(skipped, 2);
  bfeed_stream_close(st);
  bfeed_close(c);
  itest_run_free(&run);

  char *log = itest_read_file(d1->log_path, NULL);
  assert_non_null(log);
  assert_non_null(strstr(log, "blue_horizontal/0002_garbage.jpg"));
  assert_non_null(strstr(log, "red_vertical/zz_trunc.jpg"));
  free(log);

  /* Replacements are part of the pure function: 1 and 2 workers agree. */
  itest_run a = {0}, b = {0};
  train_opts(&o, 8, 2);
  fetch_run(d1->unix_addr, "bad", &o, 0, &a);
  fetch_run(d2->unix_addr, "bad", &o, 0, &b);
  assert_runs_equal(&a, &b);
  for (size_t k = 0; k < a.n; k++)
    for (uint32_t i = 0; i < a.b[k].count; i++) assert_false(is_bad(s, a.b[k].idx[i]));
  itest_run_free(&a);
  itest_run_free(&b);
  stop_daemon(d1);
  stop_daemon(d2);
}

/* ------------------------------------------------------------------ */
/* 7. Flow control                                                     */

static void test_flow_control(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "flow", 2, 0);
  bfeed_client *c = connect_to(d->unix_addr);
  bfeed_stream_opts o;
  bfeed_error err;
  train_opts(&o, 4, 0);
  o.window = 3;
  bfeed_stream *st = open_stream(c, "demo", &o);
  uint64_t most = 0;
  for (int k = 0; k < 12; k++) {
    bfeed_batch_release(next_batch(st));
    for (int look = 0; look < 2; look++) {
      static const char *const names[] = {"in_flight", "unacked"};
      uint64_t v[2];
      OK(itest_counters(st, names, v, 2, &err), err);
      uint64_t in_flight = v[0], unacked = v[1];
      if (in_flight + unacked > o.window)
        fail_msg("batch %d: %llu in flight + %llu unacked exceeds the window of %u", k,
                 (unsigned long long)in_flight, (unsigned long long)unacked, o.window);
      most = in_flight + unacked > most ? in_flight + unacked : most;
      /* A slow consumer: give the daemon every chance to run ahead. */
      nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
    }
  }
  /* It does prefetch: once an ACK is in, the window refills. */
  assert_int_equal(most, o.window);
  bfeed_stream_close(st);
  bfeed_close(c);
  stop_daemon(d);
}

/* ------------------------------------------------------------------ */
/* 8. SIGTERM                                                          */

static void test_sigterm_while_streaming(void **state) {
  suite *s = *state;
  itest_daemon *d = start_daemon(s, 0, "sigterm", 2, 0);
  bfeed_client *c = connect_to(d->unix_addr);
  bfeed_stream_opts o;
  bfeed_error err;
  train_opts(&o, 6, 0);
  bfeed_stream *st = open_stream(c, "demo", &o);
  for (int k = 0; k < 3; k++) bfeed_batch_release(next_batch(st));
  /* Wait until the daemon has sent the whole window, so that the client
   * holds batches it has not taken when the daemon goes away. */
  static const char *const names[] = {"in_flight", "unacked"};
  uint64_t v[2] = {1, 0};
  for (int tries = 0; tries < 1000 && (v[0] != 0 || v[1] != o.window); tries++) {
    nanosleep(&(struct timespec){0, 2 * 1000000L}, NULL);
    OK(itest_counters(st, names, v, 2, &err), err);
  }
  assert_int_equal(v[1], o.window);

  /* And one that will not take its frames, so shutdown cannot just wait
   * for every write to drain. */
  int idle = itest_raw_connect(d->unix_addr);
  assert_true(idle >= 0);
  assert_int_equal(itest_raw_hello(idle), 0);
  bfeed_stream_opts big;
  train_opts(&big, 2, 0);
  big.batch = 16;
  big.size = 64;
  big.window = 16;
  assert_int_equal(itest_raw_open(idle, 1, "demo", &big), 0);

  char why[1024];
  assert_int_equal(kill(d->pid, SIGTERM), 0);
  if (itest_daemon_wait(d, STOP_MS, why, sizeof why) < 0) fail_msg("%s", why);

  /* The client may hand out what had arrived; then it reports the
   * daemon's reason, and a failed call hands out no batch. */
  int rc = 0, taken = 0;
  while (rc == 0 && taken <= (int)o.window) {
    bfeed_batch *b;
    rc = bfeed_stream_next(st, &b, &err);
    if (rc == 0) bfeed_batch_release(b), taken++;
    else if (b) fail_msg("bfeed_stream_next failed with %d (%s) but handed out a batch", rc, err.message);
  }
  assert_true(taken <= (int)o.window);
  if (rc != BFEED_ESHUTDOWN)
    fail_msg("after SIGTERM the stream gave %d (%s): %s", rc, bfeed_strerror(rc), err.message);
  bfeed_stream_close(st);
  bfeed_close(c);
  assert_int_equal(itest_raw_drain_to_eof(idle), 0);
  close(idle);
  /* It took its socket with it. */
  assert_int_equal(bfeed_connect(d->unix_addr, &c, &err), BFEED_ECONNECT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_sockets_and_refusals, test_teardown),
      cmocka_unit_test_teardown(test_tensors, test_teardown),
      cmocka_unit_test_teardown(test_same_bytes_any_daemon, test_teardown),
      cmocka_unit_test_teardown(test_resume, test_teardown),
      cmocka_unit_test_teardown(test_shards, test_teardown),
      cmocka_unit_test_teardown(test_partial_and_eof, test_teardown),
      cmocka_unit_test_teardown(test_two_clients, test_teardown),
      cmocka_unit_test_teardown(test_bad_clients, test_teardown),
      cmocka_unit_test_teardown(test_corrupt_jpeg, test_teardown),
      cmocka_unit_test_teardown(test_flow_control, test_teardown),
      cmocka_unit_test_teardown(test_sigterm_while_streaming, test_teardown),
  };
  /* A client whose daemon vanished must see an error, not a SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  /* e.g. BFEED_ITEST_FILTER='test_bad*' to run some of the tests. */
  const char *filter = getenv("BFEED_ITEST_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
