/*
 * packfile.c -- bfeed's shard format: parse, check, write (packfile.h;
 * the layout is PACK_FORMAT.md's, and the offsets below are its).
 */
#include "packfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "crc32c.h"
#include "wire.h"

static const uint8_t packfile_magic[8] = {'B', 'F', 'P', 'A', 'C', 'K', '\r', '\n'};
static const uint8_t packfile_end_magic[8] = {'B', 'F', 'P', 'K', 'E', 'N', 'D', '\n'};

static uint64_t packfile_pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Index, features and footer for n records of dim floats. */
static uint64_t packfile_tail_size(uint64_t n, uint64_t dim) {
  return n * PACKFILE_ENTRY + packfile_pad8(n * dim * 4) + PACKFILE_FOOTER;
}

void packfile_shard_name(char *out, size_t cap, uint32_t number) {
  snprintf(out, cap, "shard-%06" PRIu32 ".bfpack", number);
}

int packfile_parse_ends(const uint8_t *head, const uint8_t *foot, uint64_t size, uint64_t *tail_off, char *err,
                        size_t errlen) {
  if (size < PACKFILE_HEADER + PACKFILE_FOOTER)
    return snprintf(err, errlen, "%" PRIu64 " bytes, too short for a pack shard (truncated?)", size), BFEED_EDATASET;
  if (memcmp(head, packfile_magic, 8) != 0)
    return snprintf(err, errlen, "not a bfeed pack shard (bad magic)"), BFEED_EDATASET;
  if (wire_get32(head + 8) != PACKFILE_VERSION)
    return snprintf(err, errlen, "pack shard version %" PRIu32 ", this bfeed reads %d", wire_get32(head + 8),
                    PACKFILE_VERSION), BFEED_EDATASET;
  if (memcmp(foot + 24, packfile_end_magic, 8) != 0)
    return snprintf(err, errlen, "no footer at the end (truncated, or still being written?)"), BFEED_EDATASET;
  if (wire_get64(foot + 16) != size)
    return snprintf(err, errlen, "footer says %" PRIu64 " bytes, the file has %" PRIu64 " (truncated?)",
                    wire_get64(foot + 16), size), BFEED_EDATASET;
  uint64_t off = wire_get64(foot), n = wire_get32(foot + 8), dim = wire_get32(head + 12);
  if (n > PACKFILE_MAX_RECORDS || dim > PACKFILE_MAX_DIM)
    return snprintf(err, errlen, "%" PRIu64 " records of %" PRIu64 " features, over the limits", n, dim), BFEED_EDATASET;
  if (off < PACKFILE_HEADER || off % 8 || off > size || size - off != packfile_tail_size(n, dim))
    return snprintf(err, errlen, "index at byte %" PRIu64 " does not fit %" PRIu64 " records in %" PRIu64 " bytes",
                    off, n, size), BFEED_EDATASET;
  *tail_off = off;
  return 0;
}

int packfile_parse_tail(const uint8_t *head, const uint8_t *tail, uint64_t tail_off, uint64_t size,
                        packfile_shard *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const uint8_t *foot = tail + (size - tail_off - PACKFILE_FOOTER);
  uint64_t off;
  int rc = packfile_parse_ends(head, foot, size, &off, err, errlen);
  if (rc < 0) return rc;
  if (off != tail_off) return snprintf(err, errlen, "index at byte %" PRIu64 ", not %" PRIu64, off, tail_off), BFEED_EDATASET;
  uint32_t crc = crc32c_update(crc32c_update(0, head, PACKFILE_HEADER), tail, size - off - PACKFILE_FOOTER);
  if (crc != wire_get32(foot + 12)) return snprintf(err, errlen, "bad index CRC-32C"), BFEED_EDATASET;
  out->n = wire_get32(foot + 8);
  out->dim = wire_get32(head + 12);
  out->key = wire_get64(head + 16);
  out->number = wire_get32(head + 24);
  out->index_off = off;
  if (out->n && !(out->e = malloc(out->n * sizeof *out->e))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  uint64_t end = PACKFILE_HEADER; /* records are in order, none overlapping */
  for (uint32_t k = 0; k < out->n; k++) {
    const uint8_t *p = tail + (size_t)k * PACKFILE_ENTRY;
    packfile_entry *e = &out->e[k];
    *e = (packfile_entry){wire_get64(p), wire_get32(p + 8), (int32_t)wire_get32(p + 12), wire_get32(p + 16)};
    if (e->off < end || e->off % 8 || e->len > PACKFILE_MAX_RECORD || e->len > off - e->off || e->label < -1) {
      packfile_shard_free(out);
      return snprintf(err, errlen, "record %" PRIu32 ": %" PRIu32 " bytes at %" PRIu64 " or label %" PRId32
                      " out of place (records end at %" PRIu64 ")", k, e->len, e->off, e->label, off), BFEED_EDATASET;
    }
    end = e->off + e->len;
  }
  if (out->dim && out->n) {
    size_t nf = (size_t)out->n * out->dim;
    if (!(out->features = malloc(nf * sizeof(float)))) {
      packfile_shard_free(out);
      return snprintf(err, errlen, "out of memory for %zu features", nf), BFEED_ENOMEM;
    }
    const uint8_t *p = tail + (size_t)out->n * PACKFILE_ENTRY;
    for (size_t i = 0; i < nf; i++) {
      uint32_t bits = wire_get32(p + 4 * i);
      memcpy(&out->features[i], &bits, 4);
    }
  }
  return 0;
}

int packfile_parse(const uint8_t *file, size_t size, packfile_shard *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  uint64_t off;
  if (size < PACKFILE_HEADER + PACKFILE_FOOTER)
    return snprintf(err, errlen, "%zu bytes, too short for a pack shard (truncated?)", size), BFEED_EDATASET;
  int rc = packfile_parse_ends(file, file + size - PACKFILE_FOOTER, size, &off, err, errlen);
  if (rc < 0) return rc;
  return packfile_parse_tail(file, file + off, off, size, out, err, errlen);
}

void packfile_shard_free(packfile_shard *s) {
  free(s->e);
  free(s->features);
  s->e = NULL;
  s->features = NULL;
}

int packfile_check_record(const packfile_shard *s, uint32_t k, const uint8_t *bytes, char *err, size_t errlen) {
  if (crc32c_update(0, bytes, s->e[k].len) != s->e[k].crc)
    return snprintf(err, errlen, "record %" PRIu32 ": bad CRC-32C", k), BFEED_ECHECKSUM;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static int packfile_put(packfile_writer *w, const void *p, size_t n, char *err, size_t errlen) {
  if (n && fwrite(p, 1, n, w->f) != n) return snprintf(err, errlen, "write failed: %s", strerror(errno)), BFEED_EIO;
  w->off += n;
  return 0;
}

static int packfile_put_pad(packfile_writer *w, char *err, size_t errlen) {
  static const uint8_t zero[8];
  return packfile_put(w, zero, (size_t)(packfile_pad8(w->off) - w->off), err, errlen);
}

int packfile_write_begin(packfile_writer *w, FILE *f, uint32_t number, uint32_t dim, uint64_t key, char *err,
                         size_t errlen) {
  *w = (packfile_writer){.f = f, .number = number, .dim = dim, .key = key};
  uint8_t h[PACKFILE_HEADER] = {0};
  memcpy(h, packfile_magic, 8);
  wire_put32(h + 8, PACKFILE_VERSION);
  wire_put32(h + 12, dim);
  wire_put64(h + 16, key);
  wire_put32(h + 24, number);
  w->crc = crc32c_update(0, h, sizeof h);
  return packfile_put(w, h, sizeof h, err, errlen);
}

int packfile_write_record(packfile_writer *w, const uint8_t *bytes, size_t len, int32_t label, const float *features,
                          char *err, size_t errlen) {
  if (len > PACKFILE_MAX_RECORD) return snprintf(err, errlen, "a record of %zu bytes is over the limit", len), BFEED_ETOOBIG;
  if (w->n == PACKFILE_MAX_RECORDS) return snprintf(err, errlen, "too many records in one shard"), BFEED_EINVAL;
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    packfile_entry *e = realloc(w->e, cap * sizeof *e);
    float *fe = w->dim ? realloc(w->features, cap * w->dim * sizeof *fe) : NULL;
    if (e) w->e = e;
    if (fe) w->features = fe;
    if (!e || (w->dim && !fe)) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
    w->cap = cap;
  }
  w->e[w->n] = (packfile_entry){w->off, (uint32_t)len, label, crc32c_update(0, bytes, len)};
  if (w->dim) memcpy(w->features + w->n * w->dim, features, w->dim * sizeof *features);
  w->n++;
  int rc = packfile_put(w, bytes, len, err, errlen);
  return rc < 0 ? rc : packfile_put_pad(w, err, errlen);
}

/* Bytes written past the header also go into the footer's CRC. */
static int packfile_put_crc(packfile_writer *w, const void *p, size_t n, char *err, size_t errlen) {
  w->crc = crc32c_update(w->crc, p, n);
  return packfile_put(w, p, n, err, errlen);
}

int packfile_write_end(packfile_writer *w, char *err, size_t errlen) {
  uint64_t index_off = w->off;
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < w->n; k++) {
    uint8_t p[PACKFILE_ENTRY] = {0};
    wire_put64(p, w->e[k].off);
    wire_put32(p + 8, w->e[k].len);
    wire_put32(p + 12, (uint32_t)w->e[k].label);
    wire_put32(p + 16, w->e[k].crc);
    rc = packfile_put_crc(w, p, sizeof p, err, errlen);
  }
  for (size_t i = 0; rc == 0 && i < w->n * w->dim; i++) {
    uint32_t bits;
    memcpy(&bits, &w->features[i], 4);
    uint8_t p[4];
    wire_put32(p, bits);
    rc = packfile_put_crc(w, p, 4, err, errlen);
  }
  static const uint8_t zero[8];
  if (rc == 0) rc = packfile_put_crc(w, zero, (size_t)(packfile_pad8(w->off) - w->off), err, errlen);
  if (rc < 0) return rc;
  uint8_t foot[PACKFILE_FOOTER];
  wire_put64(foot, index_off);
  wire_put32(foot + 8, (uint32_t)w->n);
  wire_put32(foot + 12, w->crc);
  wire_put64(foot + 16, w->off + PACKFILE_FOOTER);
  memcpy(foot + 24, packfile_end_magic, 8);
  return packfile_put(w, foot, sizeof foot, err, errlen);
}

void packfile_write_free(packfile_writer *w) {
  free(w->e);
  free(w->features);
  w->e = NULL;
  w->features = NULL;
}

/* ------------------------------------------------------------------ */
/* The metadata file                                                   */

/* The numeric lines, in the order written. */
#define PACKFILE_META_NUMBERS(X)                                                               \
  X("samples", samples, 10) X("source_samples", source_samples, 10) X("shards", shards, 10) X("shard_samples", shard_samples, 10)      \
  X("key", key, 16) X("source_fingerprint", source_fingerprint, 16) X("skipped", skipped, 10)

int packfile_meta_write(const packfile_meta *m, FILE *f, char *err, size_t errlen) {
  for (uint64_t c = 0; m->classes && c < m->nclasses; c++)
    if (strchr(m->classes[c], '\n'))
      return snprintf(err, errlen, "class name '%s' holds a newline, which a pack cannot record", m->classes[c]),
             BFEED_EINVAL;
  if (strchr(m->source, '\n')) return snprintf(err, errlen, "the source's name holds a newline"), BFEED_EINVAL;
  fprintf(f, "bfeed-pack %u\n", PACKFILE_VERSION);
#define X(name, field, base) fprintf(f, base == 16 ? "%s %016" PRIx64 "\n" : "%s %" PRIu64 "\n", name, m->field);
  PACKFILE_META_NUMBERS(X)
#undef X
  fprintf(f, "features %" PRIu32 "\nlabelled %d\nimages %s\nmax_side %" PRIu32 "\nshort_side %" PRIu32
          "\nquality %" PRIu32 "\nsource %s\n",
          m->dim, m->labelled, m->images, m->max_side, m->short_side, m->quality, m->source);
  fprintf(f, "classes %" PRIu64 "\n", m->nclasses);
  for (uint64_t c = 0; m->classes && c < m->nclasses; c++) fprintf(f, "class %s\n", m->classes[c]);
  fprintf(f, "end\n");
  if (fflush(f) != 0 || ferror(f)) return snprintf(err, errlen, "write failed: %s", strerror(errno)), BFEED_EIO;
  return 0;
}

static int packfile_meta_number(const char *v, int base, uint64_t *out) {
  char *end;
  errno = 0;
  if (!*v || *v == '-' || *v == ' ') return -1;
  *out = strtoull(v, &end, base);
  return *end || errno ? -1 : 0;
}

/* The most class names a metadata file of len bytes can hold: each is a
 * line "class X\n" of 8 bytes at least. A count is checked against it
 * before the names are allocated. */
static uint64_t packfile_meta_most_classes(size_t len) { return len / 8; }

/* One "key value" line into m. 1: "end"; 0: taken; -1: malformed; -3:
 * a classes count the file cannot hold. */
static int packfile_meta_line(packfile_meta *m, const char *key, const char *v, uint64_t *nclass_lines,
                              size_t len) {
  uint64_t x;
#define X(name, field, base) \
  if (strcmp(key, name) == 0) return packfile_meta_number(v, base, &m->field);
  PACKFILE_META_NUMBERS(X)
#undef X
  if (strcmp(key, "end") == 0) return 1;
  if (strcmp(key, "source") == 0) return free(m->source), (m->source = strdup(v)) ? 0 : -2;
  if (strcmp(key, "images") == 0) {
    if (strcmp(v, "original") && strcmp(v, "jpeg") && strcmp(v, "raw")) return -1;
    return snprintf(m->images, sizeof m->images, "%s", v), 0;
  }
  if (strcmp(key, "class") == 0) {
    if (*nclass_lines >= m->nclasses) return -1;
    if (!m->classes && !(m->classes = calloc(m->nclasses, sizeof *m->classes))) return -2;
    return (m->classes[(*nclass_lines)++] = strdup(v)) ? 0 : -2;
  }
  if (packfile_meta_number(v, 10, &x) < 0 || x > UINT32_MAX) return -1;
  if (strcmp(key, "features") == 0) return m->dim = (uint32_t)x, x > PACKFILE_MAX_DIM ? -1 : 0;
  if (strcmp(key, "labelled") == 0) return m->labelled = (int)x, x > 1 ? -1 : 0;
  if (strcmp(key, "max_side") == 0) return m->max_side = (uint32_t)x, 0;
  if (strcmp(key, "short_side") == 0) return m->short_side = (uint32_t)x, 0;
  if (strcmp(key, "quality") == 0) return m->quality = (uint32_t)x, 0;
  /* A second count after class lines would change how many names are
   * freed (found by fuzz_pack: a leak): refused before it is stored. */
  if (strcmp(key, "classes") == 0)
    return m->classes ? -1 : x > packfile_meta_most_classes(len) ? -3 : (m->nclasses = x, 0);
  return 0; /* a key of a later version: ignored */
}

int packfile_meta_parse(const char *text, size_t len, packfile_meta *m, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  char *buf = malloc(len + 1);
  if (!buf) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  memcpy(buf, text, len);
  buf[len] = 0;
  uint64_t line = 0, nclass_lines = 0;
  int rc = 0, ended = 0;
  char *p = buf;
  while (!ended && *p) {
    char *nl = strchr(p, '\n');
    if (!nl) break; /* a last line without its newline: cut short */
    *nl = 0;
    line++;
    char *sp = strchr(p, ' ');
    if (sp) *sp = 0;
    if (line == 1) {
      if (strcmp(p, "bfeed-pack") || !sp || strcmp(sp + 1, "1")) {
        rc = (snprintf(err, errlen, "line 1: not a bfeed pack's metadata of version %d", PACKFILE_VERSION), BFEED_EDATASET);
        break;
      }
      m->version = PACKFILE_VERSION;
    } else {
      int r = packfile_meta_line(m, p, sp ? sp + 1 : "", &nclass_lines, len);
      if (r == -3) {
        rc = (snprintf(err, errlen, "line %" PRIu64 ": classes %s: more than the %zu-byte file can name", line,
                       sp ? sp + 1 : "", len), BFEED_EDATASET);
        break;
      }
      if (r == -2) {
        rc = (snprintf(err, errlen, "out of memory"), BFEED_ENOMEM);
        break;
      }
      if (r < 0) {
        rc = (snprintf(err, errlen, "line %" PRIu64 ": malformed '%s' line", line, p), BFEED_EDATASET);
        break;
      }
      ended = r == 1;
    }
    p = nl + 1;
  }
  free(buf);
  if (rc == 0 && !ended) rc = (snprintf(err, errlen, "no 'end' line: the file is cut short"), BFEED_EDATASET);
  if (rc == 0 && (!m->source || !m->images[0] || !m->shard_samples))
    rc = (snprintf(err, errlen, "a source, images or shard_samples line is missing"), BFEED_EDATASET);
  if (rc == 0 && m->classes && nclass_lines != m->nclasses)
    rc = (snprintf(err, errlen, "%" PRIu64 " class lines for %" PRIu64 " classes", nclass_lines, m->nclasses),
    BFEED_EDATASET);
  if (rc == 0 && (m->source_samples > UINT32_MAX || m->samples > m->source_samples ||
                  m->shards != (m->source_samples + m->shard_samples - 1) / m->shard_samples))
    rc = (snprintf(err, errlen, "%" PRIu64 " shards of %" PRIu64 " samples for %" PRIu64 " samples (%" PRIu64 " packed)",
                  m->shards, m->shard_samples, m->source_samples, m->samples), BFEED_EDATASET);
  if (rc < 0) packfile_meta_free(m);
  return rc;
}

void packfile_meta_free(packfile_meta *m) {
  for (uint64_t c = 0; m->classes && c < m->nclasses; c++) free(m->classes[c]);
  free(m->classes);
  free(m->source);
  m->classes = NULL;
  m->source = NULL;
}
