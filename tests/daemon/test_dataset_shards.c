/*
 * test_dataset_shards.c -- a tfrecord/tar dataset's life: BFEED_EBUSY while
 * its shards are being indexed (made deterministic by holding stderr's lock,
 * on which the indexing thread's first log line waits), then ready or
 * failed with the reason; the shard glob sorted and blind to index caches;
 * samples read by offset; settings refused by name.
 *
 * Shards are written with the client's demo writer (make_demo_shards.c), an
 * encoder separate from the daemon's parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed.h"
#include "dataset.h"
#include "make_demo_shards.h"
#include "test_tmpdir.h"

static const uint8_t jpeg_a[] = {0xff, 0xd8, 'a', 'a', 0xff, 0xd9}, jpeg_b[] = {0xff, 0xd8, 'b', 0xff, 0xd9};

/* DIR/NAME-00000-of-00002, -00001-: samples a (class 0), b (class 1),
 * a (class 1) in that order, two shards. */
/* Write shards NAME-* into dir (tar or TFRecord), and the glob that
 * matches them (and anything else named NAME-*) into pattern. */
static void write_shards(const char *dir, const char *name, int tar, char pattern[256]) {
  snprintf(pattern, 256, "%s/%s-*%s", dir, name, tar ? ".tar" : "");
  make_demo_shards *w;
  char err[256];
  assert_int_equal(make_demo_shards_open(&w, tar, dir, name, 3, 2, err, sizeof err), 0);
  assert_int_equal(make_demo_shards_add(w, jpeg_a, sizeof jpeg_a, 0, err, sizeof err), 0);
  assert_int_equal(make_demo_shards_add(w, jpeg_b, sizeof jpeg_b, 1, err, sizeof err), 0);
  assert_int_equal(make_demo_shards_add(w, jpeg_a, sizeof jpeg_a, 1, err, sizeof err), 0);
  assert_int_equal(make_demo_shards_close(w, 0, err, sizeof err), 0);
}

static dataset *open_set(const char *kind, const char *pattern, const char *k2, const char *v2, char *err,
                         size_t errlen) {
  logger lg;
  log_init(&lg, LOG_INFO);
  dataset_kv kv[3] = {{"kind", kind, "test"}, {"path", pattern, "test"}, {k2, v2, "test"}};
  return dataset_open("s", kv, k2 ? 3 : 2, &lg, err, errlen);
}

static void check_samples(dataset *d) {
  char err[256], name[600];
  assert_int_equal(d->nsamples, 3);
  assert_int_equal(d->nclasses, 2);
  int32_t want_labels[3] = {0, 1, 1};
  assert_memory_equal(d->labels, want_labels, sizeof want_labels);
  uint8_t *buf = NULL;
  size_t cap = 0, len;
  assert_int_equal(dataset_read(d, 1, &buf, &cap, &len, err, sizeof err), 0);
  assert_int_equal(len, sizeof jpeg_b);
  assert_memory_equal(buf, jpeg_b, len);
  assert_int_equal(dataset_read(d, 2, &buf, &cap, &len, err, sizeof err), 0);
  assert_memory_equal(buf, jpeg_a, sizeof jpeg_a);
  free(buf);
  dataset_sample_name(d, 2, name, sizeof name);
  assert_non_null(strstr(name, "00001"));
  assert_non_null(strstr(name, "at byte offset"));
}

static void test_busy_then_ready(void **state) {
  tmpdir *t = *state;
  char pattern[256], err[512];
  write_shards(t->path, "train", 0, pattern);
  /* A garbage file that sorts last: its bad record is logged, and that log
   * line waits while this thread holds stderr. */
  char junk[256];
  snprintf(junk, sizeof junk, "%s/train-zzz", t->path);
  FILE *f = fopen(junk, "w");
  fputs("this is not a TFRecord file at all", f);
  fclose(f);
  flockfile(stderr);
  dataset *d = open_set("tfrecord", pattern, "label_offset", "-1", err, sizeof err);
  assert_non_null(d);
  int rc = dataset_ready(d, err, sizeof err);
  funlockfile(stderr);
  assert_int_equal(rc, BFEED_EBUSY);
  assert_non_null(strstr(err, "being indexed"));
  assert_non_null(strstr(err, "of 3 shards done"));
  assert_int_equal(dataset_wait(d, err, sizeof err), 0);
  assert_int_equal(dataset_ready(d, err, sizeof err), 0);
  check_samples(d);
  dataset_unref(d);

  /* Reopened: the caches beside the shards are not taken for shards. */
  d = open_set("tfrecord", pattern, NULL, NULL, err, sizeof err);
  assert_non_null(d);
  assert_int_equal(dataset_wait(d, err, sizeof err), 0);
  check_samples(d);
  dataset_unref(d);
}

static void test_tar_ready(void **state) {
  tmpdir *t = *state;
  char pattern[256], err[512];
  write_shards(t->path, "train", 1, pattern);
  dataset *d = open_set("tar", pattern, "label_ext", "cls", err, sizeof err);
  assert_non_null(d);
  assert_int_equal(dataset_wait(d, err, sizeof err), 0);
  check_samples(d);
  assert_true(dataset_has_images(d));
  assert_false(dataset_has_features(d));
  dataset_unref(d);
}

static void test_failures(void **state) {
  tmpdir *t = *state;
  char pattern[256], err[512];
  snprintf(pattern, sizeof pattern, "%s/none-*", t->path);
  assert_null(open_set("tfrecord", pattern, NULL, NULL, err, sizeof err));
  assert_non_null(strstr(err, "matches no file"));
  write_shards(t->path, "train", 0, pattern);
  assert_null(open_set("tfrecord", pattern, "label_ext", "cls", err, sizeof err));
  assert_non_null(strstr(err, "unknown key 'label_ext' for kind tfrecord"));
  assert_null(open_set("tar", pattern, "image_key", "x", err, sizeof err));
  assert_non_null(strstr(err, "unknown key 'image_key' for kind tar"));
  assert_null(open_set("tfrecord", pattern, "label_offset", "one", err, sizeof err));
  assert_non_null(strstr(err, "label_offset=one"));
}

/* Settings that parse but data that does not fit them: the dataset opens,
 * and indexing fails naming the shard. */
static void test_data_failures(void **state) {
  tmpdir *t = *state;
  char pattern[256], err[512];
  write_shards(t->path, "train", 0, pattern);
  /* Labels stored from 1 with label_offset -2: the first becomes -1. */
  dataset *d = open_set("tfrecord", pattern, "label_offset", "-2", err, sizeof err);
  assert_non_null(d);
  assert_int_equal(dataset_wait(d, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "outside 0.."));
  assert_non_null(strstr(err, "train-00000-of-00002"));
  dataset_unref(d);
  /* Tar members read as TFRecords: nothing frames, no samples. */
  write_shards(t->path, "w", 1, pattern);
  d = open_set("tfrecord", pattern, NULL, NULL, err, sizeof err);
  assert_non_null(d);
  assert_int_equal(dataset_wait(d, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "no samples in 2 shard(s) (2 skipped)"));
  dataset_unref(d);
}

/* Dropped while indexing: the threads stop and are joined. */
static void test_unref_while_indexing(void **state) {
  tmpdir *t = *state;
  char pattern[256], err[512];
  write_shards(t->path, "train", 0, pattern);
  dataset *d = open_set("tfrecord", pattern, NULL, NULL, err, sizeof err);
  assert_non_null(d);
  dataset_unref(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TMPDIR_TEST(test_busy_then_ready),
      TMPDIR_TEST(test_tar_ready),
      TMPDIR_TEST(test_failures),
      TMPDIR_TEST(test_data_failures),
      TMPDIR_TEST(test_unref_while_indexing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
