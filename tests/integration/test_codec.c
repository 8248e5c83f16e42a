/*
 * test_codec.c -- the wire codecs on the real daemon (suite.h): u8, u8+zstd,
 * zstd, u8+lz4 and lz4 give batches byte-identical to codec none, and u8
 * halves the wire.
 *
 * The oracle is codec none itself, whose values test_stream.c checks
 * against a normalisation written there: every batch of every codec must
 * equal it byte for byte (tensor names, dtypes, shapes and data), over
 * train and eval, both layouts, both normalisations, several seeds and
 * batch sizes, on clean data and on a folder with files that must be
 * replaced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

typedef struct codec_case {
  bfeed_mode mode;
  bfeed_layout layout;
  bfeed_norm norm;
  uint64_t seed;
  uint32_t batch, size;
} codec_case;

static const codec_case codec_cases[] = {
    {BFEED_MODE_TRAIN, BFEED_LAYOUT_NCHW, BFEED_NORM_IMAGENET, 1, 8, 32},
    {BFEED_MODE_TRAIN, BFEED_LAYOUT_NHWC, BFEED_NORM_IMAGENET, 2, 5, 24},
    {BFEED_MODE_TRAIN, BFEED_LAYOUT_NCHW, BFEED_NORM_NONE, 3, 7, 40},
    {BFEED_MODE_TRAIN, BFEED_LAYOUT_NHWC, BFEED_NORM_NONE, 4, 16, 16},
    {BFEED_MODE_EVAL, BFEED_LAYOUT_NCHW, BFEED_NORM_IMAGENET, 0, 8, 32},
    {BFEED_MODE_EVAL, BFEED_LAYOUT_NHWC, BFEED_NORM_IMAGENET, 0, 6, 48},
    {BFEED_MODE_EVAL, BFEED_LAYOUT_NCHW, BFEED_NORM_NONE, 0, 3, 8},
    {BFEED_MODE_EVAL, BFEED_LAYOUT_NHWC, BFEED_NORM_NONE, 0, 9, 8},
};

static const char *const codec_names[] = {"u8", "u8+zstd:1", "zstd:1", "u8+zstd:7", "u8+lz4", "lz4"};

static void codec_opts(const codec_case *k, const char *codec, bfeed_stream_opts *o) {
  bfeed_error err;
  if (k->mode == BFEED_MODE_TRAIN) suite_train_opts(o, k->seed, 1);
  else suite_eval_opts(o, 1);
  o->layout = k->layout;
  o->normalize = k->norm;
  o->batch = k->batch;
  o->size = k->size;
  o->keep_partial = 1;
  SUITE_OK(bfeed_stream_opts_set(o, "codec", codec, &err), err);
}

/* Every case, every codec, equal to none; on `ds` served by d. */
static void codec_all_equal(itest_daemon *d, const char *ds) {
  for (size_t k = 0; k < sizeof codec_cases / sizeof codec_cases[0]; k++) {
    bfeed_stream_opts o;
    itest_run ref = {0};
    codec_opts(&codec_cases[k], "none", &o);
    suite_fetch(d->unix_addr, ds, &o, 0, &ref);
    assert_true(ref.n > 0);
    for (size_t c = 0; c < sizeof codec_names / sizeof codec_names[0]; c++) {
      itest_run got = {0};
      codec_opts(&codec_cases[k], codec_names[c], &o);
      suite_fetch(c % 2 ? d->tcp_addr : d->unix_addr, ds, &o, 0, &got);
      long diff = itest_run_diff(&ref, &got);
      if (diff != -1) fail_msg("%s case %zu codec %s: batch %ld differs from codec none", ds, k, codec_names[c], diff);
      itest_run_free(&got);
    }
    itest_run_free(&ref);
  }
}

static void test_codecs_equal_none(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "codec", 2, 1);
  codec_all_equal(d, "demo");
  codec_all_equal(d, "bad"); /* replaced samples travel the same way */
  suite_stop(d);
}

/* The wire bytes of one batch of `ds` with codec, and its tensors aligned. */
static size_t codec_wire(const char *addr, const char *codec, uint32_t size) {
  bfeed_stream_opts o;
  codec_case k = {BFEED_MODE_EVAL, BFEED_LAYOUT_NCHW, BFEED_NORM_IMAGENET, 0, 16, size};
  codec_opts(&k, codec, &o);
  bfeed_client *c = suite_connect(addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  bfeed_batch *b = suite_next(st);
  for (int i = 0; i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    assert_int_equal(bfeed_batch_tensor(b, i, &t), 0);
    if ((uintptr_t)t.data % 64) fail_msg("codec %s: tensor %s is not 64-byte aligned", codec, t.name);
  }
  assert_int_equal(bfeed_batch_raw_bytes(b), (size_t)16 * 3 * size * size * 2 + 64 + 128);
  size_t wire = bfeed_batch_wire_bytes(b);
  bfeed_batch_release(b);
  bfeed_stream_close(st);
  bfeed_close(c);
  return wire;
}

/* u8 carries a byte per channel instead of two, plus a 1.5 KiB table. */
static void test_u8_halves_the_wire(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "wire", 1, 1);
  size_t none = codec_wire(d->unix_addr, "none", 64), u8 = codec_wire(d->unix_addr, "u8", 64);
  /* libbfeed's default, auto: u8 over TCP, none over the Unix socket. */
  assert_int_equal(codec_wire(d->tcp_addr, "auto", 64), u8);
  assert_int_equal(codec_wire(d->unix_addr, "auto", 64), none);
  size_t px = (size_t)16 * 3 * 64 * 64;
  if (u8 > none / 2 + 2048 || u8 < px) fail_msg("u8 wire %zu bytes, none %zu: not about half", u8, none);
  size_t u8z = codec_wire(d->unix_addr, "u8+zstd:3", 64);
  assert_true(u8z < u8);
  /* zstd compresses an image batch's u8 form: the same bytes on the wire. */
  assert_int_equal(codec_wire(d->unix_addr, "zstd:3", 64), u8z);
  size_t u8l = codec_wire(d->tcp_addr, "u8+lz4", 64);
  assert_true(u8l < u8);
  assert_int_equal(codec_wire(d->unix_addr, "lz4", 64), u8l); /* likewise lz4 */
  suite_stop(d);
}

/* Codec names the library refuses, naming what it expects. */
static void test_codec_names(void **state) {
  (void)state;
  bfeed_stream_opts o;
  bfeed_error err;
  bfeed_stream_opts_init(&o);
  const char *bad[] = {"u8+", "u8:3", "u16", "u8+zstdx", "zstd+u8"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(bfeed_stream_opts_set(&o, "codec", bad[i], &err), BFEED_EINVAL);
    assert_non_null(strstr(err.message, bad[i]));
  }
  SUITE_OK(bfeed_stream_opts_set(&o, "codec", "u8+zstd:9", &err), err);
  assert_int_equal(o.codec, BFEED_CODEC_U8_ZSTD);
  assert_int_equal(o.codec_level, 9);
  SUITE_OK(bfeed_stream_opts_set(&o, "codec", "u8", &err), err);
  assert_int_equal(o.codec, BFEED_CODEC_U8);
}

int main(void) {
  /* Codecs are about the socket: a shared-memory stream carries them raw. */
  setenv("BFEED_SHM", "0", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codec_names),
      cmocka_unit_test_teardown(test_codecs_equal_none, suite_kill_daemons),
      cmocka_unit_test_teardown(test_u8_halves_the_wire, suite_kill_daemons),
  };
  return SUITE_RUN("codec", tests);
}
