/*
 * test_options.c -- libbfeed's stream options by name (client/lib/options.c),
 * what the Python package and the command line set options with: every
 * option reaches its field, ranges are the command line's, '_' spells '-',
 * and every refusal names the option and the value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed.h"

static void set_ok(bfeed_stream_opts *o, const char *name, const char *value) {
  bfeed_error err = {0};
  int rc = bfeed_stream_opts_set(o, name, value, &err);
  if (rc != 0) fail_msg("%s=%s refused: %s", name, value ? value : "(null)", err.message);
}

static void set_bad(const char *name, const char *value, const char *words) {
  bfeed_stream_opts o, before;
  bfeed_error err = {0};
  bfeed_stream_opts_init(&o);
  before = o;
  assert_int_equal(bfeed_stream_opts_set(&o, name, value, &err), BFEED_EINVAL);
  assert_int_equal(err.code, BFEED_EINVAL);
  if (!strstr(err.message, words)) fail_msg("%s=%s: message '%s' lacks '%s'", name, value, err.message, words);
  assert_memory_equal(&o, &before, sizeof o); /* a refused value changes nothing */
}

/* Every option by name, with a value away from its default. */
static const struct {
  const char *name, *value;
} every_option[] = {
    {"batch", "65536"},  {"size", "8"},         {"mode", "eval"},         {"layout", "nhwc"},
    {"normalize", "none"}, {"seed", "18446744073709551615"}, {"epoch", "7"}, {"start_batch", "12"},
    {"shard", "2/5"},    {"codec", "zstd:9"},   {"window", "64"},         {"shuffle", "off"},
    {"keep-partial", NULL}, {"epochs", "3"},    {"pool", "mean"},         {"max_len", "1048576"},
    {"fixed_len", "true"}, {"bucket", "4"},     {"select", "residue:2/3"}, {"eval-pad", "mask"},
    {"start_sample", "18446744073709551615"}, {"job", "18446744073709551614"},
};

static void test_every_option_reaches_its_field(void **state) {
  bfeed_stream_opts o, want;
  bfeed_stream_opts_init(&o);
  /* libbfeed's default codec is its own choice, never sent as such; the
   * protocol's default (what OPEN leaves unsaid) stays none. */
  assert_int_equal(o.codec, BFEED_CODEC_AUTO);
  want = o;
  for (size_t i = 0; i < sizeof every_option / sizeof every_option[0]; i++)
    set_ok(&o, every_option[i].name, every_option[i].value);
  /* What the table must have done, field by field; nothing else moved. */
  want.batch = 65536, want.size = 8, want.mode = BFEED_MODE_EVAL, want.layout = BFEED_LAYOUT_NHWC;
  want.normalize = BFEED_NORM_NONE, want.seed = UINT64_MAX, want.epoch = 7, want.batch_index = 12;
  want.shard_index = 2, want.shard_count = 5, want.codec = BFEED_CODEC_ZSTD, want.codec_level = 9;
  want.window = 64, want.shuffle = BFEED_SHUFFLE_OFF, want.keep_partial = 1, want.epochs = 3;
  want.pool = BFEED_POOL_MEAN, want.max_len = 1u << 20, want.fixed_len = 1, want.bucket = 4;
  want.select = BFEED_SELECT_RESIDUE, want.select_mod = 3, want.select_rem = 2;
  want.eval_pad = BFEED_EVAL_PAD_MASK, want.start_sample = UINT64_MAX, want.job = UINT64_MAX - 1;
  assert_memory_equal(&o, &want, sizeof o);
  set_ok(&o, "keep_partial", "0");
  set_ok(&o, "codec", "zstd");
  assert_int_equal(o.keep_partial, 0);
  assert_int_equal(o.codec_level, 3);
  set_ok(&o, "codec", "none");
  assert_int_equal(o.codec, BFEED_CODEC_NONE);
  set_ok(&o, "codec", "auto");
  assert_int_equal(o.codec, BFEED_CODEC_AUTO);
  set_ok(&o, "select", "on-demand");
  assert_int_equal(o.select, BFEED_SELECT_ON_DEMAND);
  set_ok(&o, "select", "stride:4");
  assert_true(o.select == BFEED_SELECT_STRIDE && o.select_mod == 4 && o.select_rem == 0);
  set_ok(&o, "select", "all");
  assert_true(o.select == BFEED_SELECT_ALL && o.select_mod == 1 && o.select_rem == 0);
}

static void test_refusals_name_option_and_value(void **state) {
  set_bad("batch", "0", "batch 0: expected a whole number from 1 to 65536");
  set_bad("batch", "65537", "batch 65537");
  set_bad("size", "-8", "size -8");
  set_bad("seed", "12x", "seed 12x");
  set_bad("window", "", "window : expected");
  set_bad("mode", "test", "mode test: expected one of train eval");
  set_bad("shard", "2/2", "shard 2/2: expected I/N");
  set_bad("shard", "1/0", "shard 1/0");
  set_bad("shard", "1/2/3", "shard 1/2/3");
  set_bad("codec", "brotli", "codec brotli: expected auto, none, u8, zstd[:LEVEL], u8+zstd[:LEVEL], lz4, u8+lz4");
  set_bad("codec", "lz4:3", "codec lz4:3: lz4 takes no level");
  set_bad("codec", "u8+zstd:0", "codec zstd: 0");
  set_bad("codec", "zstd:20", "codec zstd: 20");
  set_bad("keep_partial", "yes", "keep-partial yes: expected 1 or 0");
  set_bad("batch", NULL, "batch needs a value");
  set_bad("bogus", "1", "unknown stream option 'bogus'");
  set_bad("select", "residue:3/3", "select residue:3/3: expected all, on-demand, residue:R/M");
  set_bad("select", "residue:-1/3", "select residue:-1/3");
  set_bad("select", "residue:1/0", "select residue:1/0");
  set_bad("select", "some", "select some");
  set_bad("select", "stride:0", "select stride:0");
  set_bad("select", "stride:-1", "select stride:-1");
  set_bad("select", "stride:2x", "select stride:2x");
  set_bad("start__batch", "1", "unknown stream option");
  assert_int_equal(bfeed_stream_opts_set(&(bfeed_stream_opts){0}, "bogus", "1", NULL), BFEED_EINVAL);
}

static void test_names_and_size(void **state) {
  const char *want[] = {"batch", "size", "mode", "layout", "normalize", "mean", "std", "seed", "epoch",
                        "start-batch", "shard", "codec", "window", "shuffle", "keep-partial", "epochs", "pool",
                        "max-len", "fixed-len", "bucket", "select", "crop-scale", "eval-decode", "share",
                        "eval-pad", "start-sample", "job", "interpolation", "resize", "crop-ratio", "hflip",
                        "train-decode", "color-jitter", "auto-augment", "aa-num-ops", "aa-magnitude", "aa-bins",
                        "aa-interpolation", "aa-fill", "random-erase", "erase-scale", "erase-ratio", "erase-value",
                        "erase-random", "mixup-alpha", "cutmix-alpha", "mix-classes", "explain", NULL};
  static const char *const flags[] = {"keep-partial", "fixed-len", "erase-random", "explain"};
  int n = 0;
  for (int i = 0; want[i]; i++, n++) {
    int flag = 0;
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) flag |= strcmp(want[i], flags[k]) == 0;
    assert_non_null(bfeed_stream_opt_name(i));
    assert_string_equal(bfeed_stream_opt_name(i), want[i]);
    assert_int_equal(bfeed_stream_opt_takes_value(want[i]), !flag);
  }
  assert_null(bfeed_stream_opt_name(n));
  assert_null(bfeed_stream_opt_name(-1));
  assert_int_equal(bfeed_stream_opt_takes_value("nope"), -1);
  assert_int_equal(bfeed_stream_opts_size(), sizeof(bfeed_stream_opts));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_option_reaches_its_field),
      cmocka_unit_test(test_refusals_name_option_and_value),
      cmocka_unit_test(test_names_and_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
