/*
 * test_transform.c -- crop choices: hand-worked cases, invariants, and the
 * rng form agreeing with the explicit-draws form. The bit-exact comparison
 * with torchvision itself is tests/daemon/crop_oracle.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "transform.h"

#define DRAWS 23 /* 10 tries x 2, two offsets, the flip */

/* Draws that fail every try: the whole area, at ratio 4/3 (ratio draw ~1)
 * it is wider than a tall image, at 3/4 (ratio draw 0) taller than a wide
 * one. */
static void failing_draws(float *u, float ratio, float flip) {
  for (int i = 0; i < 20; i += 2) {
    u[i] = 1.0f - 0x1p-24f; /* scale ~ 1 */
    u[i + 1] = ratio;
  }
  u[20] = flip;
  u[21] = u[22] = 0.9f;
}

static void test_fallback_by_hand(void **state) {
  float u[DRAWS];
  transform_crop c;
  int used;

  failing_draws(u, 1.0f - 0x1p-24f, 0.25f);
  /* 10 x 1000: ratio 0.01 < 3/4 -> w = 10, h = round(10 / 0.75) = 13 */
  transform_random_resized_crop_draws(10, 1000, u, DRAWS, &used, &c);
  assert_int_equal(used, 21);
  assert_int_equal(c.width, 10);
  assert_int_equal(c.height, 13);
  assert_int_equal(c.left, 0);
  assert_int_equal(c.top, (1000 - 13) / 2);
  assert_int_equal(c.flip, 1);

  failing_draws(u, 0.0f, 0.75f);
  /* 1000 x 10: w = round(10 * 4/3) = 13 */
  transform_random_resized_crop_draws(1000, 10, u, DRAWS, &used, &c);
  assert_int_equal(c.width, 13);
  assert_int_equal(c.height, 10);
  assert_int_equal(c.left, (1000 - 13) / 2);
  assert_int_equal(c.top, 0);
  assert_int_equal(c.flip, 0);

  /* 500 x 375 is inside the ratio range: the whole image. */
  transform_random_resized_crop_draws(500, 375, u, DRAWS, &used, &c);
  assert_int_equal(used, 21);
  assert_int_equal(c.left, 0);
  assert_int_equal(c.top, 0);
  assert_int_equal(c.width, 500);
  assert_int_equal(c.height, 375);
}

/* Draw 0 for both: scale 0.08 and ratio float32(3/4) (e^log(3/4), which
 * is 0.75 within a few ulps): on 1000 x 1000, area 80000 ->
 * w = round(sqrt(80000 * 0.75)) = round(244.95) = 245,
 * h = round(sqrt(80000 / 0.75)) = round(326.6) = 327. */
static void test_first_try_by_hand(void **state) {
  float u[DRAWS] = {0.0f, 0.0f, 0.5f, 0.25f, 0.5f};
  transform_crop c;
  int used;
  transform_random_resized_crop_draws(1000, 1000, u, DRAWS, &used, &c);
  assert_int_equal(used, 5);
  assert_int_equal(c.width, 245);
  assert_int_equal(c.height, 327);
  assert_int_equal(c.top, (int)floor(0.5 * (1000 - 327 + 1)));
  assert_int_equal(c.left, (int)floor(0.25 * (1000 - 245 + 1)));
  assert_int_equal(c.flip, 0); /* 0.5 < 0.5 is false */
}

static void test_short_draws_are_reported(void **state) {
  float u[2] = {0.0f, 0.0f};
  transform_crop c;
  int used;
  transform_random_resized_crop_draws(1000, 1000, u, 2, &used, &c);
  assert_true(used > 2);
}

/* The rng form takes exactly DRAWS uniforms and decides as the draws form
 * does on them; every crop lies inside the image. */
static void test_rng_form_matches_draws(void **state) {
  static const int sizes[][2] = {{500, 375}, {375, 500}, {1, 1}, {10, 1000}, {1000, 10},
                                 {224, 224}, {3, 2},     {4000, 3000}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (uint64_t idx = 0; idx < 2000; idx++) {
      int w = sizes[s][0], h = sizes[s][1];
      rng_t r, copy;
      rng_init(&r, 11, RNG_DOMAIN_SAMPLE, 2, idx);
      copy = r;
      float u[DRAWS];
      for (int i = 0; i < DRAWS; i++) u[i] = rng_uniform_f32(&copy);
      transform_crop a, b;
      int used;
      transform_random_resized_crop(w, h, &r, &a);
      transform_random_resized_crop_draws(w, h, u, DRAWS, &used, &b);
      assert_true(used <= DRAWS);
      assert_int_equal(a.left, b.left);
      assert_int_equal(a.top, b.top);
      assert_int_equal(a.width, b.width);
      assert_int_equal(a.height, b.height);
      assert_int_equal(a.flip, b.flip);
      assert_int_equal(rng_u32(&r), rng_u32(&copy));
      assert_true(a.width >= 1 && a.height >= 1);
      assert_true(a.left >= 0 && a.left + a.width <= w);
      assert_true(a.top >= 0 && a.top + a.height <= h);
    }
}

static void test_aspect_range(void **state) {
  float lo = transform_aspect_from_draw(0.0f), hi = transform_aspect_from_draw(1.0f - 0x1p-24f);
  assert_true(fabsf(lo - 0.75f) < 1e-6f);
  assert_true(fabsf(hi - 4.0f / 3.0f) < 1e-6f);
  for (int k = 0; k < 1 << 24; k += 4099) {
    float a = transform_aspect_from_draw((float)k * 0x1p-24f);
    assert_true(a >= lo && a <= hi);
    assert_true(fabs(log(a) - (log(0.75) + k * 0x1p-24 * log(16.0 / 9))) < 1e-6);
  }
}

static void test_eval_by_hand(void **state) {
  transform_eval e;
  /* 500 x 375, 224: short 256, long int(256 * 500 / 375) = 341; the window
   * offset (341 - 224) / 2 = 58.5 rounds to even 58. */
  transform_eval_params(500, 375, 224, &e);
  assert_int_equal(e.resized_w, 341);
  assert_int_equal(e.resized_h, 256);
  assert_int_equal(e.left, 58);
  assert_int_equal(e.top, 16);
  /* 375 x 503: long int(256 * 503 / 375) = 343, (343 - 224) / 2 = 59.5 -> 60 */
  transform_eval_params(375, 503, 224, &e);
  assert_int_equal(e.resized_w, 256);
  assert_int_equal(e.resized_h, 343);
  assert_int_equal(e.left, 16);
  assert_int_equal(e.top, 60);
  /* 160: round(182.857) = 183 */
  transform_eval_params(183, 183, 160, &e);
  assert_int_equal(e.resized_w, 183);
  assert_int_equal(e.resized_h, 183);
  assert_int_equal(e.left, 12); /* round(11.5) = 12 */
  assert_int_equal(e.top, 12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fallback_by_hand),
      cmocka_unit_test(test_first_try_by_hand),
      cmocka_unit_test(test_short_draws_are_reported),
      cmocka_unit_test(test_rng_form_matches_draws),
      cmocka_unit_test(test_aspect_range),
      cmocka_unit_test(test_eval_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
