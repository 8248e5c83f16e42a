/*
 * test_wordvec_dump.c -- load an embeddings file with bfeed's loader and
 * write what it holds, for tests/daemon/wordvec_oracle.py to compare with
 * its own numpy reading of the file.
 *
 *   wordvec_dump FILE OUTDIR [--cache-dir DIR]
 *
 * OUTDIR/words.bin   per word: u32 length (little-endian), the bytes
 * OUTDIR/vectors.bin nwords x dim bf16 bit patterns, little-endian
 * OUTDIR/meta.txt    "nwords N\ndim D\nformat F\nduplicates K\ncache C\n"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wordvec.h"

static int write_all(const char *dir, const char *name, const void *p, size_t n, FILE **keep) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  if (n && fwrite(p, 1, n, f) != n) {
    fclose(f);
    return -1;
  }
  if (keep) {
    *keep = f;
    return 0;
  }
  return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--cache-dir") == 0)) {
    fprintf(stderr, "usage: wordvec_dump FILE OUTDIR [--cache-dir DIR]\n");
    return 2;
  }
  wordvec_opts o = {.cache = argc == 5, .cache_dir = argc == 5 ? argv[4] : NULL};
  wordvec v;
  wordvec_report rep;
  char err[1024];
  if (wordvec_load(argv[1], &o, &v, &rep, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  static const char *const cache[] = {"off", "hit", "written", "failed"};
  FILE *words = NULL, *meta = NULL;
  int rc = write_all(argv[2], "vectors.bin", v.vectors, (size_t)v.nwords * v.dim * 2, NULL);
  if (rc == 0) rc = write_all(argv[2], "words.bin", NULL, 0, &words);
  for (uint32_t i = 0; rc == 0 && i < v.nwords; i++) {
    uint32_t n = (uint32_t)(v.word_off[i + 1] - v.word_off[i]);
    uint8_t le[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    if (fwrite(le, 1, 4, words) != 4 || fwrite(v.words + v.word_off[i], 1, n, words) != n) rc = -1;
  }
  if (words && fclose(words) != 0) rc = -1;
  if (rc == 0) rc = write_all(argv[2], "meta.txt", NULL, 0, &meta);
  if (rc == 0) {
    fprintf(meta, "nwords %u\ndim %u\nformat %s\nduplicates %llu\ncache %s\n", v.nwords, v.dim,
            wordvec_format_name(v.format), (unsigned long long)v.duplicates, cache[rep.cache]);
    if (rep.cache == WORDVEC_CACHE_FAILED) fprintf(stderr, "cache not written: %s\n", rep.note);
    rc = fclose(meta) == 0 ? 0 : -1;
  }
  wordvec_free(&v);
  if (rc < 0) fprintf(stderr, "cannot write into %s\n", argv[2]);
  return rc < 0 ? 1 : 0;
}
