/*
 * wordvec_cache.c -- the converted table as a file that loads by mapping.
 *
 * Layout (host byte order; a byte-order mark refuses a foreign file):
 *
 *   0     header, 256 bytes (struct cache_header)
 *   256   vectors   nwords x dim bf16
 *   64k   word_off  (nwords + 1) u64      each section starts at a
 *   64k   slots     nslots u32             multiple of 64 bytes
 *   64k   words     word bytes
 *
 * Why check everything at map time: the file is read by lookups on every
 * batch, so a damaged cache must be refused, not followed. A cache is only
 * ever replaced by rename (never rewritten in place), so a mapping never
 * sees a file change under it, and an interrupted write leaves the old
 * cache or none. The check costs one pass over the words and offsets, not
 * over the vectors, so a restart still serves at once.
 *
 * The cache is bfeed's own file on this machine, not a dataset input, so
 * it is opened, written and mapped here with plain system calls rather
 * than through storage.h (which the source table is read through).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "wordvec.h"

#include "bfeed_types.h"

#define CACHE_MAGIC "BFWVEC01"
#define CACHE_VERSION 2u /* 2: the count of non-finite values */
#define CACHE_BYTE_ORDER 0x01020304u
#define CACHE_HEADER_SIZE 256u

typedef struct cache_header {
  char magic[8];
  uint32_t version, byte_order;
  uint64_t src_size;
  int64_t src_mtime_s, src_mtime_ns;
  uint32_t nwords, dim;
  uint32_t format, nslots;
  uint32_t max_word_len, reserved;
  uint64_t duplicates, words_bytes;
  uint64_t nonfinite;    /* wordvec.nonfinite */
  uint32_t first_nonfinite, reserved2;
  uint64_t off_vectors, off_word_off, off_slots, off_words, file_size;
  uint64_t hash_probe;   /* wordvec_hash("bfeed"): the index depends on the hash function */
  uint64_t header_check; /* XXH3 of the bytes above */
} cache_header;

_Static_assert(sizeof(cache_header) == 152, "cache header layout");
_Static_assert(sizeof(cache_header) <= CACHE_HEADER_SIZE, "cache header size");

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

/* The section offsets that counts imply: a valid file has exactly these. */
static void layout(cache_header *h) {
  h->off_vectors = CACHE_HEADER_SIZE;
  h->off_word_off = align64(h->off_vectors + (uint64_t)h->nwords * h->dim * 2);
  h->off_slots = align64(h->off_word_off + ((uint64_t)h->nwords + 1) * 8);
  h->off_words = align64(h->off_slots + (uint64_t)h->nslots * 4);
  h->file_size = h->off_words + h->words_bytes;
}

static uint64_t header_sum(const cache_header *h) {
  return XXH3_64bits(h, offsetof(cache_header, header_check));
}

/* ------------------------------------------------------------------ */
/* Checking                                                            */

#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), BFEED_EDATASET

int wordvec_cache_check(const uint8_t *p, size_t n, const wordvec_source *src, wordvec *view, char *err,
                        size_t errlen) {
  cache_header h, want;
  if (n < CACHE_HEADER_SIZE) BAD("damaged: %zu bytes, shorter than its header", n);
  memcpy(&h, p, sizeof h);
  if (memcmp(h.magic, CACHE_MAGIC, 8) != 0) BAD("not a bfeed vectors cache");
  if (h.version != CACHE_VERSION || h.byte_order != CACHE_BYTE_ORDER)
    BAD("cache format %u of another version or byte order", h.version);
  if (h.header_check != header_sum(&h)) BAD("damaged: header checksum mismatch");
  if (h.hash_probe != wordvec_hash("bfeed", 5)) BAD("built with another hash function");
  if (src && (h.src_size != src->size || h.src_mtime_s != src->mtime_s || h.src_mtime_ns != src->mtime_ns))
    BAD("made from another version of the source (size or modification time changed)");
  if (h.nwords == 0 || h.nwords > WORDVEC_MAX_WORDS || h.dim == 0 || h.dim > WORDVEC_MAX_DIM)
    BAD("damaged: %u words of %u dimensions", h.nwords, h.dim);
  if (h.format < WORDVEC_W2V_BINARY || h.format > WORDVEC_GLOVE) BAD("damaged: unknown format %u", h.format);
  if (h.nslots <= h.nwords || h.nslots > (1u << 31) || (h.nslots & (h.nslots - 1)) != 0)
    BAD("damaged: %u hash slots for %u words", h.nslots, h.nwords);
  if (h.max_word_len == 0 || h.max_word_len > WORDVEC_MAX_WORD || h.words_bytes > n)
    BAD("damaged: word sizes out of range");
  want = h;
  layout(&want);
  if (want.off_vectors != h.off_vectors || want.off_word_off != h.off_word_off || want.off_slots != h.off_slots ||
      want.off_words != h.off_words || want.file_size != h.file_size)
    BAD("damaged: section offsets inconsistent with its counts");
  if (h.file_size != n) BAD("damaged: %zu bytes, its header says %llu", n, (unsigned long long)h.file_size);
  if (h.nonfinite > (uint64_t)h.nwords * h.dim || h.first_nonfinite >= h.nwords)
    BAD("damaged: %llu non-finite values counted", (unsigned long long)h.nonfinite);

  memset(view, 0, sizeof *view);
  view->nwords = h.nwords;
  view->dim = h.dim;
  view->format = (wordvec_format)h.format;
  view->max_word_len = h.max_word_len;
  view->duplicates = h.duplicates;
  view->nonfinite = h.nonfinite;
  view->first_nonfinite = h.first_nonfinite;
  view->vectors = (const uint16_t *)(p + h.off_vectors);
  view->word_off = (const uint64_t *)(p + h.off_word_off);
  view->slots = (const uint32_t *)(p + h.off_slots);
  view->words = (const char *)(p + h.off_words);
  view->nslots = h.nslots;

  /* Words: increasing offsets ending at the blob's end, lengths in range. */
  const uint64_t *off = view->word_off;
  uint32_t longest = 0;
  if (off[0] != 0 || off[h.nwords] != h.words_bytes) BAD("damaged: word offsets do not span the words");
  for (uint32_t i = 0; i < h.nwords; i++) {
    if (off[i + 1] <= off[i] || off[i + 1] - off[i] > h.max_word_len) BAD("damaged: word %u has a bad extent", i);
    if (off[i + 1] - off[i] > longest) longest = (uint32_t)(off[i + 1] - off[i]);
  }
  if (longest != h.max_word_len) BAD("damaged: longest word mismatch");
  /* Index: every slot names a word or nothing, as many words as slots in
   * use, and each word found where its probe leads (so lookups are right,
   * not only safe). */
  uint64_t used = 0;
  for (uint32_t s = 0; s < h.nslots; s++) {
    if (view->slots[s] > h.nwords) BAD("damaged: hash slot %u out of range", s);
    used += view->slots[s] != 0;
  }
  if (used != h.nwords) BAD("damaged: %llu hash slots in use for %u words", (unsigned long long)used, h.nwords);
  for (uint32_t i = 0; i < h.nwords; i++) {
    uint32_t got = wordvec_probe(view->slots, view->nslots, off, view->words, view->words + off[i],
                                 (size_t)(off[i + 1] - off[i]), NULL);
    if (got != i) BAD("damaged: word %u is not where its hash leads", i);
  }
  return 0;
}

int wordvec_cache_map(const char *path, const wordvec_source *src, wordvec *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  /* O_NONBLOCK: a FIFO in the cache's place is refused below, not waited on. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) snprintf(err, errlen, "no cache yet");
    else snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return 0;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIZE_MAX) {
    snprintf(err, errlen, "%s is not a regular file", path);
    close(fd);
    return 0;
  }
  size_t n = (size_t)st.st_size;
  void *p = n >= CACHE_HEADER_SIZE ? mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  int saved = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (n < CACHE_HEADER_SIZE) snprintf(err, errlen, "%s is damaged: %zu bytes", path, n);
    else snprintf(err, errlen, "cannot map %s: %s", path, strerror(saved));
    return 0;
  }
  char why[256];
  if (wordvec_cache_check(p, n, src, out, why, sizeof why) < 0) {
    snprintf(err, errlen, "%s: %s", path, why);
    munmap(p, n);
    memset(out, 0, sizeof *out);
    return 0;
  }
  out->map = p;
  out->map_size = n;
  return 1;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static int write_all(int fd, const void *p, uint64_t n) {
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n > (1u << 30) ? (1u << 30) : (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return BFEED_EIO;
    b += w;
    n -= (uint64_t)w;
  }
  return 0;
}

/* Zero bytes up to offset `to` (the file is at `at`). */
static int pad_to(int fd, uint64_t at, uint64_t to) {
  static const uint8_t zero[64];
  return to > at ? write_all(fd, zero, to - at) : 0;
}

int wordvec_cache_write(const wordvec *w, const wordvec_source *src, const char *path, char *err, size_t errlen) {
  cache_header h;
  uint8_t head[CACHE_HEADER_SIZE] = {0};
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CACHE_MAGIC, 8);
  h.version = CACHE_VERSION;
  h.byte_order = CACHE_BYTE_ORDER;
  h.src_size = src->size;
  h.src_mtime_s = src->mtime_s;
  h.src_mtime_ns = src->mtime_ns;
  h.nwords = w->nwords;
  h.dim = w->dim;
  h.format = (uint32_t)w->format;
  h.nslots = w->nslots;
  h.max_word_len = w->max_word_len;
  h.duplicates = w->duplicates;
  h.nonfinite = w->nonfinite;
  h.first_nonfinite = w->first_nonfinite;
  h.words_bytes = w->word_off[w->nwords];
  h.hash_probe = wordvec_hash("bfeed", 5);
  layout(&h);
  h.header_check = header_sum(&h);
  memcpy(head, &h, sizeof h);

  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= sizeof tmp)
    return snprintf(err, errlen, "cache path %s is too long", path), BFEED_EIO;
  int fd = mkstemp(tmp);
  if (fd < 0) return snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno)), BFEED_EIO;
  uint64_t vec_end = h.off_vectors + (uint64_t)h.nwords * h.dim * 2;
  uint64_t off_end = h.off_word_off + ((uint64_t)h.nwords + 1) * 8;
  uint64_t slot_end = h.off_slots + (uint64_t)h.nslots * 4;
  int rc = write_all(fd, head, sizeof head);
  if (rc == 0) rc = write_all(fd, w->vectors, vec_end - h.off_vectors);
  if (rc == 0) rc = pad_to(fd, vec_end, h.off_word_off);
  if (rc == 0) rc = write_all(fd, w->word_off, off_end - h.off_word_off);
  if (rc == 0) rc = pad_to(fd, off_end, h.off_slots);
  if (rc == 0) rc = write_all(fd, w->slots, slot_end - h.off_slots);
  if (rc == 0) rc = pad_to(fd, slot_end, h.off_words);
  if (rc == 0) rc = write_all(fd, w->words, h.words_bytes);
  /* The data must be on disk before the name points at it. */
  if (rc == 0) rc = fchmod(fd, 0644) == 0 && fsync(fd) == 0 ? 0 : BFEED_EIO;
  int saved = errno;
  if (close(fd) != 0 && rc == 0) rc = BFEED_EIO, saved = errno;
  if (rc == 0 && rename(tmp, path) != 0) rc = BFEED_EIO, saved = errno;
  if (rc < 0) {
    unlink(tmp);
    return snprintf(err, errlen, "cannot write %s: %s", path, strerror(saved)), BFEED_EIO;
  }
  return 0;
}
