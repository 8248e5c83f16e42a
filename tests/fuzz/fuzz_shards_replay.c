/*
 * fuzz_shards_replay -- fuzz_shards_one over seed shards and deterministic
 * mutations of them, in every build (ctest -R fuzz_shards_replay).
 *
 * Seeds: TFRecord and tar shards of three samples written by the client's
 * demo writer (make_demo_shards.c, not the daemon's code). Mutations, 4000
 * per seed from a fixed splitmix64 stream: bit flips, bytes overwritten
 * with 0x00/0xff/0x80, truncation, insertion and deletion of a run. Fails
 * when a property aborts, when a seed is not fully indexed, or when the
 * mutations never make the indexers both keep and drop samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "fuzz_shards.h"
#include "make_demo_shards.h"
#include "splitmix.h"

#define FUZZ_SHARDS_MUTATIONS 4000

static uint8_t *fuzz_shards_seed(int tar, size_t *n) {
  static const uint8_t jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xd9};
  char dir[64], err[256], path[128];
  snprintf(dir, sizeof dir, "/tmp/bfeed-fuzz-seed-XXXXXX");
  if (!mkdtemp(dir)) return NULL;
  make_demo_shards *w;
  int rc = make_demo_shards_open(&w, tar, dir, "s", 3, 1, err, sizeof err);
  for (int i = 0; rc == 0 && i < 3; i++) rc = make_demo_shards_add(w, jpeg, sizeof jpeg - (size_t)i, i, err, sizeof err);
  if (make_demo_shards_close(w, rc, err, sizeof err) < 0) return fprintf(stderr, "seed: %s\n", err), NULL;
  snprintf(path, sizeof path, tar ? "%s/s-000000.tar" : "%s/s-00000-of-00001", dir);
  uint8_t *p = test_files_read(path, n);
  remove(path);
  remove(dir);
  return p;
}

int main(void) {
  size_t kept = 0, dropped = 0;
  for (int tar = 0; tar < 2; tar++) {
    size_t n;
    uint8_t *seed = fuzz_shards_seed(tar, &n);
    if (!seed) return fprintf(stderr, "cannot write a seed shard\n"), 1;
    if (fuzz_shards_one(seed, n) != 3) return fprintf(stderr, "%s seed: not all 3 samples indexed\n", tar ? "tar" : "tfrecord"), 1;
    uint64_t st = 0x5eed0000u + (uint64_t)tar;
    uint8_t *m = malloc(n + 64);
    for (int k = 0; k < FUZZ_SHARDS_MUTATIONS; k++) {
      memcpy(m, seed, n);
      size_t len = n, at = (size_t)(splitmix64_next(&st) % n), run = 1 + (size_t)(splitmix64_next(&st) % 16);
      switch (splitmix64_next(&st) % 5) {
        case 0: m[at] ^= (uint8_t)(1u << (splitmix64_next(&st) % 8)); break;
        case 1: m[at] = (uint8_t[]){0x00, 0xff, 0x80}[splitmix64_next(&st) % 3]; break;
        case 2: len = at; break;
        case 3:
          if (run > 64) run = 64;
          memmove(m + at + run, m + at, n - at);
          memset(m + at, (int)(splitmix64_next(&st) & 0xff), run);
          len = n + run;
          break;
        default:
          if (at + run > n) run = n - at;
          memmove(m + at, m + at + run, n - at - run);
          len = n - run;
      }
      size_t found = fuzz_shards_one(m, len);
      if (found >= 3) kept++;
      else dropped++;
    }
    free(m);
    free(seed);
  }
  printf("fuzz_shards_replay: %zu mutations kept every sample, %zu dropped some\n", kept, dropped);
  if (!kept || !dropped) return fprintf(stderr, "the mutations did not drive the indexers both ways\n"), 1;
  return 0;
}
