/*
 * test_opts.c -- the options table (proto/opts.def, opts.c) against
 * PROTOCOL.md, written out here by hand:
 *
 *  - the fingerprint's canonical lines: the documented form ("batch N",
 *    "shard I/N", "shuffle 0|1" resolved, the floats' bit patterns, ...)
 *    for random options, so no daemon's fingerprint changed when the lines
 *    came to be made from the table; crop_scale adds its line only when it
 *    is not the default;
 *  - OPEN: every option survives encode and decode; options added after
 *    the first nineteen are sent only when set (a daemon that predates
 *    crop_scale still opens a default stream), critical unless they only
 *    say how batches travel;
 *  - crop_scale by name: "LO,HI", refused unless 0 < LO <= HI <= 1; the
 *    recipes' options (size H,W, interpolation, resize, crop_ratio, hflip,
 *    train_decode) by name, on the wire and in the fingerprint;
 *  - --help names every option set by name but those commands own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "opts.h"
#include "tb.h"

static uint64_t test_opts_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

/* A valid, random set of options. */
static void test_opts_random(bfeed_stream_opts *o, uint64_t *s) {
  opts_defaults(o);
  o->batch = 1 + (uint32_t)(test_opts_rand(s) % 65536);
  o->size = 8 + (uint32_t)(test_opts_rand(s) % 4089);
  o->mode = (bfeed_mode)(test_opts_rand(s) % 2);
  o->layout = (bfeed_layout)(test_opts_rand(s) % 2);
  o->normalize = (bfeed_norm)(test_opts_rand(s) % 3);
  for (int c = 0; c < 3; c++) {
    o->mean[c] = (float)(test_opts_rand(s) % 1000) / 997.0f;
    o->std[c] = 0.01f + (float)(test_opts_rand(s) % 1000) / 991.0f;
  }
  o->seed = test_opts_rand(s) << 11 | test_opts_rand(s);
  o->epoch = test_opts_rand(s), o->batch_index = test_opts_rand(s), o->epochs = test_opts_rand(s) % 9;
  o->shard_count = 1 + (uint32_t)(test_opts_rand(s) % 1000);
  o->shard_index = (uint32_t)(test_opts_rand(s) % o->shard_count);
  o->window = 1 + (uint32_t)(test_opts_rand(s) % 64);
  o->shuffle = (bfeed_shuffle)(test_opts_rand(s) % 3);
  o->keep_partial = (int)(test_opts_rand(s) % 2);
  o->pool = (bfeed_pool)(test_opts_rand(s) % 2);
  o->max_len = (uint32_t)(test_opts_rand(s) % 3 ? 0 : test_opts_rand(s) % (1u << 20));
  o->fixed_len = (int)(test_opts_rand(s) % 2);
  o->bucket = (uint32_t)(test_opts_rand(s) % 65537);
  o->codec = (bfeed_codec)(test_opts_rand(s) % 6);
  o->codec_level = 1 + (int)(test_opts_rand(s) % 19);
  if (test_opts_rand(s) % 2) {
    o->select = BFEED_SELECT_RESIDUE;
    o->select_mod = 1 + test_opts_rand(s) % 7;
    o->select_rem = test_opts_rand(s) % o->select_mod;
  }
  o->transport = (bfeed_transport)(test_opts_rand(s) % 2);
  if (test_opts_rand(s) % 2) {
    o->crop_scale[0] = 0.01f + (float)(test_opts_rand(s) % 100) / 200.0f;
    o->crop_scale[1] = o->crop_scale[0] + (1.0f - o->crop_scale[0]) * (float)(test_opts_rand(s) % 100) / 100.0f;
  }
  o->eval_decode = (bfeed_eval_decode)(test_opts_rand(s) % 2);
  o->eval_pad = (bfeed_eval_pad)(test_opts_rand(s) % 2);
  o->start_sample = test_opts_rand(s) % 2 ? 0 : test_opts_rand(s);
  o->job = test_opts_rand(s) % 2 ? 0 : test_opts_rand(s); /* never in the lines: it changes no byte */
  if (test_opts_rand(s) % 4 == 0) o->select = BFEED_SELECT_STRIDE, o->select_mod = 1 + test_opts_rand(s) % 9, o->select_rem = 0;
  /* The recipes' geometry (tags 30, 31, 36..39): each set in about half the cases. */
  if (test_opts_rand(s) % 2) o->width = test_opts_rand(s) % 3 ? 8 + (uint32_t)(test_opts_rand(s) % 4089) : o->size;
  o->interpolation = (bfeed_interp)(test_opts_rand(s) % 3);
  o->resize = test_opts_rand(s) % 2 ? 0 : (uint32_t)(test_opts_rand(s) % 16385);
  if (test_opts_rand(s) % 2) {
    o->crop_ratio[0] = 0.1f + (float)(test_opts_rand(s) % 100) / 50.0f;
    o->crop_ratio[1] = o->crop_ratio[0] * (1.0f + (float)(test_opts_rand(s) % 100) / 25.0f);
  }
  if (test_opts_rand(s) % 2) o->hflip = (float)(test_opts_rand(s) % 101) / 100.0f;
  o->train_decode = (bfeed_train_decode)(test_opts_rand(s) % 2);
}

/* PROTOCOL.md "canonical form", the options' lines, as the spec writes them. */
static int test_opts_spec_lines(const bfeed_stream_opts *o, char *s, size_t cap) {
  int shuffle = o->shuffle == BFEED_SHUFFLE_ON || (o->shuffle == BFEED_SHUFFLE_AUTO && o->mode == BFEED_MODE_TRAIN);
  char size[32]; /* "H,W", or "S" for a square, however it was given */
  if (o->width && o->width != o->size) snprintf(size, sizeof size, "%u,%u", o->size, o->width);
  else snprintf(size, sizeof size, "%u", o->size);
  int n = snprintf(s, cap,
                   "batch %u\nsize %s\nmode %d\nlayout %d\nnormalize %d\nmean %08x %08x %08x\nstd %08x %08x %08x\n"
                   "seed %llu\nshard %u/%u\nshuffle %d\nkeep_partial %d\npool %d\nmax_len %u\nfixed_len %d\nbucket %u\n",
                   o->batch, size, (int)o->mode, (int)o->layout, (int)o->normalize, tb_f32_bits(o->mean[0]),
                   tb_f32_bits(o->mean[1]), tb_f32_bits(o->mean[2]), tb_f32_bits(o->std[0]), tb_f32_bits(o->std[1]),
                   tb_f32_bits(o->std[2]), (unsigned long long)o->seed, o->shard_index, o->shard_count, shuffle,
                   o->keep_partial != 0, (int)o->pool, o->max_len, o->fixed_len != 0, o->bucket);
  if (o->crop_scale[0] != 0.08f || o->crop_scale[1] != 1.0f)
    n += snprintf(s + n, cap - (size_t)n, "crop_scale %08x %08x\n", tb_f32_bits(o->crop_scale[0]),
                  tb_f32_bits(o->crop_scale[1]));
  if (o->eval_decode != BFEED_EVAL_DECODE_EXACT)
    n += snprintf(s + n, cap - (size_t)n, "eval_decode %d\n", (int)o->eval_decode);
  if (o->eval_pad != BFEED_EVAL_PAD_NONE) n += snprintf(s + n, cap - (size_t)n, "eval_pad %d\n", (int)o->eval_pad);
  if (o->start_sample) n += snprintf(s + n, cap - (size_t)n, "start_sample %llu\n", (unsigned long long)o->start_sample);
  if (o->interpolation) n += snprintf(s + n, cap - (size_t)n, "interpolation %d\n", (int)o->interpolation);
  if (o->resize) n += snprintf(s + n, cap - (size_t)n, "resize %u\n", o->resize);
  if (o->crop_ratio[0] != 0.75f || o->crop_ratio[1] != 4.0f / 3.0f)
    n += snprintf(s + n, cap - (size_t)n, "crop_ratio %08x %08x\n", tb_f32_bits(o->crop_ratio[0]),
                  tb_f32_bits(o->crop_ratio[1]));
  if (o->hflip != 0.5f) n += snprintf(s + n, cap - (size_t)n, "hflip %08x\n", tb_f32_bits(o->hflip));
  /* train_decode: counted when it is not what daemons before it served
   * (fast), and only where it can change a byte (train). */
  if (o->train_decode == BFEED_TRAIN_DECODE_EXACT && o->mode == BFEED_MODE_TRAIN)
    n += snprintf(s + n, cap - (size_t)n, "train_decode 1\n");
  return n;
}

static void test_canonical_lines(void **state) {
  uint64_t seed = 42;
  int scaled = 0;
  for (int i = 0; i < 5000; i++) {
    bfeed_stream_opts o;
    char want[2048], got[2048];
    test_opts_random(&o, &seed);
    int n = test_opts_spec_lines(&o, want, sizeof want);
    size_t m = opts_canon(&o, got, sizeof got);
    if ((size_t)n != m || memcmp(want, got, m) != 0) fail_msg("case %d: table gives\n%s\nspec says\n%s", i, got, want);
    scaled += strstr(got, "crop_scale") != NULL;
  }
  assert_true(scaled > 1000 && scaled < 4000);
  /* A buffer too small is cut, never overrun. */
  bfeed_stream_opts o;
  char small[40];
  opts_defaults(&o);
  memset(small, 'x', sizeof small);
  assert_int_equal(opts_canon(&o, small, 20), 19);
  assert_int_equal(small[19], 0);
  assert_int_equal(small[20], 'x');
}

/* The OPEN payload of o, decoded again. */
static void test_opts_roundtrip(const bfeed_stream_opts *o, bfeed_stream_opts *back, wbuf *w) {
  msg_open m = {.dataset = "d", .opts = *o}, out;
  char why[256] = "";
  wbuf_init(w);
  msg_open_encode(w, &m);
  assert_int_equal(msg_open_decode(w->data, w->len, &out, why, sizeof why), 0);
  *back = out.opts;
}

/* Whether w's TLV items hold tag (either criticality); *crit its bit. */
static int test_opts_has_tag(const wbuf *w, uint16_t tag, int *crit) {
  rbuf r;
  tlv_item it;
  rbuf_init(&r, w->data, w->len);
  while (tlv_next(&r, &it) == 1)
    if ((it.tag & ~TLV_CRITICAL) == tag) return *crit = (it.tag & TLV_CRITICAL) != 0, 1;
  return 0;
}

static void test_open_roundtrip(void **state) {
  uint64_t seed = 7;
  for (int i = 0; i < 2000; i++) {
    bfeed_stream_opts o, back;
    wbuf w;
    test_opts_random(&o, &seed);
    test_opts_roundtrip(&o, &back, &w);
    assert_memory_equal(&o, &back, sizeof o);
    wbuf_free(&w);
  }
  /* Defaults: none of the options added after the first 19 tags is sent. */
  bfeed_stream_opts o, back;
  wbuf w;
  int crit = 0;
  opts_defaults(&o);
  test_opts_roundtrip(&o, &back, &w);
  for (uint16_t tag = 20; tag < 64; tag++) assert_false(test_opts_has_tag(&w, tag, &crit));
  for (uint16_t tag = 2; tag < 20; tag++) assert_true(test_opts_has_tag(&w, tag, &crit) && crit);
  wbuf_free(&w);
  /* crop_scale set: tag 24, critical (it changes the bytes), two float32. */
  o.crop_scale[0] = 0.25f;
  test_opts_roundtrip(&o, &back, &w);
  assert_true(test_opts_has_tag(&w, 24, &crit) && crit);
  assert_true(back.crop_scale[0] == 0.25f && back.crop_scale[1] == 1.0f);
  wbuf_free(&w);
  /* eval_decode fast: tag 25, critical (a daemon that cannot must refuse, not serve exact pixels). */
  opts_defaults(&o);
  o.eval_decode = BFEED_EVAL_DECODE_FAST;
  test_opts_roundtrip(&o, &back, &w);
  assert_true(test_opts_has_tag(&w, 25, &crit) && crit);
  assert_int_equal(back.eval_decode, BFEED_EVAL_DECODE_FAST);
  wbuf_free(&w);
  /* eval_pad mask and start_sample: tags 27 and 28, critical (they change
   * which samples a batch holds); stride is select 3. */
  opts_defaults(&o);
  o.eval_pad = BFEED_EVAL_PAD_MASK;
  o.start_sample = 1ull << 40;
  o.select = BFEED_SELECT_STRIDE, o.select_mod = 6;
  test_opts_roundtrip(&o, &back, &w);
  assert_true(test_opts_has_tag(&w, 27, &crit) && crit);
  assert_true(test_opts_has_tag(&w, 28, &crit) && crit);
  assert_true(back.eval_pad == BFEED_EVAL_PAD_MASK && back.start_sample == 1ull << 40);
  assert_true(back.select == BFEED_SELECT_STRIDE && back.select_mod == 6);
  wbuf_free(&w);
  /* job says which streams count as one (PROTOCOL.md "Jobs"): tag 29, not
   * critical (an older daemon serves the stream on its own), and not in
   * the fingerprint (it never changes a batch's bytes). */
  opts_defaults(&o);
  o.job = 0xfedcba9876543210ull;
  test_opts_roundtrip(&o, &back, &w);
  assert_true(test_opts_has_tag(&w, 29, &crit) && !crit);
  assert_true(back.job == 0xfedcba9876543210ull);
  wbuf_free(&w);
  /* transport says how batches travel: not critical. */
  opts_defaults(&o);
  o.transport = BFEED_TRANSPORT_SHM;
  test_opts_roundtrip(&o, &back, &w);
  assert_true(test_opts_has_tag(&w, 23, &crit) && !crit);
  wbuf_free(&w);
}

static void test_crop_scale_by_name(void **state) {
  bfeed_stream_opts o;
  char err[256];
  opts_defaults(&o);
  assert_true(o.crop_scale[0] == 0.08f && o.crop_scale[1] == 1.0f);
  assert_int_equal(opts_set(&o, "crop_scale", "0.35,1", err, sizeof err), 0);
  assert_true(o.crop_scale[0] == 0.35f && o.crop_scale[1] == 1.0f);
  assert_int_equal(opts_set(&o, "crop-scale", "1,1", err, sizeof err), 0);
  assert_int_equal(opts_check(&o, err, sizeof err), 0);
  const char *bad[] = {"0,1", "0.5,0.4", "0.5,1.5", "-0.1,1", "0.5", "0.5,", "0.5,1,1", "a,b", "nan,1", "0.2;1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bfeed_stream_opts before = o;
    assert_int_equal(opts_set(&o, "crop_scale", bad[i], err, sizeof err), BFEED_EINVAL);
    if (!strstr(err, "crop-scale") || !strstr(err, bad[i])) fail_msg("%s: %s", bad[i], err);
    assert_memory_equal(&o, &before, sizeof o); /* refused: nothing changed */
  }
  /* The check a daemon runs on what OPEN brought. */
  o.crop_scale[0] = 0.9f, o.crop_scale[1] = 0.5f;
  assert_int_equal(opts_check(&o, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "crop_scale"));
  o.crop_scale[0] = NAN, o.crop_scale[1] = 1.0f;
  assert_int_equal(opts_check(&o, err, sizeof err), BFEED_EINVAL);
}

/* The recipes' options (tags 30, 31, 36..39): by name as the CLI and the
 * Python keywords set them, refused with the option's name, sent as
 * critical tags only when set. */
static void test_recipe_options(void **state) {
  bfeed_stream_opts o, back;
  char err[256];
  wbuf w;
  int crit = 0;
  opts_defaults(&o);
  assert_true(o.width == 0 && o.interpolation == BFEED_INTERP_BILINEAR && o.resize == 0);
  assert_true(o.crop_ratio[0] == 0.75f && o.crop_ratio[1] == 4.0f / 3.0f && o.hflip == 0.5f);
  assert_int_equal(o.train_decode, BFEED_TRAIN_DECODE_EXACT);
  /* size: "S", "H,W", a binding's "H/W"; a square spelt H,W is the square. */
  assert_int_equal(opts_set(&o, "size", "160,224", err, sizeof err), 0);
  assert_true(o.size == 160 && o.width == 224);
  assert_int_equal(opts_set(&o, "size", "300/200", err, sizeof err), 0);
  assert_true(o.size == 300 && o.width == 200);
  assert_int_equal(opts_set(&o, "size", "96,96", err, sizeof err), 0);
  assert_true(o.size == 96 && o.width == 0);
  assert_int_equal(opts_set(&o, "size", "64", err, sizeof err), 0);
  assert_true(o.size == 64 && o.width == 0);
  const char *bad_size[] = {"7", "8,7", "4097,8", "160,", ",160", "160,224,3", "-160,224", "a", "160;224", ""};
  for (size_t i = 0; i < sizeof bad_size / sizeof bad_size[0]; i++) {
    bfeed_stream_opts before = o;
    assert_int_equal(opts_set(&o, "size", bad_size[i], err, sizeof err), BFEED_EINVAL);
    if (!strstr(err, "size")) fail_msg("%s: %s", bad_size[i], err);
    assert_memory_equal(&o, &before, sizeof o);
  }
  o.width = 5; /* what an OPEN may carry */
  assert_int_equal(opts_check(&o, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "width 5"));
  o.width = 0;
  assert_int_equal(opts_set(&o, "interpolation", "bicubic", err, sizeof err), 0);
  assert_int_equal(o.interpolation, BFEED_INTERP_BICUBIC);
  assert_int_equal(opts_set(&o, "interpolation", "lanczos", err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "interpolation lanczos: expected one of bilinear bicubic nearest"));
  assert_int_equal(opts_set(&o, "resize", "232", err, sizeof err), 0);
  assert_int_equal(o.resize, 232);
  assert_int_equal(opts_set(&o, "resize", "16385", err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "resize 16385"));
  assert_int_equal(opts_set(&o, "crop-ratio", "0.5,2", err, sizeof err), 0);
  assert_true(o.crop_ratio[0] == 0.5f && o.crop_ratio[1] == 2.0f);
  const char *bad_ratio[] = {"0,1", "2,1", "-1,1", "inf,inf", "1"};
  for (size_t i = 0; i < sizeof bad_ratio / sizeof bad_ratio[0]; i++) {
    assert_int_equal(opts_set(&o, "crop_ratio", bad_ratio[i], err, sizeof err), BFEED_EINVAL);
    if (!strstr(err, "crop-ratio") || !strstr(err, bad_ratio[i])) fail_msg("%s: %s", bad_ratio[i], err);
  }
  assert_int_equal(opts_set(&o, "hflip", "0", err, sizeof err), 0);
  assert_true(o.hflip == 0.0f);
  assert_int_equal(opts_set(&o, "hflip", "1.5", err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "0 <= P <= 1"));
  assert_int_equal(opts_set(&o, "train-decode", "fast", err, sizeof err), 0);
  assert_int_equal(o.train_decode, BFEED_TRAIN_DECODE_FAST);
  assert_int_equal(opts_check(&o, err, sizeof err), 0);
  /* All of them change bytes: critical, so that an older daemon refuses
   * rather than serve other pixels. */
  o.size = 160, o.width = 224;
  test_opts_roundtrip(&o, &back, &w);
  assert_memory_equal(&o, &back, sizeof o);
  for (uint16_t tag = 30; tag < 40; tag++)
    if (tag < 32 || tag > 35) assert_true(test_opts_has_tag(&w, tag, &crit) && crit);
  wbuf_free(&w);
  /* The fingerprint: a square spelt H,W is the square's line; train_decode
   * exact (the default) is counted in train only, fast not at all (what
   * daemons before the option served). */
  char lines[2048];
  opts_defaults(&o);
  opts_canon(&o, lines, sizeof lines);
  assert_non_null(strstr(lines, "size 224\n"));
  assert_non_null(strstr(lines, "train_decode 1\n"));
  o.width = 224;
  opts_canon(&o, lines, sizeof lines);
  assert_non_null(strstr(lines, "size 224\n"));
  o.mode = BFEED_MODE_EVAL;
  opts_canon(&o, lines, sizeof lines);
  assert_null(strstr(lines, "train_decode"));
  o.mode = BFEED_MODE_TRAIN, o.train_decode = BFEED_TRAIN_DECODE_FAST;
  opts_canon(&o, lines, sizeof lines);
  assert_null(strstr(lines, "train_decode"));
}

static void test_help_names_options(void **state) {
  bfeed_stream_opts d;
  char image[16384], text[4096];
  opts_defaults(&d);
  opts_help(0, &d, image, sizeof image);
  opts_help(1, &d, text, sizeof text);
  for (int i = 0; opts_name(i); i++) {
    const char *name = opts_name(i);
    char flag[64];
    snprintf(flag, sizeof flag, "--%s", name);
    int owned = !strcmp(name, "epochs") || !strcmp(name, "select"); /* commands own them, or libbfeed */
    int in_image = strstr(image, flag) != NULL, in_text = strstr(text, flag) != NULL;
    if (owned ? in_image || in_text : in_image == in_text) fail_msg("%s in --help: image %d text %d", name, in_image, in_text);
  }
  assert_non_null(strstr(image, "--crop-scale LO,HI"));
  assert_non_null(strstr(image, "(0.08,1)"));
  assert_non_null(strstr(image, "--size S|H,W"));
  assert_non_null(strstr(image, "--crop-ratio LO,HI"));
  assert_non_null(strstr(image, "--interpolation bilinear|bicubic|nearest"));
  assert_non_null(strstr(image, "--batch N               samples per batch (64)\n"));
  assert_non_null(strstr(text, "--max-len N"));
}

TB_MAIN(cmocka_unit_test(test_canonical_lines), cmocka_unit_test(test_open_roundtrip),
        cmocka_unit_test(test_crop_scale_by_name), cmocka_unit_test(test_recipe_options),
        cmocka_unit_test(test_help_names_options))
