/*
 * fuzz_image_replay.c -- the image path's fuzz entry point (fuzz_image.h) in
 * every build: each file of the corpus folders (whole fuzz inputs, the two
 * parameter bytes first), then deterministic mutations of each
 * (fuzz_util.h); plain image files (a folder given after --images) are run
 * under four parameter settings and mutated in their first bytes, where
 * the headers are.
 *
 *   fuzz_image_replay CORPUS_DIR [--images DIR]
 *
 * Fails when a property aborts, when a corpus file is refused (every one is
 * a valid image), or when the entry point was not driven both ways.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_files.h"
#include "fuzz_image.h"
#include "fuzz_util.h"

enum { REPLAY_MUTATIONS = 4000, REPLAY_IMAGE_MUTATIONS = 400, REPLAY_IMAGE_PREFIX = 1024 };

typedef struct tally {
  long accepted, refused;
} tally;

static int replay_run(tally *t, const uint8_t *p, size_t n) {
  uint8_t *copy = malloc(n ? n : 1); /* exact size: overreads show under ASan */
  if (!copy) abort();
  memcpy(copy, p, n);
  int ok = fuzz_image_one(copy, n);
  free(copy);
  if (ok) t->accepted++;
  else t->refused++;
  return ok;
}

/* JPEG markers, PNG and WebP chunk bytes, and values the decoders' limits
 * turn on. */
static const uint8_t replay_interesting[] = {0xff, 0xd8, 0xd9, 0xda, 0xdb, 0xc0, 0xc2, 0xc4, 0xdd, 0xd0,
                                             0xe0, 0xee, 0x00, 0x01, 0x02, 0x03, 0x04, 0x08, 0x10, 0x11,
                                             0x22, 0x7f, 0x80, 'I', 'D', 'A', 'T', 'V', 'P', '8', 'L'};

static void replay_mutants(tally *t, fuzz_mutator *m, const uint8_t *seed, size_t n, size_t keep, int count) {
  uint8_t *buf = malloc(2 * n + 64);
  if (!buf) abort();
  for (int k = 0; k < count; k++) replay_run(t, buf, fuzz_util_mutate(m, seed, n, keep, buf));
  free(buf);
}

/* Each file of dir; images: plain image files rather than fuzz inputs. Returns
 * the number of files, or -1 when a corpus file was refused. */
static int replay_dir(tally *t, fuzz_mutator *m, const char *dir, int images) {
  DIR *d = opendir(dir);
  if (!d) return fprintf(stderr, "fuzz_image_replay: cannot open %s\n", dir), -1;
  struct dirent *e;
  int files = 0, bad = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "README") == 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *file = test_files_read(path, &n), *b = file ? malloc(n + 2) : NULL;
    if (!b) {
      free(file);
      continue;
    }
    memcpy(b + 2, file, n); /* room for two parameter bytes in front */
    free(file);
    files++;
    if (!images) {
      if (!replay_run(t, b + 2, n)) bad = fprintf(stderr, "fuzz_image_replay: %s was refused\n", path);
      replay_mutants(t, m, b + 2, n, 0, REPLAY_MUTATIONS);
    } else {
      static const uint8_t params[4][2] = {{24, 0}, {0, 1}, {56, 2}, {16, 0xff}};
      for (int i = 0; i < 4; i++) {
        memcpy(b, params[i], 2);
        replay_run(t, b, n + 2);
      }
      replay_mutants(t, m, b, n + 2 < REPLAY_IMAGE_PREFIX ? n + 2 : REPLAY_IMAGE_PREFIX, 2, REPLAY_IMAGE_MUTATIONS);
    }
    free(b);
  }
  closedir(d);
  return bad ? -1 : files;
}

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--images") == 0))
    return fprintf(stderr, "usage: %s CORPUS_DIR [--images DIR]\n", argv[0]), 2;
  tally t = {0, 0};
  fuzz_mutator m = {.rng = 0x6a706567ull, .interesting = replay_interesting,
                    .ninteresting = sizeof replay_interesting};
  int corpus = replay_dir(&t, &m, argv[1], 0);
  int images = argc == 4 ? replay_dir(&t, &m, argv[3], 1) : 0;
  printf("corpus %d files, images %d; %ld inputs accepted, %ld refused\n", corpus, images, t.accepted, t.refused);
  if (corpus <= 0 || images < 0) return 1;
  if (!t.accepted || !t.refused) return fprintf(stderr, "the entry point was not driven both ways\n"), 1;
  return 0;
}
