/*
 * test_resize_simd.c -- the SIMD resampler against the portable one, swept.
 *
 * resize_rgb8's vector passes must give the bytes of the scalar passes
 * (which test_resize and the Pillow oracles check against Pillow) for every
 * geometry the daemon can ask for. The sweep covers every output size from
 * 1 to 512 on each axis, against random source sizes, fractional source
 * boxes (a crop of an image the IDCT shrank: sample.c's axis_box_of) and
 * windows at random offsets (the centre crop computes only its window),
 * and each of Pillow's filters (bicubic's negative lobes clip at both
 * ends), on random pixels with junk in the fourth byte. Each case is run on a
 * source rectangle of exactly the pixels the axes read, allocated on its
 * own so that AddressSanitizer sees any read past it.
 *
 * Where the CPU has no SIMD path, resize_rgb8 is the portable code and the
 * comparison is trivially true: the test says so on stderr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resize.h"

/* xorshift64*: the sweep is the same on every run. */
static uint64_t simd_state = 0x9e3779b97f4a7c15ull;
static uint32_t simd_rand(uint32_t n) {
  simd_state ^= simd_state >> 12;
  simd_state ^= simd_state << 25;
  simd_state ^= simd_state >> 27;
  return (uint32_t)((simd_state * 2685821657736338717ull) >> 33) % n;
}

/* One axis: source length, box [in0, in1), output size and window, filter. */
typedef struct simd_axis {
  int in_size;
  double in0, in1;
  int out_size, out0, out_n;
  bfeed_interp filter;
} simd_axis;

/* A random axis producing out_size outputs: a source of 1..max_in pixels,
 * the whole of it or a fractional box within it, and (window) a random
 * window of the outputs. */
static simd_axis simd_axis_random(int out_size, int max_in, int window) {
  simd_axis a = {.in_size = 1 + (int)simd_rand((uint32_t)max_in), .out_size = out_size,
                 .filter = (bfeed_interp)simd_rand(3)};
  a.in1 = a.in_size;
  if (simd_rand(2)) { /* a box in eighths and odd fractions, as M/8 crops give */
    double lo = simd_rand((uint32_t)a.in_size * 8) / 8.0;
    double hi = lo + (1 + simd_rand((uint32_t)((a.in_size - lo) * 8))) / 8.0;
    a.in0 = lo;
    a.in1 = hi > a.in_size ? a.in_size : hi;
  }
  a.out_n = out_size;
  if (window && out_size > 1) {
    a.out_n = 1 + (int)simd_rand((uint32_t)out_size);
    a.out0 = (int)simd_rand((uint32_t)(out_size - a.out_n + 1));
  }
  return a;
}

/* Resize the random image src (sw x sh, RGB) with both paths; 0 when they
 * agree, else the first differing byte's index + 1. */
static size_t simd_compare(const uint8_t *src, int sw, const simd_axis *ax, const simd_axis *ay) {
  const simd_axis *in[2] = {ax, ay};
  resize_axis axes[2];
  void *mem[2];
  for (int k = 0; k < 2; k++) {
    const simd_axis *a = in[k];
    assert_non_null(mem[k] = malloc(resize_axis_filter_size(ax->filter, a->in0, a->in1, a->out_size, a->out_n)));
    resize_axis_filter_init(&axes[k], mem[k], ax->filter, a->in_size, a->in0, a->in1, a->out_size, a->out0,
                            a->out_n);
  }
  resize_axis h = axes[0], v = axes[1];
  int rw = h.hi - h.lo, rh = v.hi - v.lo;
  size_t tsize = resize_tmp_size(&h, &v), osize = (size_t)h.out_n * v.out_n * 3;
  uint8_t *rect = malloc((size_t)rw * rh * 4 + 1), *tmp = malloc(tsize), *tmp2 = malloc(tsize);
  uint8_t *a = malloc(osize), *b = malloc(osize);
  assert_true(rect && tmp && tmp2 && a && b);
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++) {
      memcpy(rect + ((size_t)y * rw + x) * 4, src + ((size_t)(y + v.lo) * sw + x + h.lo) * 3, 3);
      rect[((size_t)y * rw + x) * 4 + 3] = (uint8_t)simd_rand(256); /* junk: never read into the result */
    }
  resize_rgb8(&h, &v, rect, (size_t)rw * 4, a, (size_t)h.out_n * 3, tmp);
  resize_rgb8_portable(&h, &v, rect, (size_t)rw * 4, b, (size_t)h.out_n * 3, tmp2);
  size_t bad = 0;
  for (size_t i = 0; i < osize && !bad; i++)
    if (a[i] != b[i]) bad = i + 1;
  free(a), free(b), free(tmp), free(tmp2), free(rect), free(mem[0]), free(mem[1]);
  return bad;
}

static uint8_t *simd_image(int w, int h) {
  uint8_t *p = malloc((size_t)w * h * 3);
  assert_non_null(p);
  for (size_t i = 0; i < (size_t)w * h * 3; i++)
    p[i] = (uint8_t)simd_rand(256);
  /* Saturated runs too: clip8's two ends must agree as well. */
  for (size_t i = 0; i < (size_t)w * h * 3 / 4; i++)
    p[simd_rand((uint32_t)((size_t)w * h * 3))] = simd_rand(2) ? 255 : 0;
  return p;
}

static void simd_fail_if(size_t bad, const simd_axis *ax, const simd_axis *ay) {
  if (bad)
    fail_msg("SIMD and portable differ at byte %zu: x %d [%g, %g) -> %d [%d +%d], y %d [%g, %g) -> %d [%d +%d]",
             bad - 1, ax->in_size, ax->in0, ax->in1, ax->out_size, ax->out0, ax->out_n, ay->in_size, ay->in0,
             ay->in1, ay->out_size, ay->out0, ay->out_n);
}

#define SIMD_MAX_OUT 512
#define SIMD_MAX_IN 700

/* Every output width 1..512 with a random height, and every height with a
 * random width: downscales, upscales and identity, whole and windowed. */
static void test_every_output_size(void **state) {
  (void)state;
  uint8_t *src = simd_image(SIMD_MAX_IN, SIMD_MAX_IN);
  for (int axis = 0; axis < 2; axis++)
    for (int out = 1; out <= SIMD_MAX_OUT; out++) {
      int other = 1 + (int)simd_rand(64); /* kept small: the sweep is over `out` */
      simd_axis a = simd_axis_random(out, SIMD_MAX_IN, out % 3 == 0);
      simd_axis b = simd_axis_random(other, SIMD_MAX_IN, 0);
      const simd_axis *ax = axis ? &b : &a, *ay = axis ? &a : &b;
      simd_fail_if(simd_compare(src, SIMD_MAX_IN, ax, ay), ax, ay);
    }
  free(src);
}

/* The daemon's own shapes: 224 (and other sizes) from ImageNet-sized
 * sources, train crops at random offsets, eval's resize-then-window. */
static void test_daemon_shapes(void **state) {
  (void)state;
  static const int sizes[] = {224, 160, 128, 96, 64, 32, 256, 299, 384, 512};
  uint8_t *src = simd_image(SIMD_MAX_IN, SIMD_MAX_IN);
  for (int k = 0; k < 200; k++) {
    int size = sizes[k % 10];
    simd_axis ax = simd_axis_random(size, SIMD_MAX_IN, 0), ay = simd_axis_random(size, SIMD_MAX_IN, 0);
    if (k % 2) { /* eval: resize the whole image, keep a size x size window */
      ax = (simd_axis){.in_size = size + (int)simd_rand(SIMD_MAX_IN - size), .out_size = size + (int)simd_rand(200)};
      ay = (simd_axis){.in_size = size + (int)simd_rand(SIMD_MAX_IN - size), .out_size = size + (int)simd_rand(200)};
      ax.in1 = ax.in_size, ay.in1 = ay.in_size;
      ax.out_n = ay.out_n = size;
      ax.out0 = (ax.out_size - size + 1) / 2, ay.out0 = (ay.out_size - size + 1) / 2;
    }
    simd_fail_if(simd_compare(src, SIMD_MAX_IN, &ax, &ay), &ax, &ay);
  }
  free(src);
}

int main(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (!__builtin_cpu_supports("avx2"))
    fprintf(stderr, "test_resize_simd: no AVX2 on this CPU: resize_rgb8 is the portable code\n");
#endif
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_output_size), cmocka_unit_test(test_daemon_shapes)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
