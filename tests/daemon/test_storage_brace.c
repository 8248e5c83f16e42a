/*
 * test_storage_brace.c -- brace expansion of shard patterns
 * (storage/storage_brace.c): expansions against bash's own brace
 * expansion where the two agree, the documented refusals where bash would
 * keep the text, the limits, and the caller's list left as it was on a
 * failure.
 *
 * The expected names were produced while writing this test by bash 5.2
 * itself, in an empty folder with globbing off:
 *     bash -c "set -f; for w in PATTERN; do printf '\"%s\", ' \"\$w\"; done"
 * and for the long ones, a 64-bit FNV-1a hash of bash's names each
 * followed by '\n' (bash -c "set -f; printf '%s\n' PATTERN" | python3 ...).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "storage_brace.h"

static const char *const tb_train[] = {"train-000000.tar", "train-000001.tar", "train-000002.tar", "train-000003.tar",
                                       NULL};
static const char *const tb_unpadded[] = {"x0y", "x1y", "x2y", "x3y", "x4y", "x5y",
                                          "x6y", "x7y", "x8y", "x9y", "x10y", NULL};
static const char *const tb_pad_hi[] = {"x001", "x002", "x003", "x004", "x005", "x006", "x007", "x008", "x009",
                                        "x010", NULL};
static const char *const tb_pad_cross[] = {"x008", "x009", "x010", "x011", "x012", NULL};
static const char *const tb_pad_lo[] = {"x000", "x001", "x002", "x003", "x004", "x005", NULL};
static const char *const tb_down[] = {"x5", "x4", "x3", "x2", "x1", NULL};
static const char *const tb_down_pad[] = {"x05", "x04", "x03", "x02", "x01", NULL};
static const char *const tb_empty_item[] = {"xa", "x", "xb", NULL};
static const char *const tb_two[] = {"xa1y", "xa2y", "xb1y", "xb2y", NULL};
static const char *const tb_dots_item[] = {"xa..b", "xc", NULL};
static const char *const tb_commas[] = {"x", "x", NULL};
static const char *const tb_s3[] = {
    "s3://bucket/train/shard-00-a.tar", "s3://bucket/train/shard-00-b.tar", "s3://bucket/train/shard-01-a.tar",
    "s3://bucket/train/shard-01-b.tar", "s3://bucket/train/shard-02-a.tar", "s3://bucket/train/shard-02-b.tar",
    "s3://bucket/val/shard-00-a.tar",   "s3://bucket/val/shard-00-b.tar",   "s3://bucket/val/shard-01-a.tar",
    "s3://bucket/val/shard-01-b.tar",   "s3://bucket/val/shard-02-a.tar",   "s3://bucket/val/shard-02-b.tar",
    NULL};
static const char *const tb_one[] = {"x7", NULL};
static const char *const tb_widths[] = {"x0999", "x1000", "x1001", NULL};
static const char *const tb_down_digits[] = {"x10", "x9", "x8", NULL};
static const char *const tb_bare[] = {"a", "b", NULL};
static const char *const tb_glob[] = {"data/a/*.tar", "data/b/*.tar", NULL};
static const char *const tb_bracket_item[] = {"x[ab]?", "xc?", NULL};
static const char *const tb_three[] = {"1c3", "1c2", "1c1", "1b3", "1b2", "1b1", "1a3", "1a2", "1a1",
                                       "2c3", "2c2", "2c1", "2b3", "2b2", "2b1", "2a3", "2a2", "2a1",
                                       "3c3", "3c2", "3c1", "3b3", "3b2", "3b1", "3a3", "3a2", "3a1", NULL};
static const char *const tb_plain[] = {"plain/path.tar", NULL};

static void tb_expect(const char *pattern, const char *const *want) {
  strlist l = {0};
  char err[512] = "";
  int rc = storage_brace_expand(pattern, &l, err, sizeof err);
  if (rc != 0) fail_msg("%s: %d %s", pattern, rc, err);
  size_t n = 0;
  while (want[n]) n++;
  if (l.n != n) fail_msg("%s: %zu names, bash gives %zu", pattern, l.n, n);
  for (size_t i = 0; i < n; i++) assert_string_equal(l.v[i], want[i]);
  strlist_free(&l);
}

static void test_bash_agrees(void **state) {
  (void)state;
  tb_expect("train-{000000..000003}.tar", tb_train);
  tb_expect("x{0..10}y", tb_unpadded); /* "0" alone is no zero padding */
  tb_expect("x{1..010}", tb_pad_hi);
  tb_expect("x{8..012}", tb_pad_cross);
  tb_expect("x{000..5}", tb_pad_lo);
  tb_expect("x{5..1}", tb_down);
  tb_expect("x{05..1}", tb_down_pad);
  tb_expect("x{a,,b}", tb_empty_item);
  tb_expect("x{a,b}{1,2}y", tb_two);
  tb_expect("x{a..b,c}", tb_dots_item); /* a comma makes it a list */
  tb_expect("x{,}", tb_commas);
  tb_expect("s3://bucket/{train,val}/shard-{00..02}-{a,b}.tar", tb_s3);
  tb_expect("x{7..7}", tb_one);
  tb_expect("x{0999..1001}", tb_widths);
  tb_expect("x{10..8}", tb_down_digits);
  tb_expect("{a,b}", tb_bare);
  tb_expect("data/{a,b}/*.tar", tb_glob); /* wildcards are left to the glob */
  tb_expect("x{[ab],c}?", tb_bracket_item);
  tb_expect("{1..3}{c,b,a}{3..1}", tb_three);
  tb_expect("plain/path.tar", tb_plain);
}

/* FNV-1a over every name, each followed by '\n': bash's printf '%s\n'. */
static uint64_t tb_hash(const strlist *l) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < l->n; i++)
    for (const char *p = l->v[i];; p++) {
      h = (h ^ (unsigned char)(*p ? *p : '\n')) * 0x100000001b3ull;
      if (!*p) break;
    }
  return h;
}

static void tb_expect_hash(const char *pattern, size_t n, uint64_t hash, const char *first, const char *last) {
  strlist l = {0};
  char err[512] = "";
  int rc = storage_brace_expand(pattern, &l, err, sizeof err);
  if (rc != 0) fail_msg("%s: %d %s", pattern, rc, err);
  assert_int_equal(l.n, n);
  assert_string_equal(l.v[0], first);
  assert_string_equal(l.v[n - 1], last);
  assert_int_equal(tb_hash(&l), hash);
  strlist_free(&l);
}

/* The usual shard set, and the largest expansion allowed (exactly
 * STORAGE_BRACE_MAX names), against bash's. */
static void test_bash_agrees_long(void **state) {
  (void)state;
  tb_expect_hash("train-{000000..000127}.tar", 128, 0x5f7924973aa7c499ull, "train-000000.tar", "train-000127.tar");
  tb_expect_hash("n{0000..1200}.{tar,idx}", 2402, 0x494755de7a705071ull, "n0000.tar", "n1200.idx");
  tb_expect_hash("{0..999}{0..999}", STORAGE_BRACE_MAX, 0xe6fd8eda0d7216c5ull, "00", "999999");
}

static void tb_expect_error(const char *pattern, int code, const char *part) {
  strlist l = {0};
  char err[512] = "";
  int rc = storage_brace_expand(pattern, &l, err, sizeof err);
  if (rc != code) fail_msg("%s: %d, not %d (%s)", pattern, rc, code, err);
  assert_int_equal(l.n, 0);
  if (strncmp(err, pattern, strlen(pattern)) != 0) fail_msg("%s: the message does not name it: %s", pattern, err);
  if (!strstr(err, part)) fail_msg("%s: \"%s\" not in \"%s\"", pattern, part, err);
  strlist_free(&l);
}

/* Where bash keeps the text, a pattern is refused, saying where. */
static void test_refused(void **state) {
  (void)state;
  tb_expect_error("train-{000..009.tar", BFEED_EDATASET, "'{' at offset 6 has no '}'");
  tb_expect_error("train-000..009}.tar", BFEED_EDATASET, "'}' at offset 14 closes no '{'");
  tb_expect_error("a{b,c}}", BFEED_EDATASET, "'}' at offset 6 closes no '{'");
  tb_expect_error("a{b,{c,d}}", BFEED_EDATASET, "'{' at offset 4 is inside the braces opened at offset 1");
  tb_expect_error("a{b,{c,d}}", BFEED_EDATASET, "do not nest");
  tb_expect_error("shard{}.tar", BFEED_EDATASET, "empty braces at offset 5");
  tb_expect_error("a{b}", BFEED_EDATASET, "{b} at offset 1 is neither a list");
  tb_expect_error("a{a..e}", BFEED_EDATASET, "neither a list");     /* no letter ranges */
  tb_expect_error("a{1..9..2}", BFEED_EDATASET, "neither a list");  /* no steps */
  tb_expect_error("a{-1..2}", BFEED_EDATASET, "neither a list");    /* no signs */
  tb_expect_error("a{1..}", BFEED_EDATASET, "neither a list");
  tb_expect_error("a{..1}", BFEED_EDATASET, "neither a list");
  tb_expect_error("a{ 1..2}", BFEED_EDATASET, "neither a list");
  tb_expect_error("a{1..1234567890123456789}", BFEED_EDATASET, "at most 18 digits");
  /* A bracket expression's braces are text, but only inside it. */
  tb_expect_error("x[{,]}{1,2}", BFEED_EDATASET, "'}' at offset 5 closes no '{'");
}

static const char *const tb_literal_open[] = {"x[{]a", "x[{]b", NULL};
static const char *const tb_literal_class[] = {"x[[:alpha:]{]a", "x[[:alpha:]{]b", NULL};
static const char *const tb_literal_close[] = {"x[!]}]a", "x[!]}]b", NULL};
static const char *const tb_unclosed_bracket[] = {"x[a", "x[b", NULL};
static const char *const tb_bracket_comma[] = {"x[,]", "y", NULL};

/* What bash does not do: a glob's bracket expression keeps its braces and
 * commas as text (a '[' without a ']' is text, as fnmatch has it). */
static void test_brackets(void **state) {
  (void)state;
  tb_expect("x[{]{a,b}", tb_literal_open);
  tb_expect("x[[:alpha:]{]{a,b}", tb_literal_class);
  tb_expect("x[!]}]{a,b}", tb_literal_close);
  tb_expect("x[{a,b}", tb_unclosed_bracket);
  tb_expect("{x[,],y}", tb_bracket_comma);
  static const char *const alone[] = {"[}]x", NULL};
  tb_expect("[}]x", alone);
}

static void test_limits(void **state) {
  (void)state;
  tb_expect_error("{0..999}{0..999}{0,1}", BFEED_ETOOBIG, "more than 1000000 names");
  tb_expect_error("x{0..1000000}", BFEED_ETOOBIG, "more than 1000000 names");
  /* Refused by count at once, with no walk over the numbers. */
  tb_expect_error("{0..999999999999999999}", BFEED_ETOOBIG, "more than 1000000 names");
  char many[20 * 22 + 1] = "";
  for (int i = 0; i < 20; i++) strcat(many, "{000000000..999999999}");
  tb_expect_error(many, BFEED_ETOOBIG, "more than 1000000 names");
  /* A million names of 200 bytes and more: over STORAGE_BRACE_MAX_BYTES. */
  char longname[256];
  memset(longname, 'x', 200);
  strcpy(longname + 200, "{0..999}{0..999}");
  tb_expect_error(longname, BFEED_ETOOBIG, "MiB of names");
}

/* Names are appended to what out holds; a failure leaves it as it was. */
static void test_appends(void **state) {
  (void)state;
  strlist l = {0};
  char err[256];
  assert_int_equal(strlist_push(&l, strdup("before")), 0);
  assert_int_equal(storage_brace_expand("a{1,2}", &l, err, sizeof err), 0);
  assert_int_equal(l.n, 3);
  assert_string_equal(l.v[0], "before");
  assert_string_equal(l.v[2], "a2");
  assert_int_equal(storage_brace_expand("a{1,2", &l, err, sizeof err), BFEED_EDATASET);
  assert_int_equal(storage_brace_expand("{0..999}{0..999}{0..9}", &l, err, sizeof err), BFEED_ETOOBIG);
  assert_int_equal(l.n, 3);
  assert_int_equal(storage_brace_expand("", &l, err, sizeof err), 0); /* no braces: itself */
  assert_int_equal(l.n, 4);
  assert_string_equal(l.v[3], "");
  strlist_free(&l);
  /* A message cut to its buffer, and none at all. */
  assert_int_equal(storage_brace_expand("a{b", &l, err, 8), BFEED_EDATASET);
  assert_int_equal(strlen(err), 7);
  assert_int_equal(storage_brace_expand("a{b", &l, NULL, 0), BFEED_EDATASET);
  assert_int_equal(l.n, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bash_agrees), cmocka_unit_test(test_bash_agrees_long), cmocka_unit_test(test_refused),
      cmocka_unit_test(test_brackets),    cmocka_unit_test(test_limits),           cmocka_unit_test(test_appends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
