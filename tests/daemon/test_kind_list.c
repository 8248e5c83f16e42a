/*
 * test_kind_list.c -- the list kind's parser through dataset_open: the
 * line forms kind_list.c documents (tab, DALI's space, comments, blanks,
 * CRLF), integer labels against class names, paths relative to the list's
 * folder, to root= and absolute, and errors that name the file and line.
 * Expectations are written out by hand from the documented rules; that
 * the images then serve the folder kind's bytes is
 * tests/integration/test_list_kind.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "dataset.h"
#include "test_tmpdir.h"

static void list_write(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
  assert_int_equal(fclose(f), 0);
}

/* Empty image files: the kind checks at load only that they are files. */
static void list_touch(const tmpdir *t, const char *const *names) {
  char path[256];
  for (int i = 0; names[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", t->path, names[i]);
    for (char *slash = strchr(path + strlen(t->path) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
      *slash = 0;
      mkdir(path, 0755); /* each folder on the way */
      *slash = '/';
    }
    list_write(path, "");
  }
}

static dataset *list_open(const char *path, const char *root, char *err, size_t errlen) {
  logger lg;
  log_init(&lg, LOG_ERR);
  dataset_kv kv[3] = {{"kind", "list", "test"}, {"path", path, "test"}, {"root", root, "test"}};
  return dataset_open("l", kv, root ? 3 : 2, &lg, err, errlen);
}

static void list_assert_name(const dataset *d, size_t i, const char *want) {
  char name[512];
  dataset_sample_name(d, i, name, sizeof name);
  assert_string_equal(name, want);
}

/* Every label a plain whole number: the numbers, max + 1 classes. Both
 * line forms, comments, blank lines and CRLF in one file. */
static void test_numeric_labels(void **state) {
  tmpdir *t = *state;
  static const char *const files[] = {"a.jpg", "cls/b c.jpg", "cls/d.png", NULL};
  list_touch(t, files);
  char list[256], err[512], want[512];
  snprintf(list, sizeof list, "%s/train.txt", t->path);
  list_write(list, "# path label\r\n"
                   "a.jpg\t3\r\n"
                   "\r\n"
                   "   # an indented comment\n"
                   "cls/b c.jpg 0\n"
                   "  \t \n"
                   "  cls/d.png    7  \n");
  dataset *d = list_open(list, NULL, err, sizeof err);
  if (!d) fail_msg("%s", err);
  assert_string_equal(dataset_kind_name(d), "list");
  assert_true(dataset_has_images(d));
  assert_false(dataset_has_text(d));
  assert_int_equal(d->nsamples, 3);
  assert_int_equal(d->nclasses, 8);
  const int32_t labels[] = {3, 0, 7};
  assert_memory_equal(d->labels, labels, sizeof labels);
  assert_string_equal(d->classes[7], "7");
  snprintf(want, sizeof want, "%s/a.jpg", t->path);
  list_assert_name(d, 0, want);
  snprintf(want, sizeof want, "%s/cls/b c.jpg", t->path);
  list_assert_name(d, 1, want);
  snprintf(want, sizeof want, "%s/cls/d.png", t->path);
  list_assert_name(d, 2, want);
  dataset_unref(d);
}

/* Names: the indices of the sorted distinct names, as ImageFolder's; one
 * label that is not a plain number ("007", "cat") makes them all names. */
static void test_named_labels(void **state) {
  tmpdir *t = *state;
  static const char *const files[] = {"1.jpg", "2.jpg", "3.jpg", "4.jpg", NULL};
  list_touch(t, files);
  char list[256], err[512];
  snprintf(list, sizeof list, "%s/names.txt", t->path);
  list_write(list, "1.jpg\tdog\n2.jpg\tcat\n3.jpg\tgolden retriever\n4.jpg\tant\n");
  dataset *d = list_open(list, NULL, err, sizeof err);
  if (!d) fail_msg("%s", err);
  assert_int_equal(d->nclasses, 4);
  const int32_t labels[] = {2, 1, 3, 0}; /* ant 0, cat 1, dog 2, "golden retriever" 3 */
  assert_memory_equal(d->labels, labels, sizeof labels);
  assert_string_equal(d->classes[0], "ant");
  assert_string_equal(d->classes[3], "golden retriever");
  dataset_unref(d);

  list_write(list, "1.jpg 10\n2.jpg 007\n3.jpg 10\n");
  d = list_open(list, NULL, err, sizeof err);
  if (!d) fail_msg("%s", err);
  assert_int_equal(d->nclasses, 2); /* "007" < "10" bytewise */
  const int32_t mixed[] = {1, 0, 1};
  assert_memory_equal(d->labels, mixed, sizeof mixed);
  dataset_unref(d);
}

/* Relative to the list's own folder by default, to root= when given;
 * absolute paths as they are. */
static void test_paths(void **state) {
  tmpdir *t = *state;
  static const char *const files[] = {"lists/near.jpg", "images/x/far.jpg", NULL};
  list_touch(t, files);
  char list[256], text[512], err[512], want[512], root[256];
  snprintf(list, sizeof list, "%s/lists/l.txt", t->path);
  snprintf(text, sizeof text, "near.jpg\t0\n%s/images/x/far.jpg\t1\n", t->path);
  list_write(list, text);
  dataset *d = list_open(list, NULL, err, sizeof err);
  if (!d) fail_msg("%s", err);
  snprintf(want, sizeof want, "%s/lists/near.jpg", t->path);
  list_assert_name(d, 0, want);
  snprintf(want, sizeof want, "%s/images/x/far.jpg", t->path);
  list_assert_name(d, 1, want);
  dataset_unref(d);

  snprintf(root, sizeof root, "%s/images", t->path);
  snprintf(text, sizeof text, "x/far.jpg 4\nfile://%s/lists/near.jpg 4\n", t->path);
  list_write(list, text);
  d = list_open(list, root, err, sizeof err);
  if (!d) fail_msg("%s", err);
  snprintf(want, sizeof want, "%s/images/x/far.jpg", t->path);
  list_assert_name(d, 0, want);
  snprintf(want, sizeof want, "file://%s/lists/near.jpg", t->path);
  list_assert_name(d, 1, want);
  assert_int_equal(d->nclasses, 5);
  dataset_unref(d);
}

/* What is refused names the list file and the line (or the setting). */
static void test_errors(void **state) {
  tmpdir *t = *state;
  static const char *const files[] = {"a.jpg", "sub/b.jpg", NULL};
  list_touch(t, files);
  char list[256], err[1024], want[512];
  snprintf(list, sizeof list, "%s/bad.txt", t->path);
  static const struct {
    const char *text, *line, *what;
  } cases[] = {
      {"a.jpg 1\n\n# c\nlonely\n", ":4:", "expected path<TAB>label or path label, found one field"},
      {"a.jpg\t1\t2\n", ":1:", "more than one tab"},
      {"a.jpg\t\n", ":1:", "found one field"},
      {"\t3\n", ":1:", "found one field"},
      {"a.jpg 0\nmissing.jpg 1\n", ":2:", "No such file or directory"},
      {"a.jpg 0\r\nsub 1\r\n", ":2:", "not a regular file"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    list_write(list, cases[i].text);
    dataset *d = list_open(list, NULL, err, sizeof err);
    if (d) fail_msg("case %zu: accepted", i);
    snprintf(want, sizeof want, "%s%s", list, cases[i].line);
    if (!strstr(err, want) || !strstr(err, cases[i].what))
      fail_msg("case %zu: '%s' lacks '%s' or '%s'", i, err, want, cases[i].what);
  }
  char label[1100] = "a.jpg\t";
  memset(label + 6, 'x', 1030);
  memcpy(label + 6 + 1030, "\n", 2);
  list_write(list, label);
  assert_null(list_open(list, NULL, err, sizeof err));
  assert_non_null(strstr(err, ":1: a label of 1030 bytes, over the 1024-byte limit"));
  list_write(list, "# only a comment\n\n");
  assert_null(list_open(list, NULL, err, sizeof err));
  assert_non_null(strstr(err, "no samples in"));
  snprintf(want, sizeof want, "%s/none.txt", t->path);
  assert_null(list_open(want, NULL, err, sizeof err));
  assert_non_null(strstr(err, "none.txt: cannot open"));
  logger lg;
  log_init(&lg, LOG_ERR);
  dataset_kv kv[3] = {{"kind", "list", "f.conf:1"}, {"path", list, "f.conf:2"}, {"roots", "/x", "f.conf:3"}};
  assert_null(dataset_open("l", kv, 3, &lg, err, sizeof err));
  assert_non_null(strstr(err, "f.conf:3: dataset l: unknown key 'roots' for kind list (known: kind path root)"));
}

/* A FIFO named as an image is refused at load, without waiting on it. */
static void test_fifo_refused(void **state) {
  tmpdir *t = *state;
  char fifo[256], list[256], text[512], err[1024];
  snprintf(fifo, sizeof fifo, "%s/pipe.jpg", t->path);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  snprintf(list, sizeof list, "%s/l.txt", t->path);
  snprintf(text, sizeof text, "pipe.jpg 0\n");
  list_write(list, text);
  assert_null(list_open(list, NULL, err, sizeof err));
  assert_non_null(strstr(err, "l.txt:1: image"));
  assert_non_null(strstr(err, "pipe.jpg: not a regular file"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      TMPDIR_TEST(test_numeric_labels), TMPDIR_TEST(test_named_labels), TMPDIR_TEST(test_paths),
      TMPDIR_TEST(test_errors),         TMPDIR_TEST(test_fifo_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
