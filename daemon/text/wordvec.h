/*
 * wordvec.h -- word embedding tables, held as bf16 and shared read-only.
 * Called by dataset_text.c (loading a table), textset.c (lookups) and batch_text.c (rows).
 * Source tables are read through storage.h; the cache is a local file.
 *
 * Loads the formats people have, told apart by their content:
 *
 *   word2vec binary   "V D\n", then per word: the word, a space, D float32
 *                     (little-endian), and optionally '\n'
 *   word2vec text     "V D" header line, then "word v1 ... vD" lines
 *                     (fastText's .vec files are this format)
 *   GloVe text        "word v1 ... vD" lines, no header
 *
 * A first line of exactly two whole numbers is a header. After a header
 * the file is text when the first record's line reads as a word and
 * numbers, binary otherwise. Values may use any notation strtof() reads
 * ("-1.6713e-02", "1E3", "inf"). Words are byte strings (UTF-8 as the file
 * has them) compared exactly; a word seen again is a duplicate: the first
 * one wins and the count is reported once.
 *
 * Each value is rounded to float32 as the file states it, then to bf16 by
 * round-to-nearest-even (bf16.h), the same cast as for images. Only the
 * bf16 table is ever held: half the memory of float32.
 *
 * Text files are slow to parse, so the converted table is kept in a binary
 * cache file (wordvec_cache.c) that later loads map read-only: a restart
 * serves at once, and every mapping of one cache file -- several datasets
 * naming the same vectors, several daemons -- shares the same page-cache
 * pages, so the table is in memory once. The cache records the source's
 * size and modification time and is rebuilt when they change.
 *
 * Values that are NaN or infinite as bf16 (the file's NaNs and infinities,
 * and finite values too large for bf16) are counted when the table is
 * parsed, with the first word holding one, and the count is kept in the
 * cache: the loader warns of them, and serves them as they are.
 */
#ifndef BFEED_WORDVEC_H
#define BFEED_WORDVEC_H

#include <stddef.h>
#include <stdint.h>

typedef enum wordvec_format {
  WORDVEC_W2V_BINARY = 1,
  WORDVEC_W2V_TEXT = 2,
  WORDVEC_GLOVE = 3
} wordvec_format;

#define WORDVEC_NONE UINT32_MAX     /* wordvec_find: no such word */
#define WORDVEC_MAX_DIM 65536u      /* larger dimensions are refused as absurd */
#define WORDVEC_MAX_WORD 4096u      /* bytes; longer "words" mean a broken file */
#define WORDVEC_MAX_WORDS (1u << 30) /* keeps the hash index within 2^31 slots */
#define WORDVEC_DEFAULT_MAX_BYTES (8ull << 30) /* bf16 table size limit: 8 GiB */

typedef struct wordvec {
  uint32_t nwords, dim;
  wordvec_format format;
  uint32_t max_word_len;    /* bytes of the longest word */
  uint64_t duplicates;      /* later occurrences of a word, dropped */
  uint64_t nonfinite;       /* values that are NaN or infinite (as bf16): served as they are */
  uint32_t first_nonfinite; /* the word holding the first of them */
  const uint16_t *vectors;  /* nwords x dim bf16 bit patterns, row-major */
  const uint64_t *word_off; /* nwords + 1: word i is words[word_off[i] .. word_off[i+1]) */
  const char *words;
  const uint32_t *slots;    /* hash index: 1 + word index, 0 = empty; linear probing */
  uint32_t nslots;          /* a power of two, at least nwords + 1 */
  /* Storage: a read-only mapping of a cache file, or four allocations. */
  void *map;
  size_t map_size;
  void *own[4];
} wordvec;

/* Row of word i (i < nwords). */
static inline const uint16_t *wordvec_row(const wordvec *w, uint32_t i) {
  return w->vectors + (size_t)i * w->dim;
}
/* Index of word[0..len), or WORDVEC_NONE. */
uint32_t wordvec_find(const wordvec *w, const char *word, size_t len);
/* "word2vec binary", "word2vec text", "GloVe text" */
const char *wordvec_format_name(wordvec_format f);
/* Bytes of the bf16 vectors (what the float32 table would hold, halved). */
uint64_t wordvec_table_bytes(const wordvec *w);
void wordvec_free(wordvec *w);

/* Parse a whole file held in memory. `name` is used in messages, which
 * name the line ("name:12: ...") or, for binary files, the byte offset.
 * Tables whose bf16 vectors would exceed max_bytes are refused before any
 * allocation. Returns 0, or BFEED_EDATASET (BFEED_ENOMEM) with the message. */
int wordvec_parse(const uint8_t *data, size_t size, const char *name, uint64_t max_bytes, wordvec *out,
                  char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The binary cache                                                    */

/* What identifies a source file's version. */
typedef struct wordvec_source {
  uint64_t size;
  int64_t mtime_s, mtime_ns;
} wordvec_source;

/* Write w to path atomically (a temporary file in the same folder, then a
 * rename). 0, or BFEED_EIO with the reason. */
int wordvec_cache_write(const wordvec *w, const wordvec_source *src, const char *path, char *err, size_t errlen);
/* Map the cache at path. 1: mapped (out owns the mapping); 0: no usable
 * cache (absent, for another version of the source, or damaged; err says
 * which). */
int wordvec_cache_map(const char *path, const wordvec_source *src, wordvec *out, char *err, size_t errlen);
/* Check that p[0..n) is a whole, consistent cache (for src, unless src is
 * NULL) and point view's arrays into it. Every offset and count is checked,
 * so lookups on a checked view stay inside p. 0, or BFEED_EDATASET with the reason. */
int wordvec_cache_check(const uint8_t *p, size_t n, const wordvec_source *src, wordvec *view, char *err,
                        size_t errlen);

/* ------------------------------------------------------------------ */
/* Loading, with the cache                                             */

typedef struct wordvec_opts {
  uint64_t max_bytes;    /* WORDVEC_DEFAULT_MAX_BYTES when 0 */
  int cache;             /* 1: use and keep a cache file */
  const char *cache_dir; /* where; NULL: next to the source, as SOURCE.bfwv */
} wordvec_opts;

typedef enum wordvec_cache_state {
  WORDVEC_CACHE_OFF = 0, /* not asked for */
  WORDVEC_CACHE_HIT,     /* mapped a valid cache */
  WORDVEC_CACHE_WRITTEN, /* parsed the source, wrote and mapped the cache */
  WORDVEC_CACHE_FAILED   /* parsed the source; the cache could not be written (note says why) */
} wordvec_cache_state;

typedef struct wordvec_report {
  wordvec_cache_state cache;
  char cache_path[4096];
  char note[512]; /* why a cache was rebuilt or not written */
  double seconds; /* wall time of the load */
} wordvec_report;

/* Load the table at path. */
int wordvec_load(const char *path, const wordvec_opts *o, wordvec *out, wordvec_report *rep, char *err,
                 size_t errlen);

/* The cache file for path: DIR/BASENAME.HASH.bfwv in a cache folder (HASH
 * of the absolute source path, so that equal names from different folders
 * do not collide), or PATH.bfwv next to the source. */
int wordvec_cache_path(const char *path, const char *cache_dir, char *out, size_t cap);

/* ------------------------------------------------------------------ */
/* Internals shared by the parser, the cache and the lookup.           */

uint64_t wordvec_hash(const char *word, size_t len);
/* Probe for word in a hash index over words 0..n: returns its index, or
 * WORDVEC_NONE with *free_slot set to the empty slot where it would go. */
uint32_t wordvec_probe(const uint32_t *slots, uint32_t nslots, const uint64_t *word_off, const char *words,
                       const char *word, size_t len, uint32_t *free_slot);

#endif
