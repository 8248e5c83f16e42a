/*
 * test_text_sources.c -- tokenization, labels, text sources, manifests,
 * .npy headers and tokenized samples, against expectations written out by
 * hand from the documented rules (the end-to-end numbers are checked
 * against numpy by tests/integration/wordvec_fetch_oracle.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "labelset.h"
#include "manifest.h"
#include "npy_source.h"
#include "text_source.h"
#include "textset.h"
#include "tokenize.h"
#include "wordvec.h"

/* Tokens of s under o, joined by '|'. */
static void tokens(const char *s, int lowercase, int punct, char *out, size_t cap) {
  tokenize_opts o = {lowercase, punct};
  tokenize_iter it;
  const char *t;
  size_t n, k = 0;
  char low[256];
  tokenize_init(&it, s, strlen(s), &o);
  out[0] = 0;
  while (tokenize_next(&it, &t, &n)) {
    assert_true(n > 0 && n < sizeof low);
    if (lowercase) tokenize_lower(low, t, n), t = low;
    k += (size_t)snprintf(out + k, cap - k, "%s%.*s", k ? "|" : "", (int)n, t);
  }
}

static void test_tokenize(void **state) {
  char out[512];
  tokens("  Hello,\tworld!\n\r\vdon't  ", 0, 0, out, sizeof out);
  assert_string_equal(out, "Hello,|world!|don't");
  tokens("Hello, world! don't (a-b) \"q\"", 0, 1, out, sizeof out);
  assert_string_equal(out, "Hello|,|world|!|don|'|t|(|a|-|b|)|\"|q|\"");
  tokens("...", 0, 1, out, sizeof out);
  assert_string_equal(out, ".|.|.");
  tokens("ÀÉÎ ΣΩ ДЖЁЀ Straße ×÷ ẞ Ÿ", 1, 0, out, sizeof out);
  /* Latin-1, Greek and Cyrillic capitals lowered; × (U+00D7), ẞ (U+1E9E,
   * three bytes) and Ÿ (U+0178, outside the ranges) kept. */
  assert_string_equal(out, "àéî|σω|джёѐ|straße|×÷|ẞ|Ÿ");
  tokens("ÉTÉ,Été", 1, 1, out, sizeof out);
  assert_string_equal(out, "été|,|été");
  /* Non-ASCII bytes are never separators; a broken sequence is kept. */
  tokens("a\xc2\xa0" "b \xc3", 1, 1, out, sizeof out);
  assert_string_equal(out, "a\xc2\xa0" "b|\xc3");
}

static void test_labels(void **state) {
  labelset l = {0};
  uint32_t id;
  const char *names[] = {"pos", "neg", "pos", "neutral", "neg"};
  uint32_t want[] = {2, 0, 2, 1, 0};
  uint32_t got[5];
  for (int i = 0; i < 5; i++) assert_int_equal(labelset_add(&l, names[i], strlen(names[i]), &got[i]), 0);
  assert_int_equal(labelset_finish(&l, 1), 0);
  assert_int_equal(l.numeric, 0);
  assert_int_equal(l.nclasses, 3);
  for (int i = 0; i < 5; i++) assert_int_equal(l.map[got[i]], want[i]);
  assert_string_equal(l.classes[0], "neg");
  labelset_free(&l);

  /* Plain whole numbers: the label is the number, classes = max + 1. */
  const char *nums[] = {"3", "0", "10", "3"};
  for (int i = 0; i < 4; i++) assert_int_equal(labelset_add(&l, nums[i], strlen(nums[i]), &got[i]), 0);
  assert_int_equal(labelset_finish(&l, 1), 0);
  assert_int_equal(l.numeric, 1);
  assert_int_equal(l.nclasses, 11);
  assert_int_equal(l.map[got[0]], 3);
  assert_int_equal(l.map[got[2]], 10);
  assert_string_equal(l.classes[10], "10");
  labelset_free(&l);

  /* "07" is not written plainly; folders never count as numbers. */
  const char *mixed[] = {"7", "07"};
  for (int i = 0; i < 2; i++) assert_int_equal(labelset_add(&l, mixed[i], strlen(mixed[i]), &id), 0);
  assert_int_equal(labelset_finish(&l, 1), 0);
  assert_int_equal(l.numeric, 0);
  assert_string_equal(l.classes[0], "07");
  labelset_free(&l);
  for (int i = 0; i < 2; i++) assert_int_equal(labelset_add(&l, nums[i], strlen(nums[i]), &id), 0);
  assert_int_equal(labelset_finish(&l, 0), 0);
  assert_int_equal(l.numeric, 0);
  assert_string_equal(l.classes[0], "0");
  assert_string_equal(l.classes[1], "3");
  labelset_free(&l);
}

/* Records as "label=text;" strings. */
typedef struct collect {
  char buf[1024];
  size_t n;
} collect;

static int on_record(void *ctx, const text_record *r, char *err, size_t errlen) {
  collect *c = ctx;
  c->n += (size_t)snprintf(c->buf + c->n, sizeof c->buf - c->n, "%.*s=%.*s;", (int)r->label_len, r->label,
                           (int)r->text_len, r->text);
  return 0;
}

static int parse(const char *s, text_format f, int pick, collect *c, char *err, size_t errlen) {
  text_source_opts o = {f, pick, NULL};
  memset(c, 0, sizeof *c);
  return text_source_parse(s, strlen(s), "in.txt", &o, on_record, c, err, errlen);
}

static void test_text_sources(void **state) {
  collect c;
  char err[256];
  assert_int_equal(parse("__label__pos good film\n\n__label__a __label__b  two labels\r\n", TEXT_AUTO, 0, &c, err, sizeof err), 0);
  assert_string_equal(c.buf, "pos=good film;a=two labels;");
  assert_int_equal(parse("__label__a __label__b __label__c x\n", TEXT_FASTTEXT, -1, &c, err, sizeof err), 0);
  assert_string_equal(c.buf, "c=x;");
  assert_int_equal(parse("__label__a __label__b __label__c x y __label__d\n", TEXT_FASTTEXT, 2, &c, err, sizeof err), 0);
  assert_string_equal(c.buf, "b=x y __label__d;");
  assert_int_equal(parse("pos\tgood\tfilm\n  neg \tbad\n", TEXT_AUTO, 0, &c, err, sizeof err), 0);
  assert_string_equal(c.buf, "pos=good\tfilm;neg=bad;");

  assert_int_equal(parse("__label__a x\n\nno label here\n", TEXT_AUTO, 0, &c, err, sizeof err), BFEED_EDATASET);
  assert_string_equal(err, "in.txt:3: no __label__ at the start of the line");
  assert_int_equal(parse("__label__a __label__b x\n", TEXT_FASTTEXT, 3, &c, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "in.txt:1: the line has 2 labels"));
  assert_int_equal(parse("a\tx\nb x\n", TEXT_AUTO, 0, &c, err, sizeof err), BFEED_EDATASET);
  assert_string_equal(err, "in.txt:2: no tab: expected label<TAB>text");
  assert_int_equal(parse("\tx\n", TEXT_TSV, 0, &c, err, sizeof err), BFEED_EDATASET);
  assert_string_equal(err, "in.txt:1: empty label");
  assert_int_equal(parse("just words\n", TEXT_AUTO, 0, &c, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "in.txt: cannot tell the format"));
  char nul[] = "a\0b\tx\n";
  text_source_opts o = {TEXT_TSV, 0, NULL};
  assert_int_equal(text_source_parse(nul, sizeof nul - 1, "in.txt", &o, on_record, &c, err, sizeof err), BFEED_EDATASET);
  assert_string_equal(err, "in.txt:1: the label holds a NUL byte");
}

static int on_manifest(void *ctx, const manifest_record *r, char *err, size_t errlen) {
  collect *c = ctx;
  c->n += (size_t)snprintf(c->buf + c->n, sizeof c->buf - c->n, "%.*s|%.*s|%.*s;", (int)r->image_len, r->image,
                           (int)r->label_len, r->label, (int)r->text_len, r->text);
  return 0;
}

static void test_manifest(void **state) {
  collect c = {0};
  char err[256];
  const char *ok = "img/a.jpg\tcat\ta small cat\n\nb.jpg\t1\ttabs\tinside\r\n";
  assert_int_equal(manifest_parse(ok, strlen(ok), "m.tsv", on_manifest, &c, err, sizeof err), 0);
  assert_string_equal(c.buf, "img/a.jpg|cat|a small cat;b.jpg|1|tabs\tinside;");
  const char *bad = "a.jpg\tcat\tx\nb.jpg cat text\n";
  assert_int_equal(manifest_parse(bad, strlen(bad), "m.tsv", on_manifest, &c, err, sizeof err), BFEED_EDATASET);
  assert_string_equal(err, "m.tsv:2: expected image_path<TAB>label<TAB>text");
  const char *empty = "\tcat\tx\n";
  assert_int_equal(manifest_parse(empty, strlen(empty), "m.tsv", on_manifest, &c, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "m.tsv:1: the image path is empty"));
}

/* A .npy file in memory: magic, version, header padded to 64, data. */
static size_t npy(uint8_t *out, int major, const char *dict, size_t data_bytes) {
  size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
  hl += (64 - (pre + hl) % 64) % 64;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major;
  out[7] = 0;
  out[8] = (uint8_t)hl;
  out[9] = (uint8_t)(hl >> 8);
  if (major != 1) out[10] = out[11] = 0;
  memset(out + pre, ' ', hl);
  memcpy(out + pre, dict, strlen(dict));
  out[pre + hl - 1] = '\n';
  memset(out + pre + hl, 0, data_bytes);
  return pre + hl + data_bytes;
}

static void expect_npy(int major, const char *dict, size_t data, int ok, const char *frag) {
  uint8_t buf[4096];
  size_t n = npy(buf, major, dict, data);
  npy_source_header h;
  char err[256];
  int rc = npy_source_parse_header(buf, n, "f.npy", &h, err, sizeof err);
  if (ok && rc != 0) fail_msg("refused %s: %s", dict, err);
  if (!ok && rc == 0) fail_msg("accepted %s", dict);
  if (!ok && (!strstr(err, "f.npy: byte offset") || !strstr(err, frag))) fail_msg("message '%s' lacks '%s'", err, frag);
}

static void test_npy_headers(void **state) {
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48, 1, NULL);
  expect_npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4)}", 96, 1, NULL);
  expect_npy(1, "{\"shape\": (5L,), \"descr\": \"<i8\", \"fortran_order\": True}", 40, 1, NULL);
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 47, 0, "need 48 bytes of data, the file has 47");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 49, 0, "need 48 bytes");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False}", 0, 0, "lacks shape");
  expect_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", 12, 0, "expected a quoted string");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': maybe, 'shape': (3,)}", 12, 0, "True or False");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4)}", 96, 0, "more than 3 dimensions");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4, 0, "a scalar");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 99999999)}", 0, 0, "overflows");
  expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", 12, 0, "unknown header key");
  expect_npy(1, "{'descr': 'O', 'fortran_order': False, 'shape': (3,)}", 24, 0, "dtype 'O' is not supported");
  expect_npy(4, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 12, 0, "version 4");
  uint8_t buf[256];
  size_t n = npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 12);
  npy_source_header h;
  char err[256];
  buf[8] = 0xff; /* a header longer than the file */
  assert_int_equal(npy_source_parse_header(buf, n, "f.npy", &h, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "byte offset 8: the header claims"));
  memcpy(buf, "\x93NUMPX", 6);
  assert_int_equal(npy_source_parse_header(buf, n, "f.npy", &h, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "no \\x93NUMPY magic"));
  for (size_t k = 0; k < n; k++) npy_source_parse_header(buf, k, "f.npy", &h, err, sizeof err); /* prefixes: no crash */
}

static void test_textset_oov(void **state) {
  static const char table[] = "the 1 0\ncat 0 1\n<unk> 5 5\nété 2 2\n";
  wordvec v;
  char err[256];
  assert_int_equal(wordvec_parse((const uint8_t *)table, sizeof table - 1, "t", WORDVEC_DEFAULT_MAX_BYTES, &v, err,
                                 sizeof err),
                   0);
  const char *text = "The cat, zzz the ÉTÉ";
  struct {
    int oov, lower, punct;
    uint32_t want[8];
    uint32_t n;
    uint64_t oov_count;
  } cases[] = {
      {TEXTSET_OOV_SKIP, 0, 0, {0}, 1, 4},                          /* only "the" */
      {TEXTSET_OOV_SKIP, 1, 1, {0, 1, 0, 3}, 4, 2},                 /* , and zzz skipped */
      {TEXTSET_OOV_ZERO, 1, 1, {0, 1, TEXTSET_ZERO, TEXTSET_ZERO, 0, 3}, 6, 2},
      {TEXTSET_OOV_UNK, 0, 1, {2, 1, 2, 2, 0, 2}, 6, 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    textset t = {0};
    textset_opts o = {{cases[i].lower, cases[i].punct}, cases[i].oov, 2};
    assert_int_equal(textset_add(&t, &v, &o, text, strlen(text)), 0);
    assert_int_equal(textset_add(&t, &v, &o, "", 0), 0);
    textset_finish(&t);
    assert_int_equal(t.n, 2);
    assert_int_equal(textset_len(&t, 0), cases[i].n);
    assert_int_equal(textset_len(&t, 1), 0);
    assert_int_equal(t.oov, cases[i].oov_count);
    assert_int_equal(t.longest, cases[i].n);
    assert_memory_equal(textset_ids(&t, 0), cases[i].want, cases[i].n * sizeof(uint32_t));
    textset_free(&t);
  }
  wordvec_free(&v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tokenize),       cmocka_unit_test(test_labels),
      cmocka_unit_test(test_text_sources),   cmocka_unit_test(test_manifest),
      cmocka_unit_test(test_npy_headers),    cmocka_unit_test(test_textset_oov),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
