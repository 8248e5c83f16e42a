/*
 * test_list_kind.c -- list datasets through the real daemon, against the
 * ImageFolder they list.
 *
 * The lists are written here from the suite's own scan of its folders
 * (itest_folder_scan: sorted classes, sorted files, ImageFolder's labels),
 * so they name the folder's files in (class, path) order with the
 * folder's labels: each must serve the folder dataset's batches byte for
 * byte (image, label, index), in train and eval, NCHW and NHWC, and the
 * "bad" folder's replacement of its undecodable files too. The forms:
 * TSV with integer labels relative to the list's folder, DALI's
 * space-separated lines with absolute paths and class names as labels,
 * and TSV relative to root=. A list in reverse order serves the folder's
 * samples in reverse; a malformed list leaves its dataset out, naming its
 * file and line in the log and to an OPEN on it, while the daemon serves
 * the others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "suite.h"

enum { LIST_TSV, LIST_DALI, LIST_ROOTED, LIST_REVERSED };

/* f's samples as a list at path, one of the forms above; dir is the
 * folder's path, rel its name from the list's folder. */
static void list_write(const char *path, const itest_folder *f, const char *dir, const char *rel, int form) {
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  n += (size_t)snprintf(text, cap, "# written by test_list_kind\n\n");
  for (size_t k = 0; k < f->n; k++) {
    size_t i = form == LIST_REVERSED ? f->n - 1 - k : k;
    const char *slash = strchr(f->names[i], '/');
    assert_non_null(slash);
    if (form == LIST_DALI) /* the class folder's name as the label */
      n += (size_t)snprintf(text + n, cap - n, "%s/%s %.*s\n", dir, f->names[i], (int)(slash - f->names[i]),
                            f->names[i]);
    else if (form == LIST_ROOTED || form == LIST_REVERSED)
      n += (size_t)snprintf(text + n, cap - n, "%s\t%d\n", f->names[i], (int)f->labels[i]);
    else
      n += (size_t)snprintf(text + n, cap - n, "%s/%s\t%d\r\n", rel, f->names[i], (int)f->labels[i]);
    assert_true(n < cap);
  }
  assert_int_equal(itest_write_file(path, text, n), 0);
  free(text);
}

/* The list datasets of the suite's folders, as --dataset flags. */
typedef struct lists {
  char arg[5][512];
  const char *args[11];
} lists;

static void lists_make(suite *s, lists *l) {
  char path[320], dir[320];
  snprintf(dir, sizeof dir, "%s/lists", s->root);
  assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
  /* Beside the folders: paths relative to the list's folder. */
  snprintf(path, sizeof path, "%s/demo_tsv.txt", s->root);
  list_write(path, &s->demo, s->demo_dir, "demo", LIST_TSV);
  snprintf(l->arg[0], sizeof l->arg[0], "tsv=list:%s", path);
  snprintf(path, sizeof path, "%s/demo_dali.txt", dir);
  list_write(path, &s->demo, s->demo_dir, NULL, LIST_DALI);
  snprintf(l->arg[1], sizeof l->arg[1], "dali=list:%s", path);
  snprintf(path, sizeof path, "%s/demo_rooted.txt", dir);
  list_write(path, &s->demo, s->demo_dir, NULL, LIST_ROOTED);
  snprintf(l->arg[2], sizeof l->arg[2], "rooted=list:%s,root=%s", path, s->demo_dir);
  snprintf(path, sizeof path, "%s/bad.txt", s->root);
  list_write(path, &s->bad, s->bad_dir, "bad", LIST_TSV);
  snprintf(l->arg[3], sizeof l->arg[3], "badlist=list:%s", path);
  snprintf(path, sizeof path, "%s/demo_reversed.txt", dir);
  list_write(path, &s->demo, s->demo_dir, NULL, LIST_REVERSED);
  snprintf(l->arg[4], sizeof l->arg[4], "reversed=list:%s,root=%s", path, s->demo_dir);
  for (int i = 0; i < 5; i++) l->args[2 * i] = "--dataset", l->args[2 * i + 1] = l->arg[i];
  l->args[10] = NULL;
}

/* Runs of ds and of the folder it lists, with o: the same bytes. */
static void list_same_runs(const char *addr, const char *ds, const char *folder, const bfeed_stream_opts *o) {
  itest_run want = {0}, got = {0};
  suite_fetch(addr, folder, o, 0, &want);
  suite_fetch(addr, ds, o, 0, &got);
  assert_true(want.n > 0);
  suite_assert_runs_equal(&want, &got);
  itest_run_free(&want);
  itest_run_free(&got);
}

static void test_list_serves_the_folder(void **state) {
  suite *s = *state;
  lists l;
  lists_make(s, &l);
  itest_daemon *d = suite_start_with(s, 0, "lists", 2, 0, l.args, NULL);
  assert_true(itest_daemon_log_has(d, "dataset dali: 47 images listed"));
  assert_true(itest_daemon_log_has(d, "named labels"));
  bfeed_stream_opts train, eval, nhwc;
  suite_train_opts(&train, 11, 2);
  suite_eval_opts(&eval, 1);
  eval.keep_partial = 1;
  suite_train_opts(&nhwc, 5, 1);
  nhwc.layout = BFEED_LAYOUT_NHWC;
  static const char *const demo_lists[] = {"tsv", "dali", "rooted"};
  for (int i = 0; i < 3; i++) {
    list_same_runs(d->unix_addr, demo_lists[i], "demo", &train);
    list_same_runs(d->unix_addr, demo_lists[i], "demo", &eval);
  }
  list_same_runs(d->unix_addr, "tsv", "demo", &nhwc);
  /* Undecodable files are replaced by the next sample, as in the folder. */
  list_same_runs(d->unix_addr, "badlist", "bad", &train);
  list_same_runs(d->unix_addr, "badlist", "bad", &eval);
  suite_stop(d);
}

/* Samples in the list's line order: the reversed list's sample k is the
 * folder's n-1-k, pixels and label. */
static void test_list_order(void **state) {
  suite *s = *state;
  lists l;
  lists_make(s, &l);
  itest_daemon *d = suite_start_with(s, 0, "order", 1, 0, l.args, NULL);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  o.batch = 1;
  itest_run folder = {0}, rev = {0};
  suite_fetch(d->unix_addr, "demo", &o, 0, &folder);
  suite_fetch(d->unix_addr, "reversed", &o, 0, &rev);
  assert_int_equal(folder.n, s->demo.n);
  assert_int_equal(rev.n, s->demo.n);
  for (size_t k = 0; k < rev.n; k++) {
    const itest_rec *a = &rev.b[k], *b = &folder.b[rev.n - 1 - k];
    size_t na, nb;
    const uint8_t *pa = itest_rec_data(a, "image", &na), *pb = itest_rec_data(b, "image", &nb);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_int_equal(na, nb);
    if (memcmp(pa, pb, na) != 0) fail_msg("reversed sample %zu is not the folder's %zu", k, rev.n - 1 - k);
    assert_int_equal(a->labels[0], b->labels[0]);
    assert_int_equal(a->idx[0], (int64_t)k);
  }
  itest_run_free(&folder);
  itest_run_free(&rev);
  suite_stop(d);
}

/* A malformed line leaves the list's dataset out, naming the list and the
 * line (it used to stop the whole start); the other datasets are served. */
static void test_list_refused(void **state) {
  suite *s = *state;
  char path[320], arg[400], text[600], err[2048];
  snprintf(path, sizeof path, "%s/broken.txt", s->root);
  int n = snprintf(text, sizeof text, "demo/%s\t0\ndemo/%s\n", s->demo.names[0], s->demo.names[1]);
  assert_int_equal(itest_write_file(path, text, (size_t)n), 0);
  snprintf(arg, sizeof arg, "broken=list:%s", path);
  itest_daemon_opts o = {.dir = s->root, .name = "broken", .workers = 1, .datasets = {arg, s->demo_arg, NULL}};
  itest_daemon *d = &s->d[0];
  if (itest_daemon_start(d, &o, err, sizeof err) < 0) fail_msg("%s", err);
  snprintf(text, sizeof text, "%s:2: expected path<TAB>label or path label, found one field", path);
  if (!itest_daemon_log_has(d, text)) fail_msg("the log does not say '%s'", text);
  bfeed_stream_opts opts;
  suite_eval_opts(&opts, 1);
  itest_run run = {0};
  bfeed_error e;
  assert_int_equal(itest_fetch(d->unix_addr, "broken", &opts, 1, &run, &e), BFEED_EDATASET);
  if (!strstr(e.message, text)) fail_msg("the OPEN's error does not say '%s': %s", text, e.message);
  suite_fetch(d->unix_addr, "demo", &opts, 1, &run);
  itest_run_free(&run);
  suite_stop(d);
}

/* Each test kills the daemons it leaves behind when it fails. */
#define LIST_TEST(f) cmocka_unit_test_teardown(f, suite_kill_daemons)

int main(void) {
  const struct CMUnitTest tests[] = {LIST_TEST(test_list_serves_the_folder), LIST_TEST(test_list_order),
                                     LIST_TEST(test_list_refused)};
  return SUITE_RUN("list", tests);
}
