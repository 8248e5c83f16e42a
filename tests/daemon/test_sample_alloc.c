/*
 * test_sample_alloc.c -- a worker's sample path allocates nothing per
 * sample once warm: 100 samples (train crops with and without the IDCT
 * scale, eval, both layouts and flips through tobf16), decoded a second
 * time after a first pass that let the buffers grow, make no call to malloc, calloc or realloc from bfeed's own code.
 *
 * Every allocation in the process is counted by the definitions below
 * (forwarded to glibc's __libc_*), and attributed with dladdr to the object
 * that called it: bfeed's code is linked into this executable, the
 * decoders' libraries are not. libjpeg allocates and frees its per-image
 * state inside every decode (its memory manager has no hook); those calls
 * are counted and printed, not refused.
 *
 * Skipped under sanitizers, whose runtimes own malloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_files.h"

#include "sample.h"
#include "tobf16.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_COUNTING 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ALLOC_COUNTING 0
#endif
#endif
#ifndef ALLOC_COUNTING
#define ALLOC_COUNTING 1
#endif

#if ALLOC_COUNTING
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int counting;       /* single-threaded test */
static long ours, theirs;  /* calls from this executable, from libraries */
static int in_dladdr;

static void count(void *caller) {
  if (!counting || in_dladdr)
    return;
  in_dladdr = 1;
  Dl_info self, who;
  int a = dladdr((void *)count, &self), b = dladdr(caller, &who);
  in_dladdr = 0;
  if (a && b && self.dli_fbase == who.dli_fbase)
    ours++;
  else
    theirs++;
}

void *malloc(size_t n) {
  count(__builtin_return_address(0));
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
  count(__builtin_return_address(0));
  return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
  count(__builtin_return_address(0));
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

static uint8_t *load(const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", BFEED_IMAGE_FIXTURES, name);
  *len = 0;
  uint8_t *buf = test_files_read(path, len);
  assert_non_null(buf);
  return buf;
}

static void test_warm_path_allocates_nothing(void **state) {
  (void)state;
  static const char *names[] = {"n03196217_digital_clock.JPEG", "n03776460_mobile_home.JPEG",
                                "n03825788_nipple.JPEG", "n03908714_pencil_sharpener.JPEG"};
  enum { N = 4, SIZE = 160, SAMPLES = 100 };
  uint8_t *img[N];
  size_t len[N];
  for (int i = 0; i < N; i++)
    img[i] = load(names[i], &len[i]);
  static uint8_t rgb[SIZE * SIZE * 3], out[SIZE * SIZE * 6];
  uint16_t lut[3][256];
  for (int v = 0; v < 3 * 256; v++)
    lut[v / 256][v % 256] = (uint16_t)(v * 77);
  sample_scratch s = {0};
  char err[256];
  /* The same samples twice: buffers grow (to the largest crop) in the
   * first pass; any allocation in the second is one made per sample. */
  for (int pass = 0; pass < 2; pass++) {
    counting = pass;
    for (int k = 0; k < SAMPLES; k++) {
      sample_params p = {.size = SIZE, .mode = k % 3 == 2 ? SAMPLE_EVAL : SAMPLE_TRAIN,
                         .allow_dct_scale = (k / 3) % 2, .eval_draft = (k / 3) % 2, .defer_flip = 1};
      rng_t r;
      rng_init(&r, 7, RNG_DOMAIN_SAMPLE, 0, (uint64_t)k);
      int i = k % N;
      assert_int_equal(sample_load(img[i], len[i], names[i], &p, &r, rgb, &s, err, sizeof err), 0);
      tobf16_image(rgb, SIZE, s.flip, k % 2, (const uint16_t(*)[256])lut, out);
    }
  }
  counting = 0;
  print_message("%d warm samples: %ld allocations from bfeed, %ld inside the decoders' libraries\n", SAMPLES,
                ours, theirs);
  assert_int_equal(ours, 0);
  sample_scratch_free(&s);
  for (int i = 0; i < N; i++)
    free(img[i]);
}
#else
static void test_warm_path_allocates_nothing(void **state) {
  (void)state;
  skip();
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warm_path_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
