/*
 * test_tmpdir.h -- a cmocka fixture giving each test a fresh temporary
 * folder (*state is a tmpdir), removed with its contents afterwards.
 */
#ifndef BFEED_TEST_TMPDIR_H
#define BFEED_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
