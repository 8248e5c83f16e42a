/*
 * test_changed.c -- a dataset whose files change while it is served, one
 * rule for every kind (PROTOCOL.md "Files that change"): no stream is ever
 * served a mix of old and new data. The stream that reaches a changed
 * file fails with BFEED_EDATASET naming it; what it got before is exactly
 * the start of an undisturbed run over the old files; the daemon reloads
 * the dataset by itself, and a new stream serves what a fresh daemon
 * serves from the new files.
 *
 * The changes are made here, while a stream is open with a window of one
 * (so the batch that reads the file is built after the change): an image
 * of a folder overwritten by another image, then one deleted, then one
 * rewritten with its size, inode and times put back; a TFRecord
 * shard overwritten by another shard; a tar shard cut short.
 */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "make_demo_shards.h"
#include "suite.h"

/* A whole undisturbed run of ds from a fresh daemon in slot 1 (the files
 * as they are now). */
static void changed_reference(suite *s, const char *arg, const char *ds, const bfeed_stream_opts *o, itest_run *ref) {
  itest_daemon_opts opts = {.dir = s->root, .name = "reference", .workers = 2, .datasets = {arg, NULL}};
  char err[1024];
  if (itest_daemon_start(&s->d[1], &opts, err, sizeof err) < 0) fail_msg("%s", err);
  bfeed_error e;
  int rc;
  /* A shard dataset answers EBUSY while it is indexed. */
  for (int tries = 0; (rc = itest_fetch(s->d[1].unix_addr, ds, o, 0, ref, &e)) == BFEED_EBUSY && tries < 500; tries++)
    itest_sleep_ms(20);
  if (rc != BFEED_EEOF) fail_msg("reference run on %s: %d: %s", ds, rc, e.message);
  suite_stop(&s->d[1]);
}

/* How often the daemon's log says needle. */
static int changed_log_count(const itest_daemon *d, const char *needle) {
  size_t len;
  char *log = itest_read_file(d->log_path, &len);
  int n = 0;
  for (const char *p = log; p && (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  free(log);
  return n;
}

typedef struct changed_wait {
  const itest_daemon *d;
  const char *needle;
  int times;
} changed_wait;

static int changed_logged(void *arg) {
  const changed_wait *w = arg;
  return changed_log_count(w->d, w->needle) >= w->times;
}

/* What one change does to a stream of ds on d: the stream takes a batch,
 * change(arg) alters the files, the stream goes on and must fail with
 * BFEED_EDATASET saying `says` about `file`, its batches the start of ref;
 * then the daemon reloads ds (the `round`-th time), and a new stream
 * serves what a fresh daemon serves now (returned in *now). */
static void changed_round(suite *s, itest_daemon *d, const char *arg, const char *ds, const itest_run *ref,
                          void (*change)(const char *), const char *file, const char *says, int round,
                          itest_run *now) {
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  o.window = 1;
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, ds, &o);
  itest_run got = {0};
  bfeed_error e;
  SUITE_OK(itest_collect(st, 1, &got, &e), e);
  change(file);
  int rc = itest_collect(st, 0, &got, &e);
  bfeed_stream_close(st);
  bfeed_close(c);
  print_message("%s: %zu of %zu batches, then %d: %s\n", ds, got.n, ref->n, rc, e.message);
  assert_int_equal(rc, BFEED_EDATASET);
  const char *base = strrchr(file, '/');
  if (!strstr(e.message, base + 1) || !strstr(e.message, says)) fail_msg("the error does not name %s: %s", file, e.message);
  /* Never a mix: what came is the old data's, batch for batch. */
  assert_true(got.n < ref->n);
  for (size_t i = 0; i < got.n; i++)
    if (!itest_rec_equal(&got.b[i], &ref->b[i])) fail_msg("%s: batch %zu is not the old files' batch", ds, i);
  itest_run_free(&got);

  char needle[160];
  snprintf(needle, sizeof needle, "dataset %s reloaded after its files changed", ds);
  changed_wait w = {d, needle, round};
  if (itest_poll(changed_logged, &w, 20000, 20) <= 0) fail_msg("the daemon did not reload %s", ds);
  changed_reference(s, arg, ds, &o, now);
  assert_int_not_equal(itest_run_diff(now, ref), -1); /* the files did change what is served */
  itest_run after = {0};
  for (int tries = 0; (rc = itest_fetch(d->unix_addr, ds, &o, 0, &after, &e)) == BFEED_EBUSY && tries < 500; tries++)
    itest_sleep_ms(20);
  if (rc != BFEED_EEOF) fail_msg("after the reload, %s: %d: %s", ds, rc, e.message);
  suite_assert_runs_equal(&after, now);
  itest_run_free(&after);
}

static const char *changed_source; /* what changed_overwrite copies over its file */

/* Rewrite file in place (the same inode, as cp does) with another's bytes. */
static void changed_overwrite(const char *file) {
  size_t len;
  char *data = itest_read_file(changed_source, &len);
  assert_non_null(data);
  assert_int_equal(itest_write_file(file, data, len), 0);
  free(data);
}

static void changed_delete(const char *file) { assert_int_equal(unlink(file), 0); }

/* Rewrite file in place with the same size and put its times back (issue
 * 31: touch -r, rsync --inplace with -t): only the inode's change time
 * tells. A byte in the middle of the image data changes. */
static void changed_stealthily(const char *file) {
  struct stat was;
  assert_int_equal(stat(file, &was), 0);
  size_t len;
  char *data = itest_read_file(file, &len);
  assert_non_null(data);
  data[len / 2] ^= 0x55;
  assert_int_equal(itest_write_file(file, data, len), 0);
  free(data);
  struct timespec times[2] = {was.st_atim, was.st_mtim};
  assert_int_equal(utimensat(AT_FDCWD, file, times, 0), 0);
  struct stat now;
  assert_int_equal(stat(file, &now), 0);
  assert_true(now.st_size == was.st_size && now.st_ino == was.st_ino && now.st_mtim.tv_sec == was.st_mtim.tv_sec &&
              now.st_mtim.tv_nsec == was.st_mtim.tv_nsec);
}

static void changed_truncate(const char *file) {
  size_t len;
  free(itest_read_file(file, &len));
  assert_int_equal(truncate(file, (off_t)(len / 2)), 0);
}

static void test_folder_image_changed(void **state) {
  suite *s = *state;
  char dir[256], arg[300], err[512], file[400], other[400];
  snprintf(dir, sizeof dir, "%s/images", s->root);
  snprintf(arg, sizeof arg, "img=%s", dir);
  assert_int_equal(itest_make_dataset(dir, 6, err, sizeof err), 0);
  itest_folder f;
  assert_int_equal(itest_folder_scan(dir, &f), 0);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  itest_run ref = {0}, now = {0}, later = {0};
  changed_reference(s, arg, "img", &o, &ref);
  itest_daemon_opts opts = {.dir = s->root, .name = "img", .workers = 2, .datasets = {arg, s->demo_arg, NULL}};
  if (itest_daemon_start(&s->d[0], &opts, err, sizeof err) < 0) fail_msg("%s", err);

  /* Sample 30 (batch 3) overwritten by sample 2's image... */
  snprintf(file, sizeof file, "%s/%s", dir, f.names[30]);
  snprintf(other, sizeof other, "%s/%s", dir, f.names[2]);
  changed_source = other;
  changed_round(s, &s->d[0], arg, "img", &ref, changed_overwrite, file, "changed since the dataset was loaded", 1,
                &now);
  /* ...then sample 40 (batch 5) deleted, which was skipped as undecodable. */
  snprintf(file, sizeof file, "%s/%s", dir, f.names[40]);
  changed_round(s, &s->d[0], arg, "img", &now, changed_delete, file, "is gone since the dataset was loaded", 2,
                &later);
  /* ...then sample 20 (batch 2) rewritten with its size, inode and times kept. */
  itest_run last = {0};
  snprintf(file, sizeof file, "%s/%s", dir, f.names[20]);
  changed_round(s, &s->d[0], arg, "img", &later, changed_stealthily, file, "changed since the dataset was loaded", 3,
                &last);
  itest_run_free(&last);
  /* The other dataset served on through it all. */
  suite_fetch(s->d[0].unix_addr, "demo", &o, 1, &ref);
  suite_stop(&s->d[0]);
  itest_run_free(&ref);
  itest_run_free(&now);
  itest_run_free(&later);
  itest_folder_free(&f);
}

/* The suite's demo images as shards in dir (3 of them: 15, 16 and 16
 * samples), and the path of shard i into out[i]. */
static void changed_shards(suite *s, const char *dir, int tar, char out[3][400]) {
  make_demo_shards *w;
  char err[512], pattern[300];
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(make_demo_shards_open(&w, tar, dir, "train", (int)s->demo.n, 3, err, sizeof err), 0);
  for (size_t i = 0; i < s->demo.n; i++) {
    char path[400];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", s->demo_dir, s->demo.names[i]);
    uint8_t *jpeg = (uint8_t *)itest_read_file(path, &len);
    assert_non_null(jpeg);
    if (make_demo_shards_add(w, jpeg, len, s->demo.labels[i], err, sizeof err) < 0) fail_msg("%s", err);
    free(jpeg);
  }
  assert_int_equal(make_demo_shards_close(w, 0, err, sizeof err), 0);
  snprintf(pattern, sizeof pattern, "%s/train-*", dir);
  glob_t g;
  assert_int_equal(glob(pattern, 0, NULL, &g), 0);
  assert_int_equal(g.gl_pathc, 3);
  for (int i = 0; i < 3; i++) snprintf(out[i], 400, "%s", g.gl_pathv[i]);
  globfree(&g);
}

/* A shard changed under a shard dataset of `kind`: shard 1 (samples 15
 * to 30, read from batch 1 on) altered by change after the stream took
 * batch 0. */
static void changed_shard_round(suite *s, const char *kind, void (*change)(const char *)) {
  char dir[256], arg[400], shards[3][400];
  snprintf(dir, sizeof dir, "%s/%s", s->root, kind);
  changed_shards(s, dir, strcmp(kind, "tar") == 0, shards);
  snprintf(arg, sizeof arg, "sh=%s:%s/train-*", kind, dir);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  itest_run ref = {0}, now = {0};
  changed_reference(s, arg, "sh", &o, &ref);
  itest_daemon_opts opts = {.dir = s->root, .name = kind, .workers = 2, .datasets = {arg, NULL}};
  char err[1024];
  if (itest_daemon_start(&s->d[0], &opts, err, sizeof err) < 0) fail_msg("%s", err);
  itest_run warm = {0};
  bfeed_error e;
  int rc;
  for (int tries = 0; (rc = itest_fetch(s->d[0].unix_addr, "sh", &o, 1, &warm, &e)) == BFEED_EBUSY && tries < 500; tries++)
    itest_sleep_ms(20);
  SUITE_OK(rc, e); /* indexed */
  itest_run_free(&warm);
  changed_source = shards[2];
  changed_round(s, &s->d[0], arg, "sh", &ref, change, shards[1], "changed since the dataset was loaded", 1, &now);
  suite_stop(&s->d[0]);
  itest_run_free(&ref);
  itest_run_free(&now);
}

static void test_tfrecord_shard_overwritten(void **state) { changed_shard_round(*state, "tfrecord", changed_overwrite); }
static void test_tar_shard_truncated(void **state) { changed_shard_round(*state, "tar", changed_truncate); }

SUITE_MAIN_KILLING("changed", SUITE_KILLING(test_folder_image_changed), SUITE_KILLING(test_tfrecord_shard_overwritten),
                   SUITE_KILLING(test_tar_shard_truncated))
