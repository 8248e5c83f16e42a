/* wordvec.c -- lookup, loading and the cache decision (see wordvec.h). */
#include "wordvec.h"
#include "clock.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "storage.h"

uint64_t wordvec_hash(const char *word, size_t len) { return XXH3_64bits(word, len); }

uint32_t wordvec_probe(const uint32_t *slots, uint32_t nslots, const uint64_t *word_off, const char *words,
                       const char *word, size_t len, uint32_t *free_slot) {
  uint32_t mask = nslots - 1, s = (uint32_t)wordvec_hash(word, len) & mask;
  /* nslots exceeds the number of words, so an empty slot ends every probe. */
  for (;; s = (s + 1) & mask) {
    uint32_t v = slots[s];
    if (v == 0) {
      if (free_slot) *free_slot = s;
      return WORDVEC_NONE;
    }
    uint64_t a = word_off[v - 1], b = word_off[v];
    if (b - a == len && memcmp(words + a, word, len) == 0) return v - 1;
  }
}

uint32_t wordvec_find(const wordvec *w, const char *word, size_t len) {
  if (len == 0 || len > w->max_word_len) return WORDVEC_NONE;
  return wordvec_probe(w->slots, w->nslots, w->word_off, w->words, word, len, NULL);
}

const char *wordvec_format_name(wordvec_format f) {
  switch (f) {
    case WORDVEC_W2V_BINARY: return "word2vec binary";
    case WORDVEC_W2V_TEXT: return "word2vec text";
    case WORDVEC_GLOVE: return "GloVe text";
  }
  return "unknown";
}

uint64_t wordvec_table_bytes(const wordvec *w) { return (uint64_t)w->nwords * w->dim * 2; }

void wordvec_free(wordvec *w) {
  if (w->map) munmap(w->map, w->map_size);
  for (int i = 0; i < 4; i++) free(w->own[i]);
  memset(w, 0, sizeof *w);
}

int wordvec_cache_path(const char *path, const char *cache_dir, char *out, size_t cap) {
  int n;
  if (!cache_dir) {
    n = snprintf(out, cap, "%s.bfwv", path);
  } else {
    char abs[PATH_MAX];
    if (!realpath(path, abs)) return BFEED_EIO;
    const char *base = strrchr(abs, '/');
    base = base ? base + 1 : abs;
    n = snprintf(out, cap, "%s/%s.%016llx.bfwv", cache_dir, base,
                 (unsigned long long)XXH3_64bits(abs, strlen(abs)));
  }
  return n > 0 && (size_t)n < cap ? 0 : BFEED_ETOOBIG;
}

static void source_of(const storage_info *info, wordvec_source *src) {
  src->size = info->size;
  src->mtime_s = info->mtime_s;
  src->mtime_ns = info->mtime_ns;
}

/* Parse the source; with a cache wanted, write it and serve from its
 * mapping, so that every user of that file shares one copy. */
static int load_source(const char *path, const wordvec_opts *o, uint64_t max_bytes, wordvec *out,
                       wordvec_report *rep, char *err, size_t errlen) {
  storage_mapping mf;
  int rc;
  if ((rc = storage_map(path, UINT64_MAX, &mf, err, errlen)) < 0) return rc;
  wordvec_source src;
  source_of(&mf.info, &src);
  rc = wordvec_parse(mf.data, mf.size, path, max_bytes, out, err, errlen);
  storage_unmap(&mf);
  if (rc < 0 || !o->cache) return rc;
  char why[512];
  wordvec mapped;
  if (wordvec_cache_write(out, &src, rep->cache_path, why, sizeof why) < 0) {
    rep->cache = WORDVEC_CACHE_FAILED;
    snprintf(rep->note, sizeof rep->note, "%s", why);
    return 0;
  }
  rc = wordvec_cache_map(rep->cache_path, &src, &mapped, why, sizeof why);
  if (rc == 1) {
    wordvec_free(out);
    *out = mapped;
    rep->cache = WORDVEC_CACHE_WRITTEN;
  } else {
    rep->cache = WORDVEC_CACHE_FAILED;
    snprintf(rep->note, sizeof rep->note, "the cache just written does not map: %s", why);
  }
  return 0;
}

int wordvec_load(const char *path, const wordvec_opts *o, wordvec *out, wordvec_report *rep, char *err,
                 size_t errlen) {
  double t0 = clock_now_s();
  uint64_t max_bytes = o->max_bytes ? o->max_bytes : WORDVEC_DEFAULT_MAX_BYTES;
  memset(out, 0, sizeof *out);
  memset(rep, 0, sizeof *rep);
  if (o->cache) {
    storage_info info;
    if (storage_stat(path, &info, err, errlen) < 0) return BFEED_EDATASET;
    wordvec_source src;
    source_of(&info, &src);
    /* The cache is a local file of bfeed's own, beside the table's local path. */
    const char *local = storage_local_path(path);
    if (wordvec_cache_path(local ? local : path, o->cache_dir, rep->cache_path, sizeof rep->cache_path) < 0) {
      snprintf(err, errlen, "%s: cannot name its cache file (path too long or unresolvable)", path);
      return BFEED_EDATASET;
    }
    int hit = wordvec_cache_map(rep->cache_path, &src, out, rep->note, sizeof rep->note);
    if (hit < 0) {
      snprintf(err, errlen, "%s: %s", rep->cache_path, rep->note);
      return BFEED_EDATASET;
    }
    if (hit == 1) {
      rep->cache = WORDVEC_CACHE_HIT;
      rep->seconds = clock_now_s() - t0;
      return 0;
    }
  }
  char note[sizeof rep->note];
  memcpy(note, rep->note, sizeof note);
  int rc = load_source(path, o, max_bytes, out, rep, err, errlen);
  /* Keep why the old cache was not used when the new one was written. */
  if (rc == 0 && rep->cache == WORDVEC_CACHE_WRITTEN) memcpy(rep->note, note, sizeof note);
  rep->seconds = clock_now_s() - t0;
  return rc;
}
