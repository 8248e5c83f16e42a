/*
 * test_wordvec.c -- embedding tables: malformed files, duplicates, the
 * binary cache (hit, rebuild on change, damage, atomic writes).
 *
 * The values themselves are checked against numpy and torch by
 * wordvec_oracle.py; here every malformed case must fail with a
 * message naming the file and the line or byte offset, and never crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "bf16.h"
#include "bfeed_types.h"
#include "wordvec.h"

static char tmpdir[64];

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmpdir, name); }

static void write_file(const char *name, const void *data, size_t len) {
  char p[256];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* Parse bytes as file `name`; expect failure with each fragment in the message. */
static void expect_error(const char *data, size_t len, uint64_t max_bytes, ...) {
  wordvec v;
  char err[512];
  int rc = wordvec_parse((const uint8_t *)data, len, "emb.txt", max_bytes ? max_bytes : WORDVEC_DEFAULT_MAX_BYTES, &v,
                         err, sizeof err);
  if (rc == 0) {
    wordvec_free(&v);
    fail_msg("parsed, expected an error for: %.60s", data);
  }
  if (strncmp(err, "emb.txt", 7) != 0) fail_msg("message does not name the file: %s", err);
  va_list ap;
  va_start(ap, max_bytes);
  for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
    if (!strstr(err, frag)) fail_msg("message '%s' lacks '%s'", err, frag);
  va_end(ap);
}
#define EXPECT_ERROR(s, ...) expect_error((s), sizeof(s) - 1, 0, __VA_ARGS__, NULL)

/* Parse bytes as file `name` with the default limit; it must succeed. */
static void parse_ok(const char *data, size_t len, const char *name, wordvec *w) {
  char err[512];
  if (wordvec_parse((const uint8_t *)data, len, name, WORDVEC_DEFAULT_MAX_BYTES, w, err, sizeof err) != 0)
    fail_msg("%s did not parse: %s", name, err);
}

static void test_malformed_text(void **state) {
  EXPECT_ERROR("", "empty file");
  EXPECT_ERROR("\n\n  \n", "no words");
  EXPECT_ERROR("the 1 2 3\nof 1 2\n", "emb.txt:2:", "'of' has 2 values, expected 3");
  EXPECT_ERROR("the 1 2 3\nof 1 2 3 4\n", "emb.txt:2:", "'of' has 4 values, expected 3");
  EXPECT_ERROR("the 1 2 3\n\nof 1 2 3\nand 1 x 3\n", "emb.txt:4:", "value 2 of 'and' is not a number: 'x'");
  EXPECT_ERROR("the 1 2 3\nof 1 2 3e\n", "emb.txt:2:", "not a number: '3e'");
  EXPECT_ERROR("the 1 2 3\n 1 2 3\n", "emb.txt:2:", "starts with a blank");
  EXPECT_ERROR("word\nother\n", "emb.txt:1:", "dimension 0");
  /* word2vec text: the header's counts against the lines. */
  EXPECT_ERROR("3 0\na\nb\nc\n", "emb.txt:1:", "dimension 0");
  EXPECT_ERROR("0 3\n", "emb.txt:1:", "0 words");
  EXPECT_ERROR("5 2\na 1 2\nb 1 2\n", "announces 5 words but only 2 lines follow");
  EXPECT_ERROR("3 2\na 1 2\n\n\nb 1 2\n", "announces 3 words but the file holds 2", "line 5");
  EXPECT_ERROR("2 2\na 1 2\nb 1 2\nc 1 2\n", "emb.txt:4:", "more words than the 2");
  EXPECT_ERROR("2 2\na 1 2\nb 1\n", "emb.txt:3:", "'b' has 1 values, expected 2");
  /* Absurd headers: beyond the memory limit, or beyond any sane size. */
  EXPECT_ERROR("100000000 300\na 1\n", "emb.txt:1:", "over the table limit", "max_table_bytes");
  EXPECT_ERROR("999999999999999999 5\na 1\n", "emb.txt:1:", "over the");
  EXPECT_ERROR("10 100000\na 1\n", "emb.txt:1:", "dimension 100000");
  expect_error("4 3\na 1 2 3\n", 12, 20, "emb.txt:1:", "24 bytes as bf16", NULL);
}

/* A binary record: word, space, D float32. */
static size_t put_record(char *p, const char *w, const float *v, int d, int newline) {
  size_t n = strlen(w);
  memcpy(p, w, n);
  p[n++] = ' ';
  memcpy(p + n, v, 4 * (size_t)d);
  n += 4 * (size_t)d;
  if (newline) p[n++] = '\n';
  return n;
}

static void test_malformed_binary(void **state) {
  static const float v[3] = {1.5f, -2.0f, 0.25f};
  char b[256];
  wordvec w;
  /* Header count larger than the bytes could hold: refused before parsing. */
  size_t n = (size_t)sprintf(b, "3 3\n");
  n += put_record(b + n, "a", v, 3, 1);
  expect_error(b, n, 0, "emb.txt", "announces 3 words of 3 float32 values, at least 42 bytes, but 15 bytes follow", NULL);
  /* Truncated record: enough bytes in all, the last record cut short. */
  n = (size_t)sprintf(b, "2 3\n");
  n += put_record(b + n, "aaaaaaaaaa", v, 3, 0);
  memcpy(b + n, "b \1\2\3\4\5", 7);
  expect_error(b, n + 7, 0, "emb.txt: byte offset 29:", "record 2 of 2 ('b') is truncated", "5 bytes left", NULL);
  /* The file ends inside a word. */
  n = (size_t)sprintf(b, "2 1\n");
  n += put_record(b + n, "aaaaaaaaaa", v, 1, 1);
  memcpy(b + n, "bbbbbbbbbb", 10);
  expect_error(b, n + 10, 0, "byte offset 20:", "record 2 of 2 is truncated", NULL);
  /* Data after the announced records. */
  n = (size_t)sprintf(b, "1 3\n");
  n += put_record(b + n, "a", v, 3, 1);
  memcpy(b + n, "junk", 4);
  expect_error(b, n + 4, 0, "byte offset 19:", "data after the 1 records", NULL);
  /* An empty word. */
  n = (size_t)sprintf(b, "1 3\n");
  n += put_record(b + n, "", v, 3, 0);
  memset(b + n, 0, 4);
  expect_error(b, n + 4, 0, "byte offset 4:", "empty word", NULL);
  /* Well formed, with and without newlines between records. */
  for (int nl = 0; nl < 2; nl++) {
    n = (size_t)sprintf(b, "2 3\n");
    n += put_record(b + n, "a", v, 3, nl);
    n += put_record(b + n, "bb", v, 3, nl);
    parse_ok(b, n, "emb.bin", &w);
    assert_int_equal(w.format, WORDVEC_W2V_BINARY);
    assert_int_equal(w.nwords, 2);
    assert_int_equal(wordvec_find(&w, "bb", 2), 1);
    assert_int_equal(wordvec_row(&w, 1)[2], bf16_from_f32(0.25f));
    wordvec_free(&w);
  }
}

static void test_duplicates_first_wins(void **state) {
  static const char text[] = "a 1 1\nb 2 2\na 3 3\nc 4 4\nb 5 5\na 6 6\n";
  wordvec w;
  parse_ok(text, sizeof text - 1, "d.txt", &w);
  assert_int_equal(w.nwords, 3);
  assert_int_equal(w.duplicates, 3);
  assert_int_equal(w.format, WORDVEC_GLOVE);
  const char *names[3] = {"a", "b", "c"};
  const float first[3] = {1, 2, 4};
  for (uint32_t i = 0; i < 3; i++) {
    assert_int_equal(wordvec_find(&w, names[i], 1), i);
    assert_int_equal(wordvec_row(&w, i)[0], bf16_from_f32(first[i]));
  }
  assert_int_equal(wordvec_find(&w, "d", 1), WORDVEC_NONE);
  assert_int_equal(wordvec_find(&w, "", 0), WORDVEC_NONE);
  wordvec_free(&w);
}

/* ------------------------------------------------------------------ */
/* The cache                                                           */

static const char glove[] = "the 0.1 0.2 -0.3\nof 1e-2 -1.6713e-02 5\nÜber 1 2 3\nand .5 +2. -0.0\n";

static void load(const char *name, const char *cache_dir, wordvec *w, wordvec_report *rep) {
  char p[256], err[512];
  path_of(p, sizeof p, name);
  wordvec_opts o = {.cache = 1, .cache_dir = cache_dir};
  if (wordvec_load(p, &o, w, rep, err, sizeof err) != 0) fail_msg("%s", err);
}

static void assert_same_table(const wordvec *a, const wordvec *b) {
  assert_int_equal(a->nwords, b->nwords);
  assert_int_equal(a->dim, b->dim);
  assert_int_equal(a->format, b->format);
  assert_memory_equal(a->vectors, b->vectors, (size_t)a->nwords * a->dim * 2);
  assert_memory_equal(a->word_off, b->word_off, ((size_t)a->nwords + 1) * 8);
  assert_memory_equal(a->words, b->words, a->word_off[a->nwords]);
}

static int count_tmp_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) n += strstr(e->d_name, ".tmp.") != NULL;
  if (d) closedir(d);
  return n;
}

static void test_cache_hit_and_rebuild(void **state) {
  write_file("c.txt", glove, sizeof glove - 1);
  wordvec a, b;
  wordvec_report ra, rb;
  load("c.txt", NULL, &a, &ra);
  assert_int_equal(ra.cache, WORDVEC_CACHE_WRITTEN);
  assert_non_null(a.map); /* served from the mapped cache, not the parse buffers */
  assert_non_null(strstr(ra.cache_path, "c.txt.bfwv"));
  load("c.txt", NULL, &b, &rb);
  assert_int_equal(rb.cache, WORDVEC_CACHE_HIT);
  assert_same_table(&a, &b);
  assert_int_equal(wordvec_find(&b, "Über", strlen("Über")), 2);
  wordvec_free(&b);
  assert_int_equal(count_tmp_files(tmpdir), 0);

  /* A new modification time means another version: rebuilt. */
  char p[256];
  path_of(p, sizeof p, "c.txt");
  struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
  assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
  load("c.txt", NULL, &b, &rb);
  assert_int_equal(rb.cache, WORDVEC_CACHE_WRITTEN);
  assert_non_null(strstr(rb.note, "another version"));
  assert_same_table(&a, &b);
  wordvec_free(&b);

  /* New content: the new word is there. */
  static const char more[] = "zebra 9 9 9\n";
  FILE *f = fopen(p, "ab");
  assert_non_null(f);
  fwrite(more, 1, sizeof more - 1, f);
  fclose(f);
  load("c.txt", NULL, &b, &rb);
  assert_int_equal(rb.cache, WORDVEC_CACHE_WRITTEN);
  assert_int_equal(b.nwords, 5);
  assert_int_equal(wordvec_find(&b, "zebra", 5), 4);
  assert_int_equal(wordvec_row(&b, 4)[1], bf16_from_f32(9.0f));
  wordvec_free(&b);
  wordvec_free(&a);
}

static void test_cache_dir_and_failure(void **state) {
  char dir[256], p1[256], p2[256];
  path_of(dir, sizeof dir, "caches");
  assert_int_equal(mkdir(dir, 0755), 0);
  write_file("d.txt", glove, sizeof glove - 1);
  path_of(p1, sizeof p1, "sub");
  assert_int_equal(mkdir(p1, 0755), 0);
  write_file("sub/d.txt", "other 1 2\n", 10);
  /* The same base name in two folders: two cache files. */
  path_of(p1, sizeof p1, "d.txt");
  path_of(p2, sizeof p2, "sub/d.txt");
  char c1[4096], c2[4096];
  assert_int_equal(wordvec_cache_path(p1, dir, c1, sizeof c1), 0);
  assert_int_equal(wordvec_cache_path(p2, dir, c2, sizeof c2), 0);
  assert_string_not_equal(c1, c2);
  assert_non_null(strstr(c1, "/caches/d.txt."));
  wordvec w;
  wordvec_report r;
  load("d.txt", dir, &w, &r);
  assert_int_equal(r.cache, WORDVEC_CACHE_WRITTEN);
  assert_string_equal(r.cache_path, c1);
  wordvec_free(&w);
  load("d.txt", dir, &w, &r);
  assert_int_equal(r.cache, WORDVEC_CACHE_HIT);
  wordvec_free(&w);
  /* A cache folder that cannot be written: the table still loads. */
  path_of(p1, sizeof p1, "no/such/folder");
  load("d.txt", p1, &w, &r);
  assert_int_equal(r.cache, WORDVEC_CACHE_FAILED);
  assert_non_null(strstr(r.note, "no/such/folder"));
  assert_int_equal(w.nwords, 4);
  assert_null(w.map);
  wordvec_free(&w);
}

/* Damage the cache file at byte `at` (xor), or truncate it to `at` bytes. */
static void damage(const char *cache, long at, int truncate_it) {
  if (truncate_it) {
    assert_int_equal(truncate(cache, at), 0);
    return;
  }
  FILE *f = fopen(cache, "r+b");
  assert_non_null(f);
  fseek(f, at, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

static void test_cache_damaged(void **state) {
  write_file("e.txt", glove, sizeof glove - 1);
  wordvec good, w;
  wordvec_report r;
  load("e.txt", NULL, &good, &r);
  char cache[4096];
  snprintf(cache, sizeof cache, "%s", r.cache_path);
  struct stat st;
  assert_int_equal(stat(cache, &st), 0);
  const struct {
    long at;
    int truncate_it;
    const char *why;
  } cases[] = {
      {0, 0, "not a bfeed vectors cache"},          /* magic */
      {20, 0, "checksum"},                           /* a header field */
      {st.st_size - 1, 1, "damaged"},                /* a byte short */
      {100, 1, "damaged"},                           /* shorter than its header */
      {st.st_size - 3, 0, "damaged"},                /* a word's bytes: found elsewhere than its hash leads */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    damage(cache, cases[i].at, cases[i].truncate_it);
    load("e.txt", NULL, &w, &r);
    if (r.cache != WORDVEC_CACHE_WRITTEN || !strstr(r.note, cases[i].why))
      fail_msg("case %zu: cache state %d, note '%s'", i, (int)r.cache, r.note);
    assert_same_table(&good, &w);
    wordvec_free(&w);
  }
  wordvec_free(&good);
}

/* Every byte of a cache outside the vectors, damaged: the check refuses it,
 * or what it accepts still finds every word where it is. */
static void test_cache_check_every_byte(void **state) {
  wordvec w;
  char err[256];
  parse_ok(glove, sizeof glove - 1, "g", &w);
  wordvec_source src = {1, 2, 3};
  char p[256];
  path_of(p, sizeof p, "check.bfwv");
  assert_int_equal(wordvec_cache_write(&w, &src, p, err, sizeof err), 0);
  size_t n;
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  uint8_t *buf = malloc(1 << 16);
  n = fread(buf, 1, 1 << 16, f);
  fclose(f);
  wordvec view;
  assert_int_equal(wordvec_cache_check(buf, n, &src, &view, err, sizeof err), 0);
  wordvec_source other = {1, 2, 4};
  assert_int_equal(wordvec_cache_check(buf, n, &other, &view, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "another version"));
  size_t vec_end = 256 + (size_t)w.nwords * w.dim * 2;
  int refused = 0;
  for (size_t at = 0; at < n; at++) {
    if (at >= 256 && at < vec_end) continue; /* any bits are a valid bf16 value */
    for (int bit = 0; bit < 8; bit++) {
      buf[at] ^= (uint8_t)(1u << bit);
      if (wordvec_cache_check(buf, n, NULL, &view, err, sizeof err) < 0) {
        refused++;
      } else {
        for (uint32_t i = 0; i < view.nwords; i++) {
          const char *word = view.words + view.word_off[i];
          size_t len = (size_t)(view.word_off[i + 1] - view.word_off[i]);
          assert_int_equal(wordvec_find(&view, word, len), i);
        }
      }
      buf[at] ^= (uint8_t)(1u << bit);
    }
  }
  assert_true(refused > 0);
  for (size_t k = 0; k < n; k += 7) assert_int_equal(wordvec_cache_check(buf, k, NULL, &view, err, sizeof err), BFEED_EDATASET);
  free(buf);
  wordvec_free(&w);
}

static int setup(void **state) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_wordvec.XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_malformed_text),
      cmocka_unit_test(test_malformed_binary),
      cmocka_unit_test(test_duplicates_first_wins),
      cmocka_unit_test(test_cache_hit_and_rebuild),
      cmocka_unit_test(test_cache_dir_and_failure),
      cmocka_unit_test(test_cache_damaged),
      cmocka_unit_test(test_cache_check_every_byte),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
