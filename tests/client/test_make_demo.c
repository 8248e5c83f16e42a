/*
 * test_make_demo.c -- the demo dataset generator.
 *
 * Run without arguments: cmocka checks of determinism, counts, layout and
 * the refusal to write into a non-empty directory. Run as
 * `test_make_demo --generate DIR`: writes the default dataset into DIR for
 * tests/client/demo_oracle.py (decodability, variety, learnability).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_files.h"
#include "test_tmpdir.h"

#include "bfeed.h"
#include "make_demo.h"

static const char *const splits[2] = {"train", "val"};


/* Small images keep the test quick; the oracle covers the defaults. */
static void small_opts(make_demo_opts *o) {
  make_demo_opts_init(o);
  o->train_per_class = 4;
  o->val_per_class = 2;
  o->min_side = 40;
  o->max_side = 120;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static void file_path(char *out, size_t cap, const char *root, int split, int cls, int i) {
  snprintf(out, cap, "%s/%s/%s/%04d.jpg", root, splits[split], make_demo_class_name(cls), i);
}

/* Compare the first n[split] files of every class of two datasets; returns
 * how many pairs differ. Missing files fail the test. */
static int count_differing(const char *a, const char *b, const int n[2]) {
  int differ = 0;
  for (int s = 0; s < 2; s++)
    for (int c = 0; c < MAKE_DEMO_NCLASSES; c++)
      for (int i = 0; i < n[s]; i++) {
        char pa[256], pb[256];
        size_t la = 0, lb = 0;
        file_path(pa, sizeof pa, a, s, c, i);
        file_path(pb, sizeof pb, b, s, c, i);
        unsigned char *da = test_files_read(pa, &la), *db = test_files_read(pb, &lb);
        assert_non_null(da);
        assert_non_null(db);
        differ += la != lb || memcmp(da, db, la) != 0;
        free(da);
        free(db);
      }
  return differ;
}

static void make_sub(char *out, size_t cap, const tmpdir *t, const char *name) {
  snprintf(out, cap, "%s/%s", t->path, name);
}

static void test_class_names(void **state) {
  assert_string_equal(make_demo_class_name(0), "red_horizontal");
  assert_string_equal(make_demo_class_name(7), "gray_vertical");
  assert_null(make_demo_class_name(-1));
  assert_null(make_demo_class_name(MAKE_DEMO_NCLASSES));
  for (int i = 0; i < MAKE_DEMO_NCLASSES; i++)
    for (int j = i + 1; j < MAKE_DEMO_NCLASSES; j++)
      assert_string_not_equal(make_demo_class_name(i), make_demo_class_name(j));
}

/* Layout and counts: exactly the promised files, each a JPEG whose header
 * gives a size in range, nothing else (no temporaries), and stats agree. */
static void test_layout(void **state) {
  tmpdir *t = *state;
  make_demo_opts o;
  small_opts(&o);
  char dir[128], err[256] = "";
  make_sub(dir, sizeof dir, t, "a/b/c"); /* parents are created */
  make_demo_stats st;
  assert_int_equal(make_demo(dir, &o, &st, err, sizeof err), 0);
  assert_int_equal(st.files, MAKE_DEMO_NCLASSES * (o.train_per_class + o.val_per_class));
  assert_int_equal(count_entries(dir), 2);

  tjhandle tj = tjInitDecompress();
  assert_non_null(tj);
  int n[2] = {o.train_per_class, o.val_per_class};
  uint64_t bytes = 0;
  int gray = 0;
  for (int s = 0; s < 2; s++) {
    char sdir[256];
    snprintf(sdir, sizeof sdir, "%s/%s", dir, splits[s]);
    assert_int_equal(count_entries(sdir), MAKE_DEMO_NCLASSES);
    for (int c = 0; c < MAKE_DEMO_NCLASSES; c++) {
      char cdir[320];
      snprintf(cdir, sizeof cdir, "%s/%s", sdir, make_demo_class_name(c));
      assert_int_equal(count_entries(cdir), n[s]);
      for (int i = 0; i < n[s]; i++) {
        char p[400];
        size_t len = 0;
        file_path(p, sizeof p, dir, s, c, i);
        unsigned char *d = test_files_read(p, &len);
        assert_non_null(d);
        bytes += len;
        int w, h, samp, cs;
        assert_int_equal(tjDecompressHeader3(tj, d, len, &w, &h, &samp, &cs), 0);
        assert_in_range(w, o.min_side, o.max_side);
        assert_in_range(h, o.min_side, o.max_side);
        /* Only the gray classes hold single-channel JPEGs. */
        if (samp == TJSAMP_GRAY) {
          assert_memory_equal(make_demo_class_name(c), "gray_", 5);
          gray++;
        }
        free(d);
      }
    }
  }
  tjDestroy(tj);
  assert_int_equal(bytes, st.bytes);
  assert_true(gray > 0);
}

/* Same options, two directories: byte-identical files. A different seed
 * changes every file; fewer images per class give a prefix. */
static void test_deterministic(void **state) {
  tmpdir *t = *state;
  make_demo_opts o;
  small_opts(&o);
  char a[128], b[128], c[128], d[128], err[256] = "";
  make_sub(a, sizeof a, t, "a");
  make_sub(b, sizeof b, t, "b");
  make_sub(c, sizeof c, t, "c");
  make_sub(d, sizeof d, t, "d");
  assert_int_equal(make_demo(a, &o, NULL, err, sizeof err), 0);
  assert_int_equal(make_demo(b, &o, NULL, err, sizeof err), 0);
  int n[2] = {o.train_per_class, o.val_per_class};
  int total = MAKE_DEMO_NCLASSES * (n[0] + n[1]);
  assert_int_equal(count_differing(a, b, n), 0);

  make_demo_opts other = o;
  other.seed = 2;
  assert_int_equal(make_demo(c, &other, NULL, err, sizeof err), 0);
  assert_int_equal(count_differing(a, c, n), total);

  make_demo_opts fewer = o;
  fewer.train_per_class = 2;
  fewer.val_per_class = 1;
  assert_int_equal(make_demo(d, &fewer, NULL, err, sizeof err), 0);
  int nf[2] = {2, 1};
  assert_int_equal(count_differing(a, d, nf), 0);
}

/* A non-empty directory is refused, untouched, unless overwrite is set;
 * an empty existing one is fine. */
static void test_refuses_nonempty(void **state) {
  tmpdir *t = *state;
  make_demo_opts o;
  small_opts(&o);
  o.train_per_class = 1;
  o.val_per_class = 0;
  char dir[128], err[256] = "", marker[200];
  make_sub(dir, sizeof dir, t, "x");
  assert_int_equal(mkdir(dir, 0777), 0);
  snprintf(marker, sizeof marker, "%s/keep.txt", dir);
  FILE *f = fopen(marker, "w");
  assert_non_null(f);
  fclose(f);

  assert_int_equal(make_demo(dir, &o, NULL, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, dir));
  assert_non_null(strstr(err, "not empty"));
  assert_int_equal(count_entries(dir), 1);

  o.overwrite = 1;
  make_demo_stats st;
  assert_int_equal(make_demo(dir, &o, &st, err, sizeof err), 0);
  assert_int_equal(st.files, MAKE_DEMO_NCLASSES);
  assert_int_equal(access(marker, F_OK), 0);
  /* val_per_class 0 writes no val split. */
  assert_int_equal(count_entries(dir), 2);

  char empty[128];
  make_sub(empty, sizeof empty, t, "empty");
  assert_int_equal(mkdir(empty, 0777), 0);
  o.overwrite = 0;
  assert_int_equal(make_demo(empty, &o, NULL, err, sizeof err), 0);
}

static void test_errors(void **state) {
  tmpdir *t = *state;
  char dir[128], err[256] = "";
  make_demo_opts o;

  small_opts(&o);
  o.quality = 0;
  make_sub(dir, sizeof dir, t, "q");
  assert_int_equal(make_demo(dir, &o, NULL, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "quality 0"));
  small_opts(&o);
  o.train_per_class = 0;
  assert_int_equal(make_demo(dir, &o, NULL, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "train images per class 0"));
  small_opts(&o);
  o.min_side = 200;
  o.max_side = 100;
  assert_int_equal(make_demo(dir, &o, NULL, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "200..100"));
  assert_int_equal(access(dir, F_OK), -1); /* nothing created */
  assert_int_equal(make_demo("", NULL, NULL, err, sizeof err), BFEED_EINVAL);

  /* A path below a regular file cannot be created: the message names it. */
  small_opts(&o);
  char file[128], below[160];
  make_sub(file, sizeof file, t, "plain");
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(below, sizeof below, "%s/sub", file);
  assert_int_equal(make_demo(below, &o, NULL, err, sizeof err), BFEED_EIO);
  assert_non_null(strstr(err, below));
  assert_non_null(strstr(err, "Not a directory"));
}

static int generate(const char *dir, char *err, size_t errlen) {
  make_demo_stats st;
  if (make_demo(dir, NULL, &st, err, errlen) != 0) return -1;
  printf("%d files, %llu bytes\n", st.files, (unsigned long long)st.bytes);
  return 0;
}

int main(int argc, char **argv) {
  int rc = tmpdir_writer_mode(argc, argv, "--generate", generate);
  if (rc >= 0) return rc;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class_names),
      TMPDIR_TEST(test_layout),
      TMPDIR_TEST(test_deterministic),
      TMPDIR_TEST(test_refuses_nonempty),
      TMPDIR_TEST(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
