/*
 * test_npy.c -- the .npy writer.
 *
 * Run without arguments: cmocka checks of the file layout and the error
 * paths. Run as `test_npy --write DIR`: writes the cases below into DIR for
 * tests/client/npy_oracle.py, which reads them with numpy.load and checks
 * dtype, shape and every value against its own copy of the formulas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_tmpdir.h"

#include "bfeed.h"
#include "npy.h"

typedef struct npy_case {
  const char *name;
  int dtype;
  int ndim;
  int64_t shape[8];
} npy_case;

/* Shapes that exercise the header: 0-d, 1-tuples, empty arrays, many dims. */
static const npy_case cases[] = {
    {"u8_scalar", BFEED_DTYPE_U8, 0, {0}},
    {"u8_5", BFEED_DTYPE_U8, 1, {5}},
    {"u8_3x4x5", BFEED_DTYPE_U8, 3, {3, 4, 5}},
    {"bf16_2x3", BFEED_DTYPE_BF16, 2, {2, 3}},
    {"bf16_2x3x4x5", BFEED_DTYPE_BF16, 4, {2, 3, 4, 5}},
    {"f32_scalar", BFEED_DTYPE_F32, 0, {0}},
    {"f32_7", BFEED_DTYPE_F32, 1, {7}},
    {"f32_0x3", BFEED_DTYPE_F32, 2, {0, 3}},
    {"i32_4x2", BFEED_DTYPE_I32, 2, {4, 2}},
    {"i32_3x0x2", BFEED_DTYPE_I32, 3, {3, 0, 2}},
    {"i64_6", BFEED_DTYPE_I64, 1, {6}},
    {"i64_0", BFEED_DTYPE_I64, 1, {0}},
    {"i64_8d", BFEED_DTYPE_I64, 8, {1, 2, 1, 3, 1, 1, 2, 1}},
    {"u8_1000x3", BFEED_DTYPE_U8, 2, {1000, 3}},
};

/* Element i of each dtype; npy_oracle.py has the same formulas. Values
 * include negatives, bytes above 127 and float fractions, all exactly
 * representable, so a wrong byte order or width shows. */
static void fill(int dtype, size_t n, void *out) {
  for (size_t k = 0; k < n; k++) {
    int64_t i = (int64_t)k;
    switch (dtype) {
    case BFEED_DTYPE_U8: ((uint8_t *)out)[k] = (uint8_t)((i * 37 + 11) & 0xff); break;
    case BFEED_DTYPE_BF16: ((uint16_t *)out)[k] = (uint16_t)((0x3f80 + i * 0x0123) & 0xffff); break;
    case BFEED_DTYPE_F32: ((float *)out)[k] = (float)(i - 3) * 0.375f; break;
    case BFEED_DTYPE_I32: ((int32_t *)out)[k] = (int32_t)(i * 123456789 - 400000000); break;
    case BFEED_DTYPE_I64: ((int64_t *)out)[k] = i * 1234567890123LL - (INT64_C(1) << 40); break;
    }
  }
}

static size_t elem_size(int dtype) { return (size_t)(npy_descr(dtype)[2] - '0'); }

static size_t case_count(const npy_case *c) {
  size_t n = 1;
  for (int d = 0; d < c->ndim; d++) n *= (size_t)c->shape[d];
  return n;
}

static int write_case(const char *dir, const npy_case *c, char *err, size_t errlen) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.npy", dir, c->name);
  size_t n = case_count(c);
  void *data = n ? malloc(n * elem_size(c->dtype)) : NULL;
  if (n && !data) return -1;
  fill(c->dtype, n, data);
  int rc = npy_write(path, c->dtype, c->ndim, c->shape, data, err, errlen);
  free(data);
  return rc;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char *buf = malloc(1 << 16);
  assert_non_null(buf);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}


/* Layout of every case: magic, version, a header length that puts the data
 * at a multiple of 64, a header ending in '\n', then exactly the data. */
static void test_layout(void **state) {
  tmpdir *t = *state;
  char err[256] = "";
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const npy_case *c = &cases[k];
    assert_int_equal(write_case(t->path, c, err, sizeof err), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.npy", t->path, c->name);
    size_t len;
    unsigned char *b = slurp(path, &len);
    assert_true(len >= 10);
    assert_memory_equal(b, "\x93NUMPY\x01\x00", 8);
    size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
    assert_int_equal((10 + hlen) % 64, 0);
    assert_int_equal(b[10 + hlen - 1], '\n');
    size_t n = case_count(c), es = elem_size(c->dtype);
    assert_int_equal(len, 10 + hlen + n * es);
    void *want = malloc(n * es + 1);
    fill(c->dtype, n, want);
    assert_memory_equal(b + 10 + hlen, want, n * es);
    free(want);
    free(b);
  }
}

/* The header text is what numpy itself writes, up to the padding. */
static void test_header_text(void **state) {
  tmpdir *t = *state;
  struct {
    int ndim;
    int64_t shape[2];
    const char *want;
  } h[] = {
      {0, {0}, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
      {1, {5}, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"},
      {2, {0, 3}, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }"},
  };
  float zeros[5] = {0};
  char path[512];
  snprintf(path, sizeof path, "%s/h.npy", t->path);
  for (size_t k = 0; k < sizeof h / sizeof h[0]; k++) {
    assert_int_equal(npy_write(path, BFEED_DTYPE_F32, h[k].ndim, h[k].shape, zeros, NULL, 0), 0);
    size_t len;
    unsigned char *b = slurp(path, &len);
    size_t wl = strlen(h[k].want);
    assert_memory_equal(b + 10, h[k].want, wl);
    size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
    for (size_t i = 10 + wl; i < 10 + hlen - 1; i++) assert_int_equal(b[i], ' ');
    free(b);
  }
}

static void test_descr(void **state) {
  assert_string_equal(npy_descr(BFEED_DTYPE_BF16), "<u2");
  assert_string_equal(npy_descr(BFEED_DTYPE_F32), "<f4");
  assert_string_equal(npy_descr(BFEED_DTYPE_I32), "<i4");
  assert_string_equal(npy_descr(BFEED_DTYPE_I64), "<i8");
  assert_string_equal(npy_descr(BFEED_DTYPE_U8), "|u1");
  assert_null(npy_descr(0));
  assert_null(npy_descr(99));
}

/* Bad arguments fail with EINVAL, a message, and no file. */
static void test_invalid(void **state) {
  tmpdir *t = *state;
  char path[512], err[256];
  snprintf(path, sizeof path, "%s/bad.npy", t->path);
  uint8_t d[4] = {0};
  int64_t neg[2] = {2, -1}, two[1] = {2}, huge[3] = {INT64_MAX, INT64_MAX, 2};
  int64_t many[NPY_MAX_DIMS + 1];
  for (int i = 0; i <= NPY_MAX_DIMS; i++) many[i] = 1;

  struct {
    int dtype, ndim;
    const int64_t *shape;
    const void *data;
    const char *msg;
  } bad[] = {
      {42, 1, two, d, "unknown dtype 42"},
      {BFEED_DTYPE_U8, -1, two, d, "ndim -1"},
      {BFEED_DTYPE_U8, NPY_MAX_DIMS + 1, many, d, "ndim 33"},
      {BFEED_DTYPE_U8, 2, neg, d, "shape[1] = -1 is negative"},
      {BFEED_DTYPE_U8, 3, huge, d, "too large"},
      {BFEED_DTYPE_U8, 1, two, NULL, "no data for 2 bytes"},
      {BFEED_DTYPE_U8, 1, NULL, d, "no shape"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    err[0] = '\0';
    int rc = npy_write(path, bad[k].dtype, bad[k].ndim, bad[k].shape, bad[k].data, err, sizeof err);
    assert_int_equal(rc, BFEED_EINVAL);
    assert_non_null(strstr(err, bad[k].msg));
    assert_non_null(strstr(err, path));
    assert_int_equal(access(path, F_OK), -1);
  }
  /* A huge but empty shape is a valid empty array. */
  int64_t empty_huge[3] = {INT64_MAX, 0, INT64_MAX};
  assert_int_equal(npy_write(path, BFEED_DTYPE_I64, 3, empty_huge, NULL, err, sizeof err), 0);
}

/* An unwritable path fails with EIO and names the file and the reason. */
static void test_io_error(void **state) {
  tmpdir *t = *state;
  char path[512], err[256] = "";
  snprintf(path, sizeof path, "%s/no/such/dir/x.npy", t->path);
  int64_t two[1] = {2};
  uint8_t d[2] = {1, 2};
  assert_int_equal(npy_write(path, BFEED_DTYPE_U8, 1, two, d, err, sizeof err), BFEED_EIO);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "No such file or directory"));
  /* A full device: the data write or the flush fails, and the device,
   * not being a regular file, is not removed. */
  if (access("/dev/full", W_OK) == 0) {
    int64_t big[1] = {1 << 20};
    uint8_t *b = calloc(1 << 20, 1);
    err[0] = '\0';
    assert_int_equal(npy_write("/dev/full", BFEED_DTYPE_U8, 1, big, b, err, sizeof err), BFEED_EIO);
    assert_non_null(strstr(err, "/dev/full: write failed: No space left on device"));
    free(b);
    assert_int_equal(access("/dev/full", F_OK), 0);
  }
  /* err may be NULL. */
  assert_int_equal(npy_write(path, BFEED_DTYPE_U8, 1, two, d, NULL, 0), BFEED_EIO);
}

/* A write that fails half-way (here: past the file size limit) leaves no
 * truncated file behind. */
static void test_partial_removed(void **state) {
  tmpdir *t = *state;
  char path[512], err[256] = "";
  snprintf(path, sizeof path, "%s/partial.npy", t->path);
  struct rlimit old, small;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  small = old;
  small.rlim_cur = 4096;
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN); /* get EFBIG, not a signal */
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  int64_t big[1] = {1 << 20};
  uint8_t *b = calloc(1 << 20, 1);
  int rc = npy_write(path, BFEED_DTYPE_U8, 1, big, b, err, sizeof err);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_handler);
  free(b);
  assert_int_equal(rc, BFEED_EIO);
  assert_non_null(strstr(err, "write failed: File too large"));
  assert_int_equal(access(path, F_OK), -1);
}

static int write_all(const char *dir, char *err, size_t errlen) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    if (write_case(dir, &cases[k], err, errlen) != 0) return -1;
  return 0;
}

int main(int argc, char **argv) {
  int rc = tmpdir_writer_mode(argc, argv, "--write", write_all);
  if (rc >= 0) return rc;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_descr),
      TMPDIR_TEST(test_layout),
      TMPDIR_TEST(test_header_text),
      TMPDIR_TEST(test_invalid),
      TMPDIR_TEST(test_io_error),
      TMPDIR_TEST(test_partial_removed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
