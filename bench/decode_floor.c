/*
 * decode_floor.c -- the decode floor: every JPEG of a folder tree decoded whole, at full size, by libjpeg-turbo.
 * Run by bench/compare.sh, which sets a pipeline's images/s against it.
 *
 *   decode_floor DIR [THREADS] [PASSES]
 *
 * The files are read into memory first, then THREADS threads (default 2)
 * decode them to RGB PASSES times (default 3), file i on thread i % THREADS;
 * wall time, since the point is what the machine's cores can do together.
 * Prints one JSON line: images, seconds, images_per_s, threads.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <turbojpeg.h>

#include "clock.h"

typedef struct decode_floor_file {
  unsigned char *buf;
  unsigned long len;
} decode_floor_file;

static decode_floor_file *decode_floor_files;
static size_t decode_floor_n, decode_floor_cap;
static int decode_floor_threads = 2, decode_floor_passes = 3;

static int decode_floor_is_jpeg(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int decode_floor_add(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)ftw;
  if (type != FTW_F || !decode_floor_is_jpeg(path) || st->st_size <= 0) return 0;
  if (decode_floor_n == decode_floor_cap) {
    decode_floor_cap = decode_floor_cap ? 2 * decode_floor_cap : 256;
    decode_floor_file *f = realloc(decode_floor_files, decode_floor_cap * sizeof *f);
    if (!f) return fprintf(stderr, "decode_floor: out of memory\n"), -1;
    decode_floor_files = f;
  }
  FILE *fp = fopen(path, "rb");
  unsigned char *buf = malloc((size_t)st->st_size);
  size_t got = fp && buf ? fread(buf, 1, (size_t)st->st_size, fp) : 0;
  if (fp) fclose(fp);
  if (got != (size_t)st->st_size) {
    free(buf);
    return fprintf(stderr, "decode_floor: %s: cannot read\n", path), -1;
  }
  decode_floor_files[decode_floor_n++] = (decode_floor_file){buf, (unsigned long)got};
  return 0;
}

/* Decode this thread's share of the files, every pass; the count of
 * images decoded, or -1 after naming a file that does not decode. */
static void *decode_floor_run(void *arg) {
  long t = (long)arg, done = 0;
  tjhandle h = tjInitDecompress();
  unsigned char *rgb = NULL;
  size_t rgb_cap = 0;
  for (int p = 0; p < decode_floor_passes && h; p++)
    for (size_t i = (size_t)t; i < decode_floor_n; i += (size_t)decode_floor_threads) {
      int w, hgt, sub, cs;
      const decode_floor_file *f = &decode_floor_files[i];
      if (tjDecompressHeader3(h, f->buf, f->len, &w, &hgt, &sub, &cs) < 0) goto bad;
      size_t need = (size_t)w * (size_t)hgt * 3;
      if (need > rgb_cap) {
        free(rgb);
        if (!(rgb = malloc(rgb_cap = need))) goto bad;
      }
      if (tjDecompress2(h, f->buf, f->len, rgb, w, 0, hgt, TJPF_RGB, 0) < 0) goto bad;
      done++;
      continue;
    bad:
      fprintf(stderr, "decode_floor: file %zu: %s\n", i, h ? tjGetErrorStr2(h) : "no decoder");
      done = -1;
      break;
    }
  free(rgb);
  if (h) tjDestroy(h);
  return (void *)done;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) return fprintf(stderr, "usage: decode_floor DIR [THREADS] [PASSES]\n"), 2;
  if (argc > 2) decode_floor_threads = atoi(argv[2]);
  if (argc > 3) decode_floor_passes = atoi(argv[3]);
  if (decode_floor_threads < 1 || decode_floor_threads > 256 || decode_floor_passes < 1)
    return fprintf(stderr, "decode_floor: THREADS 1..256 and PASSES >= 1\n"), 2;
  if (nftw(argv[1], decode_floor_add, 32, FTW_PHYS) != 0) return fprintf(stderr, "decode_floor: cannot walk %s\n", argv[1]), 1;
  if (decode_floor_n == 0) return fprintf(stderr, "decode_floor: no .jpg or .jpeg under %s\n", argv[1]), 1;
  pthread_t th[256];
  double a = clock_now_s();
  for (long t = 0; t < decode_floor_threads; t++) pthread_create(&th[t], NULL, decode_floor_run, (void *)t);
  long images = 0, bad = 0;
  for (int t = 0; t < decode_floor_threads; t++) {
    void *r;
    pthread_join(th[t], &r);
    if ((long)r < 0) bad = 1;
    else images += (long)r;
  }
  double s = clock_now_s() - a;
  if (bad) return 1;
  printf("{\"images\":%ld,\"seconds\":%.4f,\"images_per_s\":%.1f,\"threads\":%d}\n", images, s, images / s,
         decode_floor_threads);
  return 0;
}
