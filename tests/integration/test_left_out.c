/*
 * test_left_out.c -- datasets the daemon cannot serve whole, through the
 * real daemon: one that cannot be loaded (a folder with a cycle of links,
 * a path that does not exist) is left out, named, and answered with its
 * load error, while the others are served; NaN and infinite values of npy
 * features and word vectors are counted, warned of once and served as
 * they are; tar link members are skipped as links, by name.
 *
 * The hostile inputs are made here: the cycle (class/up -> ..), the .npy
 * file and the vectors with their non-finite values, and a tar shard with
 * a symbolic and a hard link where images should be (libarchive's writer).
 */
#include <archive.h>
#include <archive_entry.h>
#include <math.h>
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

#include "suite.h"

/* Counter `name` of the daemon report's group for dataset ds at addr;
 * UINT64_MAX when the group or the counter is absent. */
static uint64_t left_counter(const char *addr, const char *ds, const char *name) {
  bfeed_client *c = suite_connect(addr);
  bfeed_stat_group *g;
  size_t n;
  bfeed_error e;
  SUITE_OK(bfeed_daemon_stats(c, &g, &n, &e), e);
  uint64_t v = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    int mine = strcmp(g[i].kind, "dataset") == 0 && strcmp(g[i].id, ds) == 0;
    for (size_t k = 0; mine && k < g[i].ncounters; k++)
      if (strcmp(g[i].counters[k].name, name) == 0) v = g[i].counters[k].value;
  }
  bfeed_daemon_stats_free(g, n);
  bfeed_close(c);
  return v;
}

/* OPEN on ds must be refused with code, the message holding needle. */
static void left_refused(const char *addr, const char *ds, int code, const char *needle) {
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  itest_run run = {0};
  bfeed_error e;
  int rc = itest_fetch(addr, ds, &o, 1, &run, &e);
  itest_run_free(&run);
  if (rc != code || !strstr(e.message, needle))
    fail_msg("OPEN %s: %d (%s), expected %d naming '%s'", ds, rc, e.message, code, needle);
}

/* A folder whose class holds a link to its parent loops for ever; it and a
 * path that is not there are left out, and the daemon serves the rest. */
static void test_cycle_left_out(void **state) {
  suite *s = *state;
  char dir[256], path[320], arg[300], gone[300], err[1024];
  snprintf(dir, sizeof dir, "%s/cycle", s->root);
  assert_int_equal(itest_make_dataset(dir, 1, err, sizeof err), 0);
  snprintf(path, sizeof path, "%s/gray_vertical/up", dir);
  assert_int_equal(symlink("..", path), 0);
  snprintf(arg, sizeof arg, "cyc=%s", dir);
  snprintf(gone, sizeof gone, "gone=%s/nothing-here", s->root);
  itest_daemon_opts o = {.dir = s->root, .name = "cycle", .workers = 1, .datasets = {arg, gone, s->demo_arg, NULL}};
  if (itest_daemon_start(&s->d[0], &o, err, sizeof err) < 0) fail_msg("one bad dataset stopped the start: %s", err);
  itest_daemon *d = &s->d[0];
  assert_true(itest_daemon_log_has(d, "a cycle of links"));
  assert_false(itest_daemon_log_has(d, "nests"));
  assert_true(itest_daemon_log_has(d, "dataset cyc is left out"));
  assert_true(itest_daemon_log_has(d, "dataset gone is left out"));
  left_refused(d->unix_addr, "cyc", BFEED_EDATASET, "a cycle of links");
  left_refused(d->unix_addr, "gone", BFEED_EDATASET, "nothing-here");
  left_refused(d->unix_addr, "nosuch", BFEED_ENODATASET, "no dataset named");
  bfeed_stream_opts opts;
  suite_eval_opts(&opts, 1);
  itest_run run = {0};
  suite_fetch(d->unix_addr, "demo", &opts, 0, &run);
  assert_int_equal(run.n, s->demo.n / 8);
  itest_run_free(&run);
  suite_stop(d);
}

/* A .npy file of `descr` items of the given shape ("(8, 4)") holding
 * data[bytes], as numpy writes one (format 1.0, the header padded with
 * blanks to 128 bytes). */
static void left_write_npy(const char *path, const char *descr, const char *shape, const void *data, size_t bytes) {
  enum { HEAD = 128 };
  char *all = malloc(HEAD + bytes);
  assert_non_null(all);
  memcpy(all, "\x93NUMPY\x01\x00", 8);
  all[8] = (char)(HEAD - 10);
  all[9] = 0;
  int n = snprintf(all + 10, HEAD - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  memset(all + 10 + n, ' ', (size_t)(HEAD - 10 - n));
  all[HEAD - 1] = '\n';
  memcpy(all + HEAD, data, bytes);
  assert_int_equal(itest_write_file(path, all, HEAD + bytes), 0);
  free(all);
}

/* NaN and infinities (and a finite float32 too large for bf16) in npy
 * features and in a word-vector table: counted at load, one warning per
 * dataset naming the file, the count and the first row or word, shown as
 * nonfinite_values in the statistics; the values are served as they are. */
static void test_nonfinite_counted(void **state) {
  suite *s = *state;
  enum { ROWS = 8, DIM = 4 };
  float v[ROWS * DIM];
  for (int i = 0; i < ROWS * DIM; i++) v[i] = (float)i / 8;
  v[2 * DIM + 1] = NAN;
  v[5 * DIM + 3] = -INFINITY;
  v[7 * DIM + 0] = 3.4e38f; /* finite as float32; infinite as bf16 */
  int32_t labels[ROWS] = {0};
  char npy[256], lab[256], tsv[256], vec[256], feats[600], text[600], line[400];
  snprintf(npy, sizeof npy, "%s/nonfinite.npy", s->root);
  snprintf(lab, sizeof lab, "%s/labels.npy", s->root);
  snprintf(tsv, sizeof tsv, "%s/nonfinite.tsv", s->root);
  snprintf(vec, sizeof vec, "%s/nonfinite.vec", s->root);
  left_write_npy(npy, "<f4", "(8, 4)", v, sizeof v);
  left_write_npy(lab, "<i4", "(8,)", labels, sizeof labels);
  static const char samples[] = "0\tthe cat\n1\ta dog\n0\tthe dog\n1\tcat\n";
  static const char table[] = "the 1 2\na 0.5 -1\ncat nan 1\ndog inf -inf\n";
  assert_int_equal(itest_write_file(tsv, samples, sizeof samples - 1), 0);
  assert_int_equal(itest_write_file(vec, table, sizeof table - 1), 0);
  snprintf(feats, sizeof feats, "feats=npy:%s,labels=%s", npy, lab);
  snprintf(text, sizeof text, "words=text:%s,vectors=%s,cache_dir=%s", tsv, vec, s->root);
  itest_daemon_opts o = {.dir = s->root, .name = "nonfinite", .workers = 1, .datasets = {feats, text, NULL}};
  char err[1024];
  if (itest_daemon_start(&s->d[0], &o, err, sizeof err) < 0) fail_msg("%s", err);
  itest_daemon *d = &s->d[0];
  snprintf(line, sizeof line, "%s: 3 value(s) are NaN or infinite as served (bf16), the first in row 2", npy);
  if (!itest_daemon_log_has(d, line)) fail_msg("the log does not say '%s'", line);
  snprintf(line, sizeof line, "%s: 3 value(s) are NaN or infinite as served (bf16), the first in word 'cat'", vec);
  if (!itest_daemon_log_has(d, line)) fail_msg("the log does not say '%s'", line);

  /* Served as they are: row 2's second value is a NaN, row 7's first +inf. */
  bfeed_stream_opts opts;
  suite_eval_opts(&opts, 1);
  opts.batch = ROWS;
  itest_run run = {0};
  suite_fetch(d->unix_addr, "feats", &opts, 1, &run);
  size_t nbytes;
  const uint8_t *f = itest_rec_data(&run.b[0], "features", &nbytes);
  assert_non_null(f);
  assert_int_equal(nbytes, ROWS * DIM * 2);
  uint16_t nan_bits, inf_bits;
  memcpy(&nan_bits, f + 2 * (2 * DIM + 1), 2);
  memcpy(&inf_bits, f + 2 * (7 * DIM + 0), 2);
  assert_true(isnan(bfeed_bf16_to_f32(nan_bits)));
  assert_true(isinf(bfeed_bf16_to_f32(inf_bits)));
  itest_run_free(&run);
  opts.batch = 2;
  suite_fetch(d->unix_addr, "words", &opts, 1, &run);
  itest_run_free(&run);
  assert_int_equal(left_counter(d->unix_addr, "feats", "nonfinite_values"), 3);
  assert_int_equal(left_counter(d->unix_addr, "words", "nonfinite_values"), 3);
  suite_stop(d);
}

/* One tar member: a regular file of len bytes, or (target set) a link. */
static void left_tar_member(struct archive *a, const char *name, const void *data, size_t len, const char *symlink_to,
                            const char *hardlink_to) {
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, name);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_filetype(e, symlink_to ? AE_IFLNK : AE_IFREG);
  if (symlink_to) archive_entry_set_symlink(e, symlink_to);
  if (hardlink_to) archive_entry_set_hardlink(e, hardlink_to);
  archive_entry_set_size(e, symlink_to || hardlink_to ? 0 : (la_int64_t)len);
  assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
  if (len && !symlink_to && !hardlink_to) assert_int_equal(archive_write_data(a, data, len), (la_ssize_t)len);
  archive_entry_free(e);
}

/* A WebDataset shard whose samples b and c have a link for an image: they
 * are skipped as links, each named, and counted; a is served. */
static void test_tar_links_named(void **state) {
  suite *s = *state;
  char tar[256], jpeg_path[400], arg[300], err[1024];
  snprintf(tar, sizeof tar, "%s/links-000000.tar", s->root);
  snprintf(jpeg_path, sizeof jpeg_path, "%s/%s", s->demo_dir, s->demo.names[0]);
  size_t len;
  char *jpeg = itest_read_file(jpeg_path, &len);
  assert_non_null(jpeg);
  struct archive *a = archive_write_new();
  assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
  assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
  left_tar_member(a, "a.jpg", jpeg, len, NULL, NULL);
  left_tar_member(a, "a.cls", "3", 1, NULL, NULL);
  left_tar_member(a, "b.jpg", NULL, 0, "a.jpg", NULL);
  left_tar_member(a, "b.cls", "4", 1, NULL, NULL);
  left_tar_member(a, "c.jpg", NULL, 0, NULL, "a.jpg");
  left_tar_member(a, "c.cls", "5", 1, NULL, NULL);
  assert_int_equal(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
  free(jpeg);
  snprintf(arg, sizeof arg, "links=tar:%s/links-*.tar", s->root);
  itest_daemon_opts o = {.dir = s->root, .name = "links", .workers = 1, .datasets = {arg, NULL}};
  if (itest_daemon_start(&s->d[0], &o, err, sizeof err) < 0) fail_msg("%s", err);
  itest_daemon *d = &s->d[0];
  bfeed_stream_opts opts;
  suite_eval_opts(&opts, 1);
  opts.batch = 1;
  itest_run run = {0};
  bfeed_error e;
  int rc;
  for (int tries = 0; (rc = itest_fetch(d->unix_addr, "links", &opts, 0, &run, &e)) == BFEED_EBUSY && tries < 500; tries++)
    itest_sleep_ms(20);
  if (rc != BFEED_EEOF) fail_msg("links: %d: %s", rc, e.message);
  assert_int_equal(run.n, 1);
  assert_int_equal(run.b[0].labels[0], 3);
  itest_run_free(&run);
  assert_true(itest_daemon_log_has(d, "image member b.jpg is a symbolic link (to a.jpg)"));
  assert_true(itest_daemon_log_has(d, "image member c.jpg is a hard link (to a.jpg)"));
  assert_false(itest_daemon_log_has(d, "no image member"));
  assert_int_equal(left_counter(d->unix_addr, "links", "records_skipped"), 2);
  suite_stop(d);
}

SUITE_MAIN_KILLING("left_out", SUITE_KILLING(test_cycle_left_out), SUITE_KILLING(test_nonfinite_counted),
                   SUITE_KILLING(test_tar_links_named))
