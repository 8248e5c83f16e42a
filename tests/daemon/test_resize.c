/*
 * test_resize.c -- the bilinear resampler against Pillow and itself.
 *
 * The expected arrays were produced by Pillow 9.4 (Image.resize with
 * BILINEAR) from the pattern in make_pattern; the properties (constant in,
 * constant out; identity; windows agree with the full result; weights sum
 * to one) hold for any correct implementation. Every resize runs through
 * both the SIMD and the portable passes, which must agree byte for byte.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resize.h"

/* Resize a whole w x h image (or its box [x0,x1) x [y0,y1)) to ow x oh,
 * keeping the window at (wx, wy) of size ww x wh. */
typedef struct job {
  int w, h;
  double x0, y0, x1, y1;
  int ow, oh;
  int wx, wy, ww, wh;
} job;

static uint8_t *run(const job *j, const uint8_t *src) {
  size_t hb = resize_axis_size(j->x0, j->x1, j->ow, j->ww);
  size_t vb = resize_axis_size(j->y0, j->y1, j->oh, j->wh);
  int32_t *mem = malloc(hb + vb);
  assert_non_null(mem);
  resize_axis h, v;
  resize_axis_init(&h, mem, j->w, j->x0, j->x1, j->ow, j->wx, j->ww);
  resize_axis_init(&v, (char *)mem + hb, j->h, j->y0, j->y1, j->oh, j->wy, j->wh);
  assert_true(h.lo >= 0 && h.hi <= j->w && h.lo < h.hi);
  assert_true(v.lo >= 0 && v.hi <= j->h && v.lo < v.hi);
  void *tmp = malloc(resize_tmp_size(&h, &v));
  uint8_t *dst = malloc((size_t)j->ww * j->wh * 3);
  assert_non_null(tmp);
  assert_non_null(dst);
  /* Only the rectangle the axes ask for, as RGBX with junk in X: nothing
   * outside it, nor the fourth byte, may reach the result. */
  int rw = h.hi - h.lo, rh = v.hi - v.lo;
  uint8_t *rect = malloc((size_t)rw * rh * 4);
  assert_non_null(rect);
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++) {
      memcpy(rect + ((size_t)y * rw + x) * 4, src + ((size_t)(y + v.lo) * j->w + x + h.lo) * 3, 3);
      rect[((size_t)y * rw + x) * 4 + 3] = (uint8_t)(x * 97 + y);
    }
  resize_rgb8(&h, &v, rect, (size_t)rw * 4, dst, (size_t)j->ww * 3, tmp);
  uint8_t *again = malloc((size_t)j->ww * j->wh * 3);
  assert_non_null(again);
  resize_rgb8_portable(&h, &v, rect, (size_t)rw * 4, again, (size_t)j->ww * 3, tmp);
  assert_memory_equal(again, dst, (size_t)j->ww * j->wh * 3);
  free(again);
  free(rect);
  free(tmp);
  free(mem);
  return dst;
}

static job whole(int w, int h, int ow, int oh) {
  return (job){w, h, 0, 0, w, h, ow, oh, 0, 0, ow, oh};
}

static uint8_t *make_pattern(int w, int h) {
  uint8_t *a = malloc((size_t)w * h * 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *p = a + ((size_t)y * w + x) * 3;
      p[0] = (uint8_t)((x * 37 + y * 11) % 256);
      p[1] = (uint8_t)((x * x * 5 + y * 29) % 256);
      p[2] = (uint8_t)((255 - x * 23 - y * 17) & 255);
    }
  return a;
}

static uint8_t *make_random(int w, int h, unsigned seed) {
  uint8_t *a = malloc((size_t)w * h * 3);
  for (size_t i = 0; i < (size_t)w * h * 3; i++) {
    seed = seed * 1103515245u + 12345u;
    a[i] = (uint8_t)(seed >> 16);
  }
  return a;
}

static const uint8_t pillow_3x5[] = {
    43,  16,  226, 132, 73,  171, 146, 168, 115, 56,  49,  207, 145, 106, 152,
    159, 143, 96,  69,  83,  188, 158, 137, 133, 172, 126, 77,  81,  116, 168,
    166, 167, 113, 119, 109, 57,  94,  149, 149, 176, 166, 94,  96,  94,  38};

static const uint8_t pillow_11x4[] = {
    4,   11,  249, 26,  14,  235, 53,  21,  219, 80,  32,  202, 107, 50,  185, 134, 74,
    169, 160, 101, 152, 187, 134, 135, 214, 174, 118, 136, 179, 102, 7,   160, 88,  20,
    52,  225, 42,  55,  211, 69,  62,  195, 96,  73,  178, 123, 91,  161, 150, 115, 145,
    176, 142, 128, 203, 175, 111, 230, 195, 94,  152, 137, 78,  23,  41,  64,  35,  93,
    200, 57,  96,  186, 84,  103, 170, 111, 114, 153, 138, 132, 136, 165, 156, 120, 191,
    183, 103, 218, 216, 86,  187, 101, 69,  117, 61,  53,  38,  82,  39,  51,  134, 176,
    73,  137, 162, 100, 144, 146, 127, 155, 129, 154, 173, 112, 181, 197, 96,  207, 188,
    79,  234, 105, 62,  87,  72,  45,  32,  85,  29,  54,  123, 15};

/* Image.resize((5, 3), BILINEAR, box=(1, 2, 7, 5)): the filter reaches
 * past the box into the rest of the image, as Pillow's does. */
static const uint8_t pillow_box_5x3[] = {
    64,  66,  195, 109, 87,  167, 152, 121, 141, 194, 167, 114, 222, 214, 86,
    75,  95,  178, 120, 116, 150, 163, 150, 124, 205, 196, 97,  233, 56,  69,
    86,  124, 161, 131, 145, 133, 174, 179, 107, 216, 225, 80,  56,  85,  52};

static void test_matches_pillow(void **state) {
  uint8_t *src = make_pattern(8, 6);
  job j = whole(8, 6, 3, 5);
  uint8_t *out = run(&j, src);
  assert_memory_equal(out, pillow_3x5, sizeof(pillow_3x5));
  free(out);

  j = whole(8, 6, 11, 4);
  out = run(&j, src);
  assert_memory_equal(out, pillow_11x4, sizeof(pillow_11x4));
  free(out);

  j = (job){8, 6, 1, 2, 7, 5, 5, 3, 0, 0, 5, 3};
  out = run(&j, src);
  assert_memory_equal(out, pillow_box_5x3, sizeof(pillow_box_5x3));
  free(out);
  free(src);
}

static void test_constant_stays_constant(void **state) {
  static const int sizes[][4] = {{500, 375, 224, 224}, {17, 9, 300, 5}, {1, 1, 224, 224},
                                 {7, 300, 256, 10971}, {640, 480, 3, 2}};
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
    static const uint8_t px[3] = {7, 128, 255};
    int w = sizes[s][0], h = sizes[s][1];
    uint8_t *src = malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h; i++) memcpy(src + i * 3, px, 3);
    int ow = sizes[s][2], oh = sizes[s][3];
    job j = whole(w, h, ow, oh);
    j.ww = ow < 64 ? ow : 64;
    j.wh = oh < 64 ? oh : 64;
    j.wx = (ow - j.ww) / 2;
    j.wy = (oh - j.wh) / 2;
    uint8_t *out = run(&j, src);
    for (int i = 0; i < j.ww * j.wh; i++)
      if (memcmp(out + 3 * i, px, 3) != 0) fail_msg("%dx%d -> %dx%d: pixel %d changed", w, h, ow, oh, i);
    free(out);
    free(src);
  }
}

/* To its own size, the source comes back as it was. */
static void test_identity(void **state) {
  uint8_t *src = make_random(37, 23, 1), *out;
  job j = whole(37, 23, 37, 23);
  assert_memory_equal(out = run(&j, src), src, 37 * 23 * 3);
  free(out);
  free(src);
}

/* A window must be exactly the matching part of the full output: the
 * windowed path is how eval's centre crop is computed. */
static void test_window_is_part_of_whole(void **state) {
  uint8_t *src = make_random(200, 150, 2);
  job full = whole(200, 150, 90, 120);
  uint8_t *all = run(&full, src);
  static const int windows[][4] = {{0, 0, 90, 120}, {10, 20, 30, 40}, {89, 119, 1, 1},
                                   {0, 60, 90, 1}};
  for (size_t k = 0; k < sizeof(windows) / sizeof(windows[0]); k++) {
    job j = full;
    j.wx = windows[k][0];
    j.wy = windows[k][1];
    j.ww = windows[k][2];
    j.wh = windows[k][3];
    uint8_t *part = run(&j, src);
    for (int y = 0; y < j.wh; y++)
      assert_memory_equal(part + (size_t)y * j.ww * 3,
                          all + ((size_t)(y + j.wy) * 90 + j.wx) * 3, (size_t)j.ww * 3);
    free(part);
  }
  free(all);
  free(src);
}

/* Weights are non-negative, sum to 1 up to one rounding step each, and lie
 * inside the source; the reduction widens the filter (antialiasing). */
static void test_weights(void **state) {
  static const double cases[][5] = {
      /* in_size, in0, in1, out_size */
      {500, 0, 500, 224}, {224, 0, 224, 500}, {1, 0, 1, 224}, {63, 2.5, 60.25, 16}, {4000, 0, 4000, 3}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    int in_size = (int)cases[c][0], out = (int)cases[c][3];
    double in0 = cases[c][1], in1 = cases[c][2];
    void *mem = malloc(resize_axis_size(in0, in1, out, out));
    resize_axis a;
    resize_axis_init(&a, mem, in_size, in0, in1, out, 0, out);
    double scale = (in1 - in0) / out;
    assert_int_equal(a.ksize, 2 * (int)ceil(scale > 1 ? scale : 1) + 1); /* Pillow's ksize */
    for (int i = 0; i < out; i++) {
      int first = a.bounds[2 * i], n = a.bounds[2 * i + 1];
      assert_true(first >= 0 && n >= 1 && first + n <= in_size && n <= a.ksize);
      int64_t sum = 0;
      for (int k = 0; k < n; k++) {
        assert_true(a.coef[(size_t)i * a.ksize + k] >= 0);
        sum += a.coef[(size_t)i * a.ksize + k];
      }
      assert_true(llabs(sum - ((int64_t)1 << RESIZE_PRECISION_BITS)) <= n);
    }
    free(mem);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matches_pillow),
      cmocka_unit_test(test_constant_stays_constant),
      cmocka_unit_test(test_identity),
      cmocka_unit_test(test_window_is_part_of_whole),
      cmocka_unit_test(test_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
