/*
 * test_demo_vectors.c -- make-demo's own reader of text word-vector tables
 * (client/cli/demo_vectors.c) against the daemon's loader (wordvec_parse),
 * an independent implementation of the same formats.
 *
 * For generated tables in every text form (GloVe, word2vec text, fastText
 * .vec with a header; BOM, CRLF, blank lines, trailing blanks, duplicates,
 * UTF-8 words) both must read the same words in the same order with the
 * same bf16 rows; for every mutation of them both must agree on accept or
 * refuse; word2vec binary, which the daemon reads, make-demo refuses with
 * a message saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "demo_vectors.h"
#include "splitmix.h"
#include "test_tmpdir.h"
#include "wordvec.h"

typedef struct text {
  char b[1 << 16];
  size_t n;
} text;

/* Append printf-style text to t; k is what snprintf wrote (it must fit). */
static void put_done(text *t, int k) {
  assert_true(k >= 0 && (size_t)k < sizeof t->b - t->n);
  t->n += (size_t)k;
}
#define put(t, ...) put_done((t), snprintf((t)->b + (t)->n, sizeof(t)->b - (t)->n, __VA_ARGS__))

static const char *const words[] = {"the", "cat", "Sat", "été", "Été", "π", "x1", "dup", "a-b", "z"};

/* A table of nw rows of dim values: form 0 GloVe, 1 "V D" header, 2 the
 * same with a BOM, CRLF line ends, blank lines and trailing blanks. The
 * last row repeats the word "dup" with other values (first one wins). */
static void make_table(text *t, int form, int dim, uint64_t seed) {
  int nw = (int)(sizeof words / sizeof words[0]);
  const char *eol = form == 2 ? " \r\n\n" : "\n";
  t->n = 0;
  if (form == 2) put(t, "\xef\xbb\xbf");
  if (form >= 1) put(t, "%d %d%s", nw + 1, dim, eol);
  for (int i = 0; i <= nw; i++) {
    put(t, "%s", i < nw ? words[i] : "dup");
    for (int d = 0; d < dim; d++) {
      double v = ((double)(splitmix64_next(&seed) >> 11) / 9007199254740992.0 - 0.5) * 8;
      put(t, d % 3 == 2 ? " %.9g" : d % 3 == 1 ? "\t%.3e" : " %.4f", v);
    }
    put(t, "%s", eol);
  }
}

static void write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Load p[n] both ways; 1 when both accepted (and agree), 0 when both refused. */
static int both(const char *dir, const void *p, size_t n) {
  char path[128], why[512], why2[512];
  snprintf(path, sizeof path, "%s/t.vec", dir);
  write_file(path, p, n);
  demo_vectors v;
  wordvec w;
  int a = demo_vectors_load(path, &v, why, sizeof why);
  int b = wordvec_parse(p, n, path, 1ull << 30, &w, why2, sizeof why2);
  if ((a < 0) != (b < 0))
    fail_msg("make-demo %s, the daemon %s: %s", a < 0 ? "refused" : "read", b < 0 ? "refused" : "read",
             a < 0 ? why : why2);
  if (a < 0) {
    assert_non_null(strstr(why, path)); /* the message names the file */
    return 0;
  }
  assert_int_equal(v.nwords, w.nwords);
  assert_int_equal(v.dim, w.dim);
  for (uint32_t i = 0; i < v.nwords; i++) {
    size_t len = v.off[i + 1] - v.off[i];
    assert_int_equal(len, w.word_off[i + 1] - w.word_off[i]);
    assert_memory_equal(v.words + v.off[i], w.words + w.word_off[i], len);
    assert_memory_equal(v.rows + (size_t)i * v.dim, wordvec_row(&w, i), v.dim * 2);
    assert_true(demo_vectors_has(&v, v.words + v.off[i], len));
  }
  assert_false(demo_vectors_has(&v, "zzz-not-there", 13));
  demo_vectors_free(&v);
  wordvec_free(&w);
  return 1;
}

static void test_same_table(void **state) {
  tmpdir *d = *state;
  static text t;
  for (int form = 0; form < 3; form++)
    for (int dim = 1; dim <= 7; dim += 3) {
      make_table(&t, form, dim, (uint64_t)(form * 10 + dim));
      assert_int_equal(both(d->path, t.b, t.n), 1);
    }
}

/* Each byte of a table replaced by characters that matter to the formats:
 * both readers accept or both refuse. */
static void test_mutations_agree(void **state) {
  tmpdir *d = *state;
  static text t, m;
  static const char subst[] = {' ', '\n', 'x', '9', '\t', '-', '\r'};
  int accepted = 0, refused = 0;
  for (int form = 0; form < 3; form++) {
    make_table(&t, form, 3, 99);
    for (size_t i = 0; i < t.n; i += 3)
      for (size_t s = 0; s < sizeof subst; s++) {
        memcpy(m.b, t.b, t.n);
        m.n = t.n;
        m.b[i] = subst[s];
        if (both(d->path, m.b, m.n)) accepted++;
        else refused++;
      }
  }
  assert_true(accepted > 100 && refused > 100); /* both outcomes exercised */
}

/* Header counts that do not match the rows, and a header of 0 words. */
static void test_header_counts(void **state) {
  tmpdir *d = *state;
  static const char *const bad[] = {"3 2\na 1 2\nb 1 2\n", "1 2\na 1 2\nb 1 2\n", "0 2\na 1 2\n",
                                    "2 0\na\nb\n", "a 1 2\nb 1\n", "\n\n", " a 1 2\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(both(d->path, bad[i], strlen(bad[i])), 0);
}

/* word2vec binary: the daemon reads it, make-demo says it does not. */
static void test_binary_refused(void **state) {
  tmpdir *d = *state;
  unsigned char b[64];
  size_t n = (size_t)snprintf((char *)b, sizeof b, "2 2\n");
  const float v[4] = {0.25f, -1.5f, 3.0f, 0.125f};
  for (int w = 0; w < 2; w++) {
    b[n++] = (unsigned char)('a' + w), b[n++] = ' ';
    memcpy(b + n, v + 2 * w, 8); /* little-endian float32, as the format has it */
    n += 8;
    b[n++] = '\n';
  }
  wordvec wv;
  char why[512], path[128];
  assert_int_equal(wordvec_parse(b, n, "bin", 1 << 20, &wv, why, sizeof why), 0);
  assert_int_equal(wv.format, WORDVEC_W2V_BINARY);
  wordvec_free(&wv);
  snprintf(path, sizeof path, "%s/b.bin", d->path);
  write_file(path, b, n);
  demo_vectors dv;
  assert_int_equal(demo_vectors_load(path, &dv, why, sizeof why), BFEED_EINVAL);
  assert_non_null(strstr(why, "word2vec binary"));
  assert_non_null(strstr(why, path));
}

static void test_missing_file(void **state) {
  tmpdir *d = *state;
  char path[128], why[512];
  demo_vectors v;
  snprintf(path, sizeof path, "%s/none.vec", d->path);
  assert_int_equal(demo_vectors_load(path, &v, why, sizeof why), BFEED_EIO);
  assert_non_null(strstr(why, "none.vec"));
}

/* The daemon's lowercase folding, from tokenize.c's documented ranges. */
static void test_is_lower(void **state) {
  (void)state;
  assert_true(demo_vectors_is_lower("abc-1", 5));
  assert_false(demo_vectors_is_lower("aBc", 3));
  assert_true(demo_vectors_is_lower("été", strlen("été")));
  assert_false(demo_vectors_is_lower("Été", strlen("Été")));
  assert_true(demo_vectors_is_lower("×", strlen("×"))); /* U+00D7 is no capital */
  assert_false(demo_vectors_is_lower("Ω", strlen("Ω")));
  assert_false(demo_vectors_is_lower("Ж", strlen("Ж")));
  assert_false(demo_vectors_is_lower("Ё", strlen("Ё")));
  assert_true(demo_vectors_is_lower("ж", strlen("ж")));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TMPDIR_TEST(test_same_table),
      TMPDIR_TEST(test_mutations_agree),
      TMPDIR_TEST(test_header_counts),
      TMPDIR_TEST(test_binary_refused),
      TMPDIR_TEST(test_missing_file),
      cmocka_unit_test(test_is_lower),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
