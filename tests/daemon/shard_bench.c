/*
 * shard_bench -- what reading a sample from a TFRecord shard costs beside
 * decoding it: CPU microseconds per record for the index build, for
 * tfrecord_sample (pread, both CRC-32Cs, protobuf-c parse, copy), for the
 * protobuf-c parse alone and for sample_load (decode + eval resize) of the
 * same image. No test runs it; scripts/bench_formats.sh prints it.
 *
 *   shard_bench SHARD REPEAT [FILE...]
 *
 * With FILEs (the same images as files), reading them as a folder dataset
 * does (storage_read_file: open, fstat, read, close) is timed too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dataset.h"
#include "log.h"
#include "sample.h"
#include "storage.h"
#include "tfrecord.h"

static double shard_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: shard_bench SHARD REPEAT [FILE...]\n"), 2;
  const char *path = argv[1];
  int repeat = atoi(argv[2]);
  logger lg;
  log_init(&lg, LOG_WARN);
  shard_index_ctx ctx = {.log = &lg, .dataset = "bench"};
  tf_example_keys keys = {.image = "image/encoded", .label = "image/class/label"};
  shard_index x = {0};
  char err[512];
  double t0 = shard_bench_now();
  if (tfrecord_index(path, &keys, &ctx, &x, err, sizeof err) < 0 || x.n == 0)
    return fprintf(stderr, "shard_bench: %s\n", x.n ? err : "no records"), 1;
  double t_index = shard_bench_now() - t0;
  uint8_t *buf = NULL, *rgb = malloc(224 * 224 * 3);
  size_t cap = 0, len;
  sample_scratch scratch = {0};
  sample_params sp = {.size = 224, .mode = SAMPLE_EVAL, .allow_dct_scale = 1};
  double t_read = 0, t_parse = 0, t_decode = 0;
  for (int r = 0; r < repeat; r++)
    for (size_t i = 0; i < x.n; i++) {
      double a = shard_bench_now();
      if (tfrecord_sample(path, &x.e[i], &keys, &buf, &cap, &len, err, sizeof err) < 0)
        return fprintf(stderr, "shard_bench: %s\n", err), 1;
      double b = shard_bench_now();
      if (sample_load(buf, len, path, &sp, NULL, rgb, &scratch, err, sizeof err) < 0)
        return fprintf(stderr, "shard_bench: record %zu: %s\n", i, err), 1;
      double c = shard_bench_now();
      t_read += b - a;
      t_decode += c - b;
    }
  /* The parse alone, on records already in memory and CRC-checked. */
  uint8_t *rec = NULL;
  size_t rcap = 0;
  storage_file file, *f = &file;
  if (storage_open(path, f, err, sizeof err) < 0) f = NULL;
  for (size_t i = 0; f && i < x.n; i++) {
    uint64_t n;
    if (tfrecord_read(f, x.e[i].off, storage_size(f), &rec, &rcap, &n, err, sizeof err) < 0) break;
    double a = shard_bench_now();
    for (int r = 0; r < repeat; r++) {
      tf_example ex;
      if (tf_example_parse(rec, n, &keys, &ex, err, sizeof err) == 0) tf_example_free(&ex);
    }
    t_parse += shard_bench_now() - a;
  }
  if (f) storage_close(f);
  /* The same bytes as files of a folder dataset. */
  double t_files = 0;
  size_t nfiles = (size_t)(argc - 3);
  for (int r = 0; r < repeat; r++)
    for (size_t i = 0; i < nfiles; i++) {
      double a = shard_bench_now();
      if (storage_read_file(argv[3 + i], DATASET_MAX_FILE, &buf, &cap, &len, err, sizeof err) < 0)
        return fprintf(stderr, "shard_bench: %s\n", err), 1;
      t_files += shard_bench_now() - a;
    }
  double per = 1e6 / ((double)x.n * repeat);
  printf("shard %s: %zu records\n", path, x.n);
  printf("  index build: %.1f ms (%.1f us per record)\n", t_index * 1e3, t_index * 1e6 / x.n);
  printf("  per sample: read+CRC+parse %.1f us, protobuf-c parse alone %.1f us, decode+resize %.1f us\n",
         t_read * per, t_parse * per, t_decode * per);
  printf("  protobuf-c parse = %.2f%% of read+decode; the whole record read = %.2f%%\n",
         100 * t_parse / (t_read + t_decode), 100 * t_read / (t_read + t_decode));
  if (nfiles)
    printf("  reading the same images as files: %.1f us per sample (%zu files)\n",
           t_files * 1e6 / ((double)nfiles * repeat), nfiles);
  free(buf);
  free(rec);
  free(rgb);
  sample_scratch_free(&scratch);
  shard_index_free(&x);
  return 0;
}
