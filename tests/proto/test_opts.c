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
 *  - crop_scale by name: "LO,HI", refused unless 0 < LO <= HI <= 1;
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
}

/* PROTOCOL.md "canonical form", the options' lines, as the spec writes them. */
static int test_opts_spec_lines(const bfeed_stream_opts *o, char *s, size_t cap) {
  int shuffle = o->shuffle == BFEED_SHUFFLE_ON || (o->shuffle == BFEED_SHUFFLE_AUTO && o->mode == BFEED_MODE_TRAIN);
  int n = snprintf(s, cap,
                   "batch %u\nsize %u\nmode %d\nlayout %d\nnormalize %d\nmean %08x %08x %08x\nstd %08x %08x %08x\n"
                   "seed %llu\nshard %u/%u\nshuffle %d\nkeep_partial %d\npool %d\nmax_len %u\nfixed_len %d\nbucket %u\n",
                   o->batch, o->size, (int)o->mode, (int)o->layout, (int)o->normalize, tb_f32_bits(o->mean[0]),
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

static void test_help_names_options(void **state) {
  bfeed_stream_opts d;
  char image[4096], text[4096];
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
  assert_non_null(strstr(image, "--batch N               samples per batch (64)\n"));
  assert_non_null(strstr(text, "--max-len N"));
}

TB_MAIN(cmocka_unit_test(test_canonical_lines), cmocka_unit_test(test_open_roundtrip),
        cmocka_unit_test(test_crop_scale_by_name), cmocka_unit_test(test_help_names_options))
