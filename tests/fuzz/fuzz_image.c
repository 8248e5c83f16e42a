/*
 * fuzz_image.c -- fuzz target for the image path (see fuzz_image.h): what
 * a worker does with a dataset file, sample_load, over arbitrary bytes.
 * ASan catches reads and writes outside the input, the output and the
 * scratch buffers; the target checks that the same bytes always give the
 * same pixels (a read of memory that was never written, or state carried
 * over from an earlier image, shows up as a difference between a fresh
 * scratch and one that has decoded other inputs) and that every refusal
 * has a documented code and a reason that names the input.
 */
#include "fuzz_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "fuzz_util.h"
#include "sample.h"

/* A scratch that has decoded other inputs, as a worker's has. */
static sample_scratch fuzz_image_used;

static int fuzz_image_run(const uint8_t *img, size_t len, const sample_params *p, uint64_t seed,
                          sample_scratch *scratch, uint8_t *out, char *err, size_t errlen) {
  rng_t rng;
  rng_init(&rng, seed, 1, 0, 0);
  err[0] = 0;
  int rc = sample_load(img, len, "fuzz.img", p, &rng, out, scratch, err, errlen);
  FUZZ_CHECK(rc == 0 || ((rc == BFEED_EDATASET || rc == BFEED_ELIMIT || rc == BFEED_ENOMEM) && strncmp(err, "fuzz.img: ", 10) == 0));
  return rc;
}

int fuzz_image_one(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  sample_params p = {.size = 8 + data[0] % 64, .mode = data[1] & 1 ? SAMPLE_EVAL : SAMPLE_TRAIN,
                     .allow_dct_scale = (data[1] >> 1) & 1,
                     .eval_draft = (data[1] >> 1) & 1, .max_pixels = FUZZ_IMAGE_MAX_PIXELS};
  uint64_t seed = data[1] >> 2;
  size_t n = (size_t)p.size * (size_t)p.size * 3;
  uint8_t *a = malloc(n), *b = malloc(n);
  FUZZ_CHECK(a && b);
  memset(a, 0x11, n);
  memset(b, 0xee, n); /* a byte left unwritten differs between the two */
  sample_scratch fresh;
  memset(&fresh, 0, sizeof fresh);
  char err[256], err2[256];
  int rc = fuzz_image_run(data + 2, size - 2, &p, seed, &fresh, a, err, sizeof err);
  int rc2 = fuzz_image_run(data + 2, size - 2, &p, seed, &fuzz_image_used, b, err2, sizeof err2);
  FUZZ_CHECK(rc == rc2);
  FUZZ_CHECK(rc != 0 || memcmp(a, b, n) == 0);
  FUZZ_CHECK(rc == 0 || strcmp(err, err2) == 0);
  sample_scratch_free(&fresh);
  free(a);
  free(b);
  return rc == 0;
}

#ifdef FUZZ_MAIN_IMAGE
FUZZ_UTIL_TARGET(fuzz_image_one)
#endif
