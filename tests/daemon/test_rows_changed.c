/*
 * test_rows_changed.c -- a features file cut short between the check made
 * before a batch and the read of its rows (batch_text_put_features): the
 * batch fails with the dataset_check message ("changed since the dataset
 * was loaded", the sizes then and now) and the dataset is marked changed,
 * so the daemon reloads it. Before, the read's own guess ("was the file
 * changed?") came back and nothing was marked; the integration test
 * test_faults/test_npy_rewritten met it when the change landed mid-batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "batch.h"
#include "batch_text.h"
#include "bfeed_types.h"
#include "dataset.h"
#include "opts.h"
#include "test_tmpdir.h"

enum { ROWS = 8, DIM = 4, HEADER = 128 };

/* float32 [ROWS, DIM] as numpy's format 1.0 writes it (header padded with
 * spaces and a newline to 128 bytes); row r holds r*DIM .. r*DIM+DIM-1. */
static void rows_write_npy(const char *path) {
  char dict[HEADER];
  int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", ROWS, DIM);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fwrite((uint8_t[]){HEADER - 10, 0}, 1, 2, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = 10 + len; i < HEADER - 1; i++) fputc(' ', f);
  fputc('\n', f);
  for (int i = 0; i < ROWS * DIM; i++) fwrite(&(float){(float)i}, 4, 1, f);
  assert_int_equal(fclose(f), 0);
}

static void test_cut_after_the_check(void **state) {
  const tmpdir *t = *state;
  char path[128], err[1024];
  snprintf(path, sizeof path, "%s/f.npy", t->path);
  rows_write_npy(path);
  logger lg;
  log_init(&lg, LOG_ERR);
  dataset_kv kv[2] = {{"kind", "npy", "test"}, {"path", path, "test"}};
  dataset *d = dataset_open("feats", kv, 2, &lg, err, sizeof err);
  if (!d) fail_msg("dataset_open: %s", err);
  bfeed_stream_opts o;
  opts_defaults(&o);
  batch_spec s;
  batch_spec_init(&s, d, &o, 1, &lg, NULL);
  uint32_t sel[2] = {6, 7};
  float tmp[DIM];
  uint16_t out[2 * DIM];

  /* Unchanged, the rows read; the check before the next batch passes. */
  assert_int_equal(batch_text_put_features(&s, sel, 2, tmp, (uint8_t *)out, err, sizeof err), 0);
  assert_int_equal(out[DIM], 0x41e0); /* 28.0f in bf16: row 7's first value */
  assert_int_equal(dataset_check(d, err, sizeof err), 0);

  /* The file cut to row 6 in place (same inode); the read of row 6 and 7
   * comes up short. */
  assert_int_equal(truncate(path, HEADER + 6 * DIM * 4), 0);
  err[0] = 0;
  assert_int_equal(batch_text_put_features(&s, sel, 2, tmp, (uint8_t *)out, err, sizeof err), BFEED_EDATASET);
  if (!strstr(err, "f.npy changed since the dataset was loaded (256 bytes then, 224 now)"))
    fail_msg("message: %s", err);
  assert_non_null(strstr(err, "the dataset is reloaded"));
  assert_true(dataset_changed(d, NULL, 0));
  dataset_unref(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {TMPDIR_TEST(test_cut_after_the_check)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
