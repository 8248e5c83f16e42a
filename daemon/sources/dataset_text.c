/*
 * dataset_text.c -- loading the kinds with text: `text` and `manifest`.
 *
 * Both take the same settings for their words:
 *
 *   vectors=FILE          the embedding table (required)
 *   lowercase=0|1         lowercase tokens before the lookup (0)
 *   punct=0|1             split ASCII punctuation into tokens (0)
 *   oov=skip|zero|unk     tokens not in the table: dropped, a zero vector,
 *                         or the vector of the word unk= names (skip)
 *   unk=WORD              the table's unknown-word entry (<unk>)
 *   max_len=N             tokens per sample served when a stream does not
 *                         ask for another limit (0: all)
 *   cache=0|1             keep a converted binary cache of the table (1)
 *   cache_dir=DIR         where (default: next to the vectors file)
 *   max_table_bytes=N     refuse tables larger than N bytes as bf16 (8 GiB)
 *
 * and `text` also format=auto|fasttext|tsv|folder and label=first|last|N
 * (which of a fastText line's labels).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfeed_types.h"
#include "dataset_impl.h"
#include "folder.h"
#include "labelset.h"
#include "manifest.h"
#include "text_source.h"

#define TEXT_KEYS "vectors", "lowercase", "punct", "oov", "unk", "max_len", "cache", "cache_dir", "max_table_bytes"

typedef struct text_settings {
  const char *vectors;
  wordvec_opts wv;
  textset_opts ts;
  const char *unk;
  uint64_t max_len;
  text_source_opts src;
} text_settings;

static int parse_settings(const dataset_keys *k, text_settings *s, char *err, size_t errlen) {
  const dataset_kv *kv;
  uint64_t max_bytes;
  memset(s, 0, sizeof *s);
  if (!(kv = dataset_key(k, "vectors")))
    return snprintf(err, errlen, "dataset %s: kind %s needs vectors=FILE (an embeddings file)", k->name, k->kind), BFEED_EDATASET;
  s->vectors = kv->value;
  s->unk = (kv = dataset_key(k, "unk")) ? kv->value : "<unk>";
  if ((kv = dataset_key(k, "oov")) && (s->ts.oov = textset_oov_parse(kv->value)) < 0)
    return dataset_key_fail(kv, k->name, err, errlen, "expected skip, zero or unk");
  if ((kv = dataset_key(k, "cache_dir"))) s->wv.cache_dir = kv->value;
  if ((kv = dataset_key(k, "format"))) {
    int f = text_source_format_parse(kv->value);
    if (f < 0) return dataset_key_fail(kv, k->name, err, errlen, "expected auto, fasttext, tsv or folder");
    s->src.format = (text_format)f;
  }
  if ((kv = dataset_key(k, "label"))) {
    char *end;
    long v = strtol(kv->value, &end, 10);
    if (strcmp(kv->value, "first") == 0) s->src.label_pick = 1;
    else if (strcmp(kv->value, "last") == 0) s->src.label_pick = -1;
    else if (*kv->value && !*end && v >= 1 && v <= 64) s->src.label_pick = (int)v;
    else return dataset_key_fail(kv, k->name, err, errlen, "expected first, last or a position 1..64");
  }
  int rc;
  if ((rc = dataset_key_bool(k, "lowercase", 0, &s->ts.tok.lowercase, err, errlen)) < 0 ||
      (rc = dataset_key_bool(k, "punct", 0, &s->ts.tok.split_punct, err, errlen)) < 0 ||
      (rc = dataset_key_bool(k, "cache", 1, &s->wv.cache, err, errlen)) < 0 ||
      (rc = dataset_key_u64(k, "max_len", 0, 1u << 20, 0, &s->max_len, err, errlen)) < 0 ||
      (rc = dataset_key_u64(k, "max_table_bytes", 1, UINT64_MAX, WORDVEC_DEFAULT_MAX_BYTES, &max_bytes, err,
                            errlen)) < 0)
    return rc;
  s->wv.max_bytes = max_bytes;
  return 0;
}

static const char *size_str(uint64_t bytes, char *buf, size_t cap) {
  if (bytes >= 1000000) snprintf(buf, cap, "%.1f MB", (double)bytes / 1e6);
  else if (bytes >= 1000) snprintf(buf, cap, "%.1f KB", (double)bytes / 1e3);
  else snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

static int load_vectors(dataset *d, text_settings *s, const logger *log, char *err, size_t errlen) {
  wordvec_report rep;
  wordvec *v = &d->vectors;
  char why[1024];
  if (wordvec_load(s->vectors, &s->wv, v, &rep, why, sizeof why) < 0)
    return snprintf(err, errlen, "dataset %s: vectors: %s", d->name, why), BFEED_EDATASET;
  char bf[32], f32[32];
  const char *how = rep.cache == WORDVEC_CACHE_HIT ? "mapped from the cache" : "parsed";
  log_info(log, "dataset %s: vectors %s: %u words x %u (%s), %s as bf16 (%s as float32), %s in %.3f s", d->name,
           s->vectors, v->nwords, v->dim, wordvec_format_name(v->format), size_str(wordvec_table_bytes(v), bf, sizeof bf),
           size_str(2 * wordvec_table_bytes(v), f32, sizeof f32), how, rep.seconds);
  if (rep.cache == WORDVEC_CACHE_WRITTEN)
    log_info(log, "dataset %s: vectors cache %s written (%s)", d->name, rep.cache_path, rep.note);
  else if (rep.cache == WORDVEC_CACHE_FAILED)
    log_warn(log, "dataset %s: vectors cache not written: %s; the table is held in memory and parsed again at every start (set cache_dir=)",
             d->name, rep.note);
  if (v->duplicates)
    log_warn(log, "dataset %s: vectors %s: %llu duplicate words ignored (the first of each is kept)", d->name,
             s->vectors, (unsigned long long)v->duplicates);
  if (s->ts.oov == TEXTSET_OOV_UNK && (s->ts.unk = wordvec_find(v, s->unk, strlen(s->unk))) == WORDVEC_NONE)
    return snprintf(err, errlen, "dataset %s: oov=unk, but %s has no word '%s' (name another with unk=WORD)", d->name,
                    s->vectors, s->unk), BFEED_EDATASET;
  d->max_len = (uint32_t)s->max_len;
  return 0;
}

/* What the record callbacks build. */
typedef struct builder {
  dataset *d;
  const text_settings *s;
  labelset labels;
  uint32_t *prov; /* provisional label of each sample */
  size_t cap;
  const char *dir; /* manifest: where relative image paths start */
  strlist images;
} builder;

static int add_sample(builder *b, const char *label, size_t label_len, const char *text, size_t text_len,
                      const char *file, uint64_t line, char *err, size_t errlen) {
  dataset *d = b->d;
  if (d->text.n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    uint32_t *p = realloc(b->prov, cap * sizeof *p);
    if (!p) return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
    b->prov = p;
    b->cap = cap;
  }
  if (d->text.n >= UINT32_MAX)
    return snprintf(err, errlen, "%s:%llu: more than %u samples", file, (unsigned long long)line, UINT32_MAX), BFEED_EDATASET;
  if (labelset_add(&b->labels, label, label_len, &b->prov[d->text.n]) < 0 ||
      textset_add(&d->text, &d->vectors, &b->s->ts, text, text_len) < 0)
    return snprintf(err, errlen, "%s:%llu: out of memory, or a text of more than %u tokens", file,
                    (unsigned long long)line, TEXTSET_MAX_SAMPLE_TOKENS), BFEED_ENOMEM;
  return 0;
}

static int on_text(void *ctx, const text_record *r, char *err, size_t errlen) {
  return add_sample(ctx, r->label, r->label_len, r->text, r->text_len, r->file, r->line, err, errlen);
}

static int on_manifest(void *ctx, const manifest_record *r, char *err, size_t errlen) {
  builder *b = ctx;
  size_t dl = r->image[0] == '/' ? 0 : strlen(b->dir);
  char *path = malloc(dl + 1 + r->image_len + 1);
  if (!path) return snprintf(err, errlen, "dataset %s: out of memory", b->d->name), BFEED_ENOMEM;
  if (dl) memcpy(path, b->dir, dl), path[dl] = '/';
  memcpy(path + (dl ? dl + 1 : 0), r->image, r->image_len);
  path[(dl ? dl + 1 : 0) + r->image_len] = 0;
  struct stat st;
  int e = stat(path, &st) != 0 ? errno : 0;
  if (e || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s:%llu: image %s: %s", r->file, (unsigned long long)r->line, path,
             e ? strerror(e) : "not a regular file");
    free(path);
    return BFEED_EDATASET;
  }
  if (strlist_push(&b->images, path) < 0) return snprintf(err, errlen, "dataset %s: out of memory", b->d->name), BFEED_ENOMEM;
  return add_sample(b, r->label, r->label_len, r->text, r->text_len, r->file, r->line, err, errlen);
}

/* Labels to class indices, statistics, and the checks every text dataset passes. */
static int finish(builder *b, int allow_numeric, const logger *log, char *err, size_t errlen) {
  dataset *d = b->d;
  textset *t = &d->text;
  if (t->n == 0) return snprintf(err, errlen, "dataset %s: no samples in %s", d->name, d->root), BFEED_EDATASET;
  if (labelset_finish(&b->labels, allow_numeric) < 0 || !(d->labels = malloc(t->n * sizeof *d->labels)))
    return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
  for (size_t i = 0; i < t->n; i++) d->labels[i] = (int32_t)b->labels.map[b->prov[i]];
  d->classes = b->labels.classes;
  d->nclasses = b->labels.nclasses;
  b->labels.classes = NULL;
  d->nsamples = t->n;
  textset_finish(t);
  log_info(log, "dataset %s: %zu samples in %zu classes (%s labels), %llu tokens, %llu (%.1f%%) not in the vectors (oov=%s), longest %u",
           d->name, d->nsamples, d->nclasses, b->labels.numeric ? "numeric" : "named", (unsigned long long)t->tokens,
           (unsigned long long)t->oov, t->tokens ? 100.0 * (double)t->oov / (double)t->tokens : 0.0,
           b->s->ts.oov == TEXTSET_OOV_SKIP ? "skip" : b->s->ts.oov == TEXTSET_OOV_ZERO ? "zero" : "unk", t->longest);
  return 0;
}

static void builder_free(builder *b) {
  labelset_free(&b->labels);
  free(b->prov);
  strlist_free(&b->images);
}

const char *const dataset_text_keys[] = {TEXT_KEYS, "format", "label", NULL};
const char *const dataset_manifest_keys[] = {TEXT_KEYS, NULL};

/* What both kinds do first (dataset_open has checked the keys): read the
 * settings, load the table. */
static int prepare(dataset *d, const dataset_keys *k, text_settings *s, const logger *log, char *err, size_t errlen) {
  int rc = parse_settings(k, s, err, errlen);
  return rc < 0 ? rc : load_vectors(d, s, log, err, errlen);
}

int dataset_text_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  text_settings s;
  int rc = prepare(d, k, &s, log, err, errlen);
  if (rc < 0) return rc;
  builder b = {.d = d, .s = &s};
  struct stat st;
  int folder = stat(d->root, &st) == 0 && S_ISDIR(st.st_mode);
  strlist dropped = {0};
  s.src.dropped = &dropped;
  rc = text_source_read(d->root, &s.src, on_text, &b, err, errlen);
  dataset_log_dropped(d, &dropped, log);
  if (rc == 0) rc = finish(&b, !folder, log, err, errlen);
  builder_free(&b);
  return rc;
}

int dataset_text_load_manifest(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  text_settings s;
  int rc = prepare(d, k, &s, log, err, errlen);
  if (rc < 0) return rc;
  char *dir = strdup(d->root);
  if (!dir) return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  builder b = {.d = d, .s = &s, .dir = slash ? (slash == dir ? "/" : dir) : "."};
  rc = manifest_read(d->root, on_manifest, &b, err, errlen);
  if (rc == 0) rc = finish(&b, 1, log, err, errlen);
  if (rc == 0 && !(d->bad = calloc(d->nsamples, 1))) rc = (snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM);
  if (rc == 0) {
    d->paths = b.images.v;
    b.images.v = NULL;
    b.images.n = 0;
  }
  builder_free(&b);
  free(dir);
  return rc;
}
