/*
 * test_stream.c -- what a stream serves, on the real daemon (suite.h):
 * tensors and their values against a bf16 normalisation written here,
 * order, byte-identical batches whatever the worker count, codec or
 * transport, resume points, shards, partial batches and the end of a
 * stream, and two clients (or two streams of one) at once.
 *
 * The oracles are independent of the daemon: labels come from scanning the
 * folders here, normalisation is recomputed in float32 with a bf16 rounding
 * written here, and determinism is checked by comparing daemons with
 * different worker counts, codecs and start points byte for byte.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "wire.h"
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
/* Tensors                                                             */

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

/* Exactly image (of img_shape), label and index, for img_shape[0]
 * samples. */
static void check_columns(const bfeed_batch *b, const int64_t *img_shape) {
  const int64_t vec[1] = {img_shape[0]};
  assert_int_equal(bfeed_batch_ntensors(b), 3);
  check_tensor(b, 0, "image", BFEED_DTYPE_BF16, 4, img_shape);
  check_tensor(b, 1, "label", BFEED_DTYPE_I32, 1, vec);
  check_tensor(b, 2, "index", BFEED_DTYPE_I64, 1, vec);
}

static void test_tensors(void **state) {
  static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "tensors", 2, 0);
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  o.normalize = BFEED_NORM_NONE;
  bfeed_stream *raw = suite_open(c, "demo", &o);
  o.layout = BFEED_LAYOUT_NHWC;
  bfeed_stream *nhwc = suite_open(c, "demo", &o);
  o.layout = BFEED_LAYOUT_NCHW;
  o.normalize = BFEED_NORM_IMAGENET;
  bfeed_stream *norm = suite_open(c, "demo", &o);

  const int64_t B = 8, S = 32;
  const int64_t nchw_shape[4] = {B, 3, S, S}, nhwc_shape[4] = {B, S, S, 3};
  for (int64_t k = 0; k < (int64_t)s->demo.n / B; k++) {
    bfeed_batch *a = suite_next(raw), *h = suite_next(nhwc), *n = suite_next(norm);
    check_columns(a, nchw_shape);
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
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Determinism, resume, shards, partial batches, end of stream         */

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

static void test_same_bytes_any_daemon(void **state) {
  suite *s = *state;
  itest_daemon *d1 = suite_start(s, 0, "det-w1", 1, 0), *d2 = suite_start(s, 1, "det-w2", 2, 1);
  bfeed_stream_opts o;
  itest_run a = {0}, b = {0}, z = {0}, other = {0};
  suite_train_opts(&o, 11, 2);
  suite_fetch(d1->unix_addr, "demo", &o, 0, &a);
  suite_fetch(d2->tcp_addr, "demo", &o, 0, &b);
  o.codec = BFEED_CODEC_ZSTD;
  o.codec_level = 5;
  suite_fetch(d2->unix_addr, "demo", &o, 0, &z);
  assert_int_equal(a.n, 2 * (s->demo.n / 8));
  suite_assert_runs_equal(&a, &b);
  suite_assert_runs_equal(&a, &z);

  /* Shuffled: each epoch is a different order without repeats. */
  int64_t e0[64], e1[64], f0[64];
  size_t n0 = epoch_indices(&a, 0, e0, 64), n1 = epoch_indices(&a, 1, e1, 64);
  assert_int_equal(n0, 40);
  assert_int_equal(n1, 40);
  assert_distinct(e0, n0, s->demo.n);
  assert_distinct(e1, n1, s->demo.n);
  assert_memory_not_equal(e0, e1, n0 * sizeof e0[0]);

  /* Another seed, another order. */
  suite_train_opts(&o, 12, 1);
  suite_fetch(d1->unix_addr, "demo", &o, 0, &other);
  assert_int_equal(epoch_indices(&other, 0, f0, 64), 40);
  assert_memory_not_equal(e0, f0, n0 * sizeof e0[0]);

  itest_run_free(&a);
  itest_run_free(&b);
  itest_run_free(&z);
  itest_run_free(&other);
  suite_stop(d1);
  suite_stop(d2);
}

static void test_resume(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "resume", 2, 0);
  bfeed_stream_opts o;
  itest_run ref = {0}, r1 = {0}, r2 = {0};
  suite_train_opts(&o, 5, 3);
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref);
  const size_t bpe = s->demo.n / 8;
  assert_int_equal(ref.n, 3 * bpe);

  /* (epoch 1, batch 2) with epochs=1: the rest of epoch 1. */
  suite_train_opts(&o, 5, 1);
  o.epoch = 1;
  o.batch_index = 2;
  suite_fetch(d->unix_addr, "demo", &o, 0, &r1);
  assert_int_equal(r1.n, bpe - 2);
  for (size_t i = 0; i < r1.n; i++) assert_true(itest_rec_equal(&r1.b[i], &ref.b[bpe + 2 + i]));

  /* (epoch 0, batch 3), unbounded: runs on across the epoch boundary. */
  suite_train_opts(&o, 5, 0);
  o.batch_index = 3;
  suite_fetch(d->unix_addr, "demo", &o, 6, &r2);
  for (size_t i = 0; i < r2.n; i++) assert_true(itest_rec_equal(&r2.b[i], &ref.b[3 + i]));

  itest_run_free(&ref);
  itest_run_free(&r1);
  itest_run_free(&r2);
  suite_stop(d);
}

static void test_shards(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "shards", 2, 0);
  const size_t n = s->demo.n, per = n / 2;
  itest_run sh[2] = {{0}}, whole = {0};
  bfeed_stream_opts o;
  for (uint32_t k = 0; k < 2; k++) {
    suite_train_opts(&o, 3, 2);
    o.keep_partial = 1;
    o.shard_index = k;
    o.shard_count = 2;
    suite_fetch(d->unix_addr, "demo", &o, 0, &sh[k]);
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
  suite_train_opts(&o, 3, 2);
  o.keep_partial = 1;
  suite_fetch(d->unix_addr, "demo", &o, 0, &whole);
  for (uint64_t e = 0; e < 2; e++) {
    int64_t idx[64];
    size_t m = epoch_indices(&whole, e, idx, 64);
    assert_int_equal(m, n);
    assert_distinct(idx, m, n);
  }
  itest_run_free(&sh[0]);
  itest_run_free(&sh[1]);
  itest_run_free(&whole);
  suite_stop(d);
}

static void test_partial_and_eof(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "partial", 1, 0);
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  for (int keep = 0; keep <= 1; keep++) {
    o.keep_partial = keep;
    bfeed_stream *st = suite_open(c, "demo", &o);
    bfeed_stream_info info;
    bfeed_stream_get_info(st, &info);
    const uint64_t want_bpe = keep ? (s->demo.n + 7) / 8 : s->demo.n / 8;
    assert_int_equal(info.batches_per_epoch, want_bpe);
    for (uint64_t k = 0; k < want_bpe; k++) {
      bfeed_batch *b = suite_next(st);
      int64_t count = keep && k + 1 == want_bpe ? (int64_t)(s->demo.n % 8) : 8;
      const int64_t img[4] = {count, 3, 32, 32};
      check_columns(b, img);
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
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Two clients at once                                                 */

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
  suite_train_opts(x, 21, 3);
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
  itest_daemon *d = suite_start(s, 0, "two", 2, 1);
  fetch_job j[2];
  itest_run ref[2] = {{0}};
  memset(j, 0, sizeof j);
  two_kinds(&j[0].o, &j[1].o);
  j[0].addr = d->unix_addr;
  j[1].addr = d->tcp_addr;
  for (int i = 0; i < 2; i++) suite_fetch(d->unix_addr, "demo", &j[i].o, 0, &ref[i]);
  assert_int_equal(ref[0].n, 3 * (s->demo.n / 8));
  assert_int_equal(ref[1].n, 2 * ((s->demo.n + 4) / 5));

  /* Two clients in two threads. */
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, fetch_thread, &j[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    if (j[i].rc != BFEED_EEOF) fail_msg("client %d ended with %d: %s", i, j[i].rc, j[i].err.message);
    suite_assert_runs_equal(&j[i].run, &ref[i]);
    itest_run_free(&j[i].run);
  }

  /* Two streams of one client, their nexts interleaved. */
  bfeed_client *c = suite_connect(d->tcp_addr);
  bfeed_stream *st[2] = {suite_open(c, "demo", &j[0].o), suite_open(c, "demo", &j[1].o)};
  int rc[2] = {0, 0};
  bfeed_error err;
  while (rc[0] == 0 || rc[1] == 0)
    for (int i = 0; i < 2; i++)
      if (rc[i] == 0) rc[i] = itest_collect(st[i], j[i].run.n + 1, &j[i].run, &err);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(rc[i], BFEED_EEOF);
    suite_assert_runs_equal(&j[i].run, &ref[i]);
    bfeed_stream_close(st[i]);
    itest_run_free(&j[i].run);
    itest_run_free(&ref[i]);
  }
  bfeed_close(c);
  suite_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_tensors, suite_kill_daemons),
      cmocka_unit_test_teardown(test_same_bytes_any_daemon, suite_kill_daemons),
      cmocka_unit_test_teardown(test_resume, suite_kill_daemons),
      cmocka_unit_test_teardown(test_shards, suite_kill_daemons),
      cmocka_unit_test_teardown(test_partial_and_eof, suite_kill_daemons),
      cmocka_unit_test_teardown(test_two_clients, suite_kill_daemons),
  };
  return SUITE_RUN("stream", tests);
}
