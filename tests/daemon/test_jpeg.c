/*
 * test_jpeg.c -- the libjpeg wrapper: Pillow's pixels, partial decoding,
 * and errors that come back as messages.
 *
 * Expected sums and pixels were taken from Pillow 9.4
 * (Image.open(f).convert("RGB")) on the fixtures; partial and scaled decodes
 * are checked against full decodes of the same image.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_files.h"

#include "bfeed_types.h"
#include "jpeg_decode.h"
#include "sample.h"

typedef struct fixture {
  const char *name;
  int width, height, components;
  enum jpeg_decode_color color;
  uint64_t sum;             /* of every RGB byte */
  uint8_t mid[3], last[3];  /* pixels (w/3, h/2) and (w-1, h-1) */
} fixture;

static const fixture fixtures[] = {
    {"n03196217_digital_clock.JPEG", 500, 375, 3, JPEG_DECODE_YCBCR, 14035940, {57, 1, 2}, {42, 2, 2}},
    {"n03776460_mobile_home.JPEG", 468, 315, 3, JPEG_DECODE_YCBCR, 91395139, {198, 204, 200}, {255, 255, 255}},
    {"n03825788_nipple.JPEG", 106, 150, 3, JPEG_DECODE_YCBCR, 7927771, {121, 86, 22}, {197, 210, 216}},
    {"n03908714_pencil_sharpener.JPEG", 333, 500, 1, JPEG_DECODE_GRAY, 65128869, {30, 30, 30}, {21, 21, 21}},
};
#define NFIX (sizeof(fixtures) / sizeof(fixtures[0]))

static uint8_t *load(const char *dir, const char *name, size_t *len) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  *len = 0;
  uint8_t *buf = test_files_read(path, len);
  assert_non_null(buf);
  return buf;
}

/* Decode [x0,x1) x [y0,y1) of the image at scale m/8 as RGBX; NULL on
 * error. */
static uint8_t *decode(jdec *d, const uint8_t *buf, size_t len, int m, int x0, int x1, int y0,
                       int y1, char *err) {
  jpeg_decode_info info;
  if (jpeg_decode_header(d, buf, len, &info, err, 128) != 0 || jpeg_decode_start(d, m, err, 128) != 0)
    return NULL;
  uint8_t *out = malloc((size_t)(x1 - x0) * (y1 - y0) * 4);
  assert_non_null(out);
  if (jpeg_decode_read(d, x0, x1, y0, y1, out, (size_t)(x1 - x0) * 4, err, 128) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

static uint8_t *decode_full(jdec *d, const uint8_t *buf, size_t len, int m, int *w, int *h) {
  jpeg_decode_info info;
  char err[128];
  assert_int_equal(jpeg_decode_header(d, buf, len, &info, err, sizeof(err)), 0);
  jpeg_decode_scaled_size(&info, m, w, h);
  uint8_t *out = decode(d, buf, len, m, 0, *w, 0, *h, err);
  assert_non_null(out);
  return out;
}

static uint64_t rgb_sum(const uint8_t *rgbx, int w, int h) {
  uint64_t sum = 0;
  for (size_t k = 0; k < (size_t)w * h; k++)
    sum += (uint64_t)rgbx[4 * k] + rgbx[4 * k + 1] + rgbx[4 * k + 2];
  return sum;
}

static void test_header_and_pillow_pixels(void **state) {
  jdec *d = jpeg_decode_new();
  for (size_t i = 0; i < NFIX; i++) {
    const fixture *f = &fixtures[i];
    size_t len;
    uint8_t *buf = load(BFEED_IMAGE_FIXTURES, f->name, &len);
    jpeg_decode_info info;
    char err[128];
    assert_int_equal(jpeg_decode_header(d, buf, len, &info, err, sizeof(err)), 0);
    assert_int_equal(info.width, f->width);
    assert_int_equal(info.height, f->height);
    assert_int_equal(info.components, f->components);
    assert_int_equal(info.color, f->color);

    int w, h;
    uint8_t *px = decode_full(d, buf, len, 8, &w, &h);
    assert_int_equal(w, f->width);
    assert_int_equal(h, f->height);
    assert_int_equal(rgb_sum(px, w, h), f->sum);
    assert_memory_equal(px + ((size_t)(h / 2) * w + w / 3) * 4, f->mid, 3);
    assert_memory_equal(px + ((size_t)h * w - 1) * 4, f->last, 3);
    free(px);
    free(buf);
  }
  jpeg_decode_free(d);
}

/* Cropped columns and skipped rows must give the full decode's pixels, also
 * at iMCU-aligned offsets where the crop edge falls on a block edge, at
 * every scale (eval's centre window at 1/2, 1/4, 1/8 included). */
static void check_regions(jdec *d, const uint8_t *buf, size_t len) {
  static const int regions[][4] = {{0, 1, 0, 1},    {16, 48, 16, 48}, {17, 90, 33, 34},
                                   {32, 106, 0, 150}, {0, 106, 149, 150}, {105, 106, 8, 150},
                                   {48, 64, 64, 80}, {9, 97, 13, 137}};
  for (int m = 1; m <= 8; m++) {
    int w, h;
    uint8_t *full = decode_full(d, buf, len, m, &w, &h);
    for (size_t r = 0; r < sizeof(regions) / sizeof(regions[0]); r++) {
      int x0 = regions[r][0] * w / 106, x1 = regions[r][1] * w / 106;
      int y0 = regions[r][2] * h / 150, y1 = regions[r][3] * h / 150;
      if (x1 <= x0)
        x1 = x0 + 1;
      if (y1 <= y0)
        y1 = y0 + 1;
      char err[128];
      uint8_t *part = decode(d, buf, len, m, x0, x1, y0, y1, err);
      assert_non_null(part);
      for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
          assert_memory_equal(part + ((size_t)(y - y0) * (x1 - x0) + x - x0) * 4,
                              full + ((size_t)y * w + x) * 4, 3);
      free(part);
    }
    free(full);
  }
}

static void test_region_equals_full(void **state) {
  jdec *d = jpeg_decode_new();
  for (size_t i = 0; i < NFIX; i++) {
    size_t len;
    uint8_t *buf = load(BFEED_IMAGE_FIXTURES, fixtures[i].name, &len);
    check_regions(d, buf, len);
    free(buf);
  }
  jpeg_decode_free(d);
}

/* The same over the team's ImageNet sample when it is there (grayscale,
 * CMYK, progressive, odd sizes, 4:2:0 and 4:4:4 among them). */
static void test_region_equals_full_imagenet(void **state) {
  DIR *top = opendir(BFEED_IMAGENET);
  if (!top) {
    print_message("no %s: skipped\n", BFEED_IMAGENET);
    return;
  }
  jdec *d = jpeg_decode_new();
  int n = 0;
  struct dirent *c;
  while ((c = readdir(top))) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", BFEED_IMAGENET, c->d_name);
    DIR *sub = c->d_name[0] == '.' ? NULL : opendir(dir);
    struct dirent *f;
    while (sub && (f = readdir(sub))) {
      if (f->d_name[0] == '.')
        continue;
      size_t len;
      uint8_t *buf = load(dir, f->d_name, &len);
      check_regions(d, buf, len);
      free(buf);
      n++;
    }
    if (sub)
      closedir(sub);
  }
  closedir(top);
  jpeg_decode_free(d);
  print_message("%d images of %s\n", n, BFEED_IMAGENET);
}

static void expect_error(jdec *d, const uint8_t *buf, size_t len, const char *want) {
  jpeg_decode_info info;
  char err[128] = "";
  int rc = jpeg_decode_header(d, buf, len, &info, err, sizeof(err));
  if (rc == 0) {
    int w, h;
    jpeg_decode_scaled_size(&info, 8, &w, &h);
    uint8_t *px = decode(d, buf, len, 8, 0, w, 0, h, err);
    assert_null(px);
  }
  if (!strstr(err, want))
    fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

static void test_errors(void **state) {
  size_t len;
  uint8_t *good = load(BFEED_IMAGE_FIXTURES, fixtures[1].name, &len);
  jdec *d = jpeg_decode_new();

  uint8_t junk[4096];
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (uint8_t)(i * 131 + 7);
  expect_error(d, junk, sizeof(junk), "not a JPEG");
  expect_error(d, junk, 0, "not a JPEG");
  expect_error(d, good, len / 2, "truncated data");
  expect_error(d, good, 300, "truncated data");
  expect_error(d, good, len - 2, "truncated data"); /* all scan data, no EOI */

  /* A valid start of image followed by nonsense. */
  junk[0] = 0xFF;
  junk[1] = 0xD8;
  expect_error(d, junk, sizeof(junk), "corrupt data");

  /* Entropy-coded data cut by a marker that cannot be there. */
  uint8_t *bad = malloc(len);
  memcpy(bad, good, len);
  memcpy(bad + len / 2, "\xff\xd0\xff\xd0", 4);
  expect_error(d, bad, len, "corrupt data");

  /* The same decoder still decodes a good image afterwards. */
  int w, h;
  uint8_t *px = decode_full(d, good, len, 8, &w, &h);
  assert_int_equal(rgb_sum(px, w, h), fixtures[1].sum);
  free(px);
  free(bad);
  jpeg_decode_free(d);
  free(good);
}

/* buf without its DQT (quantization table) segments: a file that uses
 * tables it never defines. */
static size_t strip_dqt(const uint8_t *buf, size_t len, uint8_t *out) {
  size_t i = 2, o = 2;
  memcpy(out, buf, 2);
  while (i + 4 <= len && buf[i] == 0xFF && buf[i + 1] != 0xDA) {
    size_t seg = 2 + ((size_t)buf[i + 2] << 8 | buf[i + 3]);
    if (buf[i + 1] != 0xDB) {
      memcpy(out + o, buf + i, seg);
      o += seg;
    }
    i += seg;
  }
  memcpy(out + o, buf + i, len - i);
  return o + len - i;
}

/* libjpeg keeps tables from one image to the next: a decoder that has
 * decoded another image must refuse a file lacking its tables just as a
 * fresh one does, not decode it with the earlier image's tables (found by
 * fuzz_image: a batch then depended on the worker). */
static void test_no_tables_from_the_previous_image(void **state) {
  size_t len;
  uint8_t *good = load(BFEED_IMAGE_FIXTURES, fixtures[1].name, &len);
  uint8_t *bare = malloc(len);
  assert_non_null(bare);
  size_t n = strip_dqt(good, len, bare);
  assert_true(n < len);
  char err[128];
  jdec *fresh = jpeg_decode_new(), *used = jpeg_decode_new();
  assert_null(decode(fresh, bare, n, 8, 0, 8, 0, 8, err));
  assert_non_null(strstr(err, "Quantization table"));
  int w, h;
  free(decode_full(used, good, len, 8, &w, &h));
  assert_null(decode(used, bare, n, 8, 0, 8, 0, 8, err));
  assert_non_null(strstr(err, "Quantization table"));
  jpeg_decode_free(fresh);
  jpeg_decode_free(used);
  free(bare);
  free(good);
}

static void test_sample_rejects(void **state) {
  size_t len;
  uint8_t *good = load(BFEED_IMAGE_FIXTURES, fixtures[2].name, &len); /* 106 x 150 */
  sample_scratch s = {0};
  sample_params p = {.size = 32, .mode = SAMPLE_TRAIN, .allow_dct_scale = 1};
  uint8_t out[32 * 32 * 3];
  char err[128];

  transform_crop inside = {10, 20, 96, 130, 1};
  assert_int_equal(sample_load_crop(good, len, "good.jpg", &p, &inside, out, &s, err, sizeof(err)), 0);
  static const transform_crop outside[] = {
      {0, 0, 107, 150, 0}, {-1, 0, 10, 10, 0}, {0, 141, 10, 10, 0}, {5, 5, 0, 10, 0}};
  for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
    assert_int_equal(sample_load_crop(good, len, "good.jpg", &p, &outside[i], out, &s, err, sizeof(err)), BFEED_EINTERNAL);
    assert_non_null(strstr(err, "outside"));
  }
  transform_eval too_far = {106, 150, 80, 0};
  assert_int_equal(sample_load_eval(good, len, "good.jpg", &p, &too_far, out, &s, err, sizeof(err)), BFEED_EINTERNAL);

  /* A truncated file is refused whatever the crop, even one whose rows all
   * lie before the cut. */
  transform_crop top = {0, 0, 20, 20, 0};
  assert_int_equal(sample_load_crop(good, len * 3 / 4, "good.jpg", &p, &top, out, &s, err, sizeof(err)), BFEED_EDATASET);
  assert_string_equal(err, "good.jpg: truncated data");
  sample_scratch_free(&s);
  free(good);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_and_pillow_pixels),
      cmocka_unit_test(test_region_equals_full),
      cmocka_unit_test(test_region_equals_full_imagenet),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_sample_rejects),
      cmocka_unit_test(test_no_tables_from_the_previous_image),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
