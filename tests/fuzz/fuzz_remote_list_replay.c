/*
 * fuzz_remote_list_replay.c -- fuzz_remote_list_one over the seeds and
 * deterministic mutations of them, in every build (ctest -R
 * fuzz_remote_list_replay).
 *
 *   fuzz_remote_list_replay CORPUS_DIR
 *
 * Seeds: the files of CORPUS_DIR (corpus_remote_list/: listings shaped as
 * AWS documents them, with a token, prefixes, entities, url-encoded names,
 * and an error body; scripts/fuzz.sh seeds fuzz_remote_list with them
 * too), each cut at every byte, then 4000 mutations of each
 * (fuzz_util_mutate, XML's own bytes among the interesting ones). Fails
 * when a property aborts, when a seed is accepted by neither parser, or
 * when the mutations never make them refuse.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "test_files.h"

#define FUZZ_REMOTE_LIST_MUTATIONS 4000

size_t fuzz_remote_list_one(const uint8_t *data, size_t size);

static size_t fuzz_remote_list_accepted, fuzz_remote_list_refused;

static size_t fuzz_remote_list_run(const uint8_t *p, size_t n) {
  uint8_t *copy = malloc(n ? n : 1); /* exact size: a read past the body shows under ASan */
  FUZZ_CHECK(copy != NULL);
  memcpy(copy, p, n);
  size_t found = fuzz_remote_list_one(copy, n);
  free(copy);
  if (found) fuzz_remote_list_accepted++;
  else fuzz_remote_list_refused++;
  return found;
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: fuzz_remote_list_replay CORPUS_DIR\n"), 2;
  DIR *d = opendir(argv[1]);
  if (!d) return perror(argv[1]), 1;
  static const uint8_t interesting[] = {'<', '>', '/', '&', ';', '"', '%', '+', '\n', 0x00, 0xff, 0xc3, '0', '9'};
  fuzz_mutator m = {.rng = 23, .interesting = interesting, .ninteresting = sizeof interesting};
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    size_t n = 0;
    uint8_t *seed = test_files_read(path, &n);
    FUZZ_CHECK(seed != NULL);
    if (fuzz_remote_list_run(seed, n) == 0) {
      fprintf(stderr, "fuzz_remote_list_replay: %s: refused by both parsers\n", path);
      abort();
    }
    for (size_t k = 0; k < n; k++) fuzz_remote_list_run(seed, k); /* a body cut at every byte */
    uint8_t *out = malloc(2 * n + 64);
    FUZZ_CHECK(out != NULL);
    for (int i = 0; i < FUZZ_REMOTE_LIST_MUTATIONS; i++)
      fuzz_remote_list_run(out, fuzz_util_mutate(&m, seed, n, 0, out));
    free(out);
    free(seed);
    files++;
  }
  closedir(d);
  printf("fuzz_remote_list_replay: %d seeds, %zu inputs accepted by a parser, %zu refused by both\n", files,
         fuzz_remote_list_accepted, fuzz_remote_list_refused);
  FUZZ_CHECK(files > 0 && fuzz_remote_list_accepted > 0 && fuzz_remote_list_refused > 0);
  return 0;
}
