/*
 * fuzz_wordvec_replay.c -- the text-side fuzz entry points (fuzz_wordvec.h)
 * in every build: seeds written here, the files of an optional folder
 * (the team's ../shared/data/wordvec), and deterministic mutations of
 * each: bit flips, bytes that matter to the parsers written over others,
 * deletions, insertions, copies of a stretch elsewhere, truncations.
 *
 *   fuzz_wordvec_replay [FOLDER]
 *
 * Fails when a property aborts, when a valid seed is refused, or when an
 * entry point was not driven both ways (some inputs accepted, some not).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_files.h"
#include "fuzz_util.h"
#include "fuzz_wordvec.h"
#include "wordvec.h"

#define MUTATIONS 3000      /* per seed and target */
#define MUTATE_PREFIX 8192  /* large seeds are mutated in their first bytes */

typedef int (*entry_fn)(const uint8_t *, size_t);

typedef struct target {
  const char *name;
  entry_fn fn;
  unsigned long accepted, refused;
} target;

static fuzz_mutator mutator;

static void run(target *t, const uint8_t *p, size_t n) {
  uint8_t *copy = malloc(n ? n : 1); /* exact size: overreads show under ASan */
  memcpy(copy, p, n);
  if (t->fn(copy, n)) t->accepted++;
  else t->refused++;
  free(copy);
}

static void mutate_and_run(target *t, const uint8_t *seed, size_t n) {
  static const uint8_t interesting[] = {0, '\n', ' ', '\t', '\r', '9', '0', '-', '.', 'e', 0xff, 0x80, 0xc3, '_'};
  size_t m = n < MUTATE_PREFIX ? n : MUTATE_PREFIX;
  uint8_t *buf = malloc(2 * m + 64);
  mutator.interesting = interesting;
  mutator.ninteresting = sizeof interesting;
  for (int k = 0; k < MUTATIONS; k++) run(t, buf, fuzz_util_mutate(&mutator, seed, m, 0, buf));
  free(buf);
}

static void seed(target *t, const void *p, size_t n, int must_accept) {
  unsigned long before = t->accepted;
  run(t, p, n);
  if (must_accept && t->accepted == before) {
    fprintf(stderr, "%s: a valid seed was refused: %.60s\n", t->name, (const char *)p);
    exit(1);
  }
  mutate_and_run(t, p, n);
  for (size_t k = 0; k < n && k < 512; k += 1 + k / 8) run(t, p, k); /* prefixes */
}

/* A word2vec binary file of n words of d values. */
static size_t w2v_binary(uint8_t *out, int n, int d, int newline) {
  size_t k = (size_t)sprintf((char *)out, "%d %d\n", n, d);
  for (int i = 0; i < n; i++) {
    k += (size_t)sprintf((char *)out + k, "w%d ", i);
    for (int j = 0; j < d; j++) {
      float f = (float)(i * d + j) * 0.37f - 3.0f;
      memcpy(out + k, &f, 4);
      k += 4;
    }
    if (newline) out[k++] = '\n';
  }
  return k;
}

/* A .npy file: magic, version, the dict padded to 64 bytes, data. */
static size_t npy_seed(uint8_t *out, int major, const char *dict, const char *data, size_t ndata) {
  size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
  hl += (64 - (pre + hl) % 64) % 64;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major, out[7] = 0, out[8] = (uint8_t)hl, out[9] = (uint8_t)(hl >> 8);
  if (major != 1) out[10] = out[11] = 0;
  memset(out + pre, ' ', hl);
  memcpy(out + pre, dict, strlen(dict));
  out[pre + hl - 1] = '\n';
  memcpy(out + pre + hl, data, ndata);
  return pre + hl + ndata;
}

/* A cache file's bytes for the table text. */
static uint8_t *cache_of(const char *text, size_t *n) {
  wordvec w;
  char err[256], path[] = "/tmp/fuzz_wordvec.XXXXXX";
  if (wordvec_parse((const uint8_t *)text, strlen(text), "seed", 1 << 20, &w, err, sizeof err) < 0 || !mkdtemp(path))
    return NULL;
  char file[64];
  snprintf(file, sizeof file, "%s/c.bfwv", path);
  wordvec_source src = {1, 2, 3};
  uint8_t *buf = malloc(1 << 16);
  FILE *f = NULL;
  if (wordvec_cache_write(&w, &src, file, err, sizeof err) == 0 && (f = fopen(file, "rb"))) *n = fread(buf, 1, 1 << 16, f);
  if (f) fclose(f);
  unlink(file);
  rmdir(path);
  wordvec_free(&w);
  return buf;
}

#define SEED(t, s, ok) seed((t), (s), sizeof(s) - 1, (ok))

int main(int argc, char **argv) {
  target table = {.name = "table", .fn = fuzz_wordvec_table}, cache = {.name = "cache", .fn = fuzz_wordvec_cache},
         npy = {.name = "npy", .fn = fuzz_wordvec_npy}, text = {.name = "text", .fn = fuzz_wordvec_text};
  mutator.rng = 20261130;
  uint8_t bin[4096];

  static const char glove[] = "the 0.418 0.24968 -0.41242\n\xc3\xb6 0.013441 0.23682 -0.16899\nand .5 +2. -1.6713e-02\n";
  static const char w2v_text[] = "3 2\nthe 1 2\nof 3 4 \r\nof 5 6\n";
  SEED(&table, glove, 1);
  SEED(&table, w2v_text, 1);
  SEED(&table, "4 3\na 1 2 3\n", 0);
  seed(&table, bin, w2v_binary(bin, 5, 3, 1), 1);
  seed(&table, bin, w2v_binary(bin, 4, 2, 0), 1);

  size_t n;
  uint8_t *c = cache_of(glove, &n);
  if (!c) return fprintf(stderr, "cannot build a cache seed\n"), 1;
  seed(&cache, c, n, 1);
  free(c);
  c = cache_of(w2v_text, &n);
  if (!c) return fprintf(stderr, "cannot build a cache seed\n"), 1;
  seed(&cache, c, n, 1);
  free(c);

  seed(&npy, bin, npy_seed(bin, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }", "\0\0\x80\x3f\0\0\0\x40", 8), 1);
  seed(&npy, bin, npy_seed(bin, 2, "{\"descr\": \"<i8\", \"fortran_order\": True, \"shape\": (1L,)}", "\7\0\0\0\0\0\0\0", 8), 1);
  seed(&npy, bin, npy_seed(bin, 3, "{'shape': (2, 0, 3), 'fortran_order': False, 'descr': '|u1'}", "", 0), 1);

  SEED(&text, "__label__pos __label__x Good film, the été!\n\n__label__neg Bad.\r\n", 1);
  SEED(&text, "pos\tthe of\tand\nneg\t, été\n", 1);
  SEED(&text, "pics/a.jpg\tcat\tthe cat, of\npics/b.jpg\t2\t\n", 1);

  /* The team's files, when there: each as a table and as text. */
  DIR *d = argc > 1 ? opendir(argv[1]) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strstr(e->d_name, ".bfwv")) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    uint8_t *b = test_files_read(path, &n);
    if (!b) continue;
    int is_table = strstr(e->d_name, ".vec") || strstr(e->d_name, "glove");
    if (is_table) seed(&table, b, n, 1);
    run(&text, b, n < 65536 ? n : 65536);
    mutate_and_run(&text, b, n);
    free(b);
  }
  if (d) closedir(d);

  target *all[] = {&table, &cache, &npy, &text};
  int rc = 0;
  for (int i = 0; i < 4; i++) {
    printf("%-6s %8lu accepted %8lu refused\n", all[i]->name, all[i]->accepted, all[i]->refused);
    if (!all[i]->accepted || !all[i]->refused) rc = 1;
  }
  if (rc) fprintf(stderr, "an entry point was not driven both ways\n");
  return rc;
}
