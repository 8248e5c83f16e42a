/*
 * test_tmpdir.h -- a cmocka fixture giving each test a fresh temporary
 * folder (*state is a tmpdir), removed with its contents afterwards, and
 * the writer mode of test programs whose files a Python oracle judges
 * (tests/client: test_npy, test_make_demo).
 */
#ifndef BFEED_TEST_TMPDIR_H
#define BFEED_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tmpdir {
  char path[64];
} tmpdir;

static int setup(void **state) {
  tmpdir *t = malloc(sizeof *t);
  if (!t) return -1;
  snprintf(t->path, sizeof t->path, "/tmp/bfeed-test-XXXXXX");
  if (!mkdtemp(t->path)) {
    free(t);
    return -1;
  }
  *state = t;
  return 0;
}

static int teardown(void **state) {
  tmpdir *t = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->path);
  int rc = system(cmd);
  free(t);
  return rc == 0 ? 0 : -1;
}

/* A test that runs in a fresh temporary folder of its own. */
#define TMPDIR_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* `PROG FLAG DIR` runs write(DIR, err, errlen) instead of the tests, so that
 * an oracle gets the files to judge. Returns -1 when argv is not that, else
 * the exit status (1 with write's message on stderr when it fails). */
static inline int tmpdir_writer_mode(int argc, char **argv, const char *flag,
                                     int (*write)(const char *dir, char *err, size_t errlen)) {
  if (argc != 3 || strcmp(argv[1], flag) != 0) return -1;
  char err[256];
  if (write(argv[2], err, sizeof err) == 0) return 0;
  fprintf(stderr, "%s: %s\n", argv[0], err);
  return 1;
}

#endif
