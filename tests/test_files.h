/*
 * test_files.h -- reading a whole file back, for the tests that check what
 * was written (test_make_demo.c) and the fuzz replay drivers that build
 * their seeds on disk or read them from a folder.
 */
#ifndef BFEED_TEST_FILES_H
#define BFEED_TEST_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The bytes of path (malloc'd, *n of them), or NULL. */
static inline uint8_t *test_files_read(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
  *n = b ? fread(b, 1, len > 0 ? (size_t)len : 0, f) : 0;
  fclose(f);
  return b;
}

#endif
