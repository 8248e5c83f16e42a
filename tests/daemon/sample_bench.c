/*
 * sample_bench -- microseconds per sample_load on a set of images (JPEG, PNG, WebP).
 *
 *   sample_bench eval|train SIZE DCT REPEAT FILE...
 *
 * Files are read into memory first so only decoding and resampling are
 * timed, on one thread, with one scratch reused as a worker would. CPU
 * time, not wall time, so that other load on the machine matters less. Train
 * crops are drawn from rng(seed 1, sample domain, repetition, file index).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sample.h"

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  uint8_t *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
      free(buf);
      buf = NULL;
    }
    *len = n > 0 ? (size_t)n : 0;
  }
  fclose(f);
  return buf;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s eval|train SIZE DCT REPEAT FILE...\n", argv[0]);
    return 2;
  }
  /* DCT 1: train's IDCT shortcut, and eval_decode=fast for eval. */
  sample_params p = {.size = atoi(argv[2]), .mode = strcmp(argv[1], "eval") == 0 ? SAMPLE_EVAL : SAMPLE_TRAIN,
                     .allow_dct_scale = atoi(argv[3]), .eval_draft = atoi(argv[3])};
  int repeat = atoi(argv[4]), n = argc - 5;
  if (p.size < 1 || p.size > 4096 || repeat < 1)
    return 2;
  uint8_t **files = calloc((size_t)n, sizeof(*files));
  size_t *lens = calloc((size_t)n, sizeof(*lens));
  uint8_t *out = malloc((size_t)p.size * p.size * 3);
  if (!files || !lens || !out)
    return 1;
  for (int i = 0; i < n; i++)
    if (!(files[i] = slurp(argv[5 + i], &lens[i]))) {
      fprintf(stderr, "cannot read %s\n", argv[5 + i]);
      return 1;
    }

  sample_scratch s = {0};
  char err[256];
  int failed = 0;
  double t0 = now();
  for (int r = 0; r < repeat; r++)
    for (int i = 0; i < n; i++) {
      rng_t rng;
      rng_init(&rng, 1, RNG_DOMAIN_SAMPLE, (uint64_t)r, (uint64_t)i);
      if (sample_load(files[i], lens[i], argv[5 + i], &p, &rng, out, &s, err, sizeof(err)) != 0) {
        if (r == 0)
          fprintf(stderr, "%s: %s\n", argv[5 + i], err);
        failed++;
      }
    }
  double dt = now() - t0;
  printf("%s size %d dct %d: %.1f us/image over %d samples (%d failed)\n", argv[1], p.size,
         p.allow_dct_scale, dt * 1e6 / ((double)n * repeat), n * repeat, failed);
  sample_scratch_free(&s);
  for (int i = 0; i < n; i++)
    free(files[i]);
  free(files);
  free(lens);
  free(out);
  return failed ? 1 : 0;
}
