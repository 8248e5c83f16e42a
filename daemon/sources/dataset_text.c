/*
 * dataset_text.c -- what the kinds with text (kind_text.c, kind_manifest.c)
 * share: their settings for the words, the embedding table, and the
 * building of labelled, tokenized samples (dataset_text.h).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_text.h"

static int dataset_text_settings(const dataset_keys *k, dataset_text_opts *s, char *err, size_t errlen) {
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
      (rc = dataset_key_u64(k, "max_len", 0, 1u << 20, 0, &s->len_cap, err, errlen)) < 0 ||
      (rc = dataset_key_u64(k, "max_table_bytes", 1, UINT64_MAX, WORDVEC_DEFAULT_MAX_BYTES, &max_bytes, err,
                            errlen)) < 0)
    return rc;
  s->wv.max_bytes = max_bytes;
  return 0;
}

static const char *dataset_text_size(uint64_t bytes, char *buf, size_t cap) {
  if (bytes >= 1000000) snprintf(buf, cap, "%.1f MB", (double)bytes / 1e6);
  else if (bytes >= 1000) snprintf(buf, cap, "%.1f KB", (double)bytes / 1e3);
  else snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
  return buf;
}

static int dataset_text_vectors(dataset *d, dataset_text_opts *s, const logger *log, char *err, size_t errlen) {
  wordvec_report rep;
  wordvec *v = &d->vectors;
  char why[1024];
  if (wordvec_load(s->vectors, &s->wv, v, &rep, why, sizeof why) < 0)
    return snprintf(err, errlen, "dataset %s: vectors: %s", d->name, why), BFEED_EDATASET;
  char bf[32], f32[32];
  const char *how = rep.cache == WORDVEC_CACHE_HIT ? "mapped from the cache" : "parsed";
  log_info(log, "dataset %s: vectors %s: %u words x %u (%s), %s as bf16 (%s as float32), %s in %.3f s", d->name,
           s->vectors, v->nwords, v->dim, wordvec_format_name(v->format), dataset_text_size(wordvec_table_bytes(v), bf, sizeof bf),
           dataset_text_size(2 * wordvec_table_bytes(v), f32, sizeof f32), how, rep.seconds);
  if (rep.cache == WORDVEC_CACHE_WRITTEN)
    log_info(log, "dataset %s: vectors cache %s written (%s)", d->name, rep.cache_path, rep.note);
  else if (rep.cache == WORDVEC_CACHE_FAILED)
    log_warn(log, "dataset %s: vectors cache not written: %s; the table is held in memory and parsed again at every start (set cache_dir=)",
             d->name, rep.note);
  if (v->duplicates)
    log_warn(log, "dataset %s: vectors %s: %llu duplicate words ignored (the first of each is kept)", d->name,
             s->vectors, (unsigned long long)v->duplicates);
  if (v->nonfinite) {
    char first[WORDVEC_MAX_WORD + 16];
    uint32_t w = v->first_nonfinite;
    snprintf(first, sizeof first, "word '%.*s'", (int)(v->word_off[w + 1] - v->word_off[w]), v->words + v->word_off[w]);
    dataset_note_nonfinite(d, s->vectors, v->nonfinite, first, log);
  }
  if (s->ts.oov == TEXTSET_OOV_UNK && (s->ts.unk = wordvec_find(v, s->unk, strlen(s->unk))) == WORDVEC_NONE)
    return snprintf(err, errlen, "dataset %s: oov=unk, but %s has no word '%s' (name another with unk=WORD)", d->name,
                    s->vectors, s->unk), BFEED_EDATASET;
  d->len_cap = (uint32_t)s->len_cap;
  return 0;
}

int dataset_text_add(dataset_text_builder *b, const char *label, size_t label_len, const char *text, size_t text_len,
                     const char *file, uint64_t line, char *err, size_t errlen) {
  dataset *d = b->d;
  if (d->text.n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    uint32_t *p = realloc(b->prov, cap * sizeof *p);
    if (!p) return dataset_oom(d, err, errlen);
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

/* Labels to class indices, statistics, and the checks every text dataset passes. */
int dataset_text_finish(dataset_text_builder *b, int allow_numeric, const logger *log, char *err, size_t errlen) {
  dataset *d = b->d;
  textset *t = &d->text;
  if (t->n == 0) return snprintf(err, errlen, "dataset %s: no samples in %s", d->name, d->root), BFEED_EDATASET;
  if (labelset_finish(&b->labels, allow_numeric) < 0 || !(d->labels = malloc(t->n * sizeof *d->labels)))
    return dataset_oom(d, err, errlen);
  for (size_t i = 0; i < t->n; i++) d->labels[i] = (int32_t)b->labels.map[b->prov[i]];
  d->classes = b->labels.classes;
  d->nclasses = b->labels.nclasses;
  b->labels.classes = NULL;
  d->nsamples = t->n;
  d->tensors |= DATASET_TENSOR_TEXT;
  textset_finish(t);
  log_info(log, "dataset %s: %zu samples in %zu classes (%s labels), %llu tokens, %llu (%.1f%%) not in the vectors (oov=%s), longest %u",
           d->name, d->nsamples, d->nclasses, b->labels.numeric ? "numeric" : "named", (unsigned long long)t->tokens,
           (unsigned long long)t->oov, t->tokens ? 100.0 * (double)t->oov / (double)t->tokens : 0.0,
           b->s->ts.oov == TEXTSET_OOV_SKIP ? "skip" : b->s->ts.oov == TEXTSET_OOV_ZERO ? "zero" : "unk", t->longest);
  return 0;
}

void dataset_text_builder_free(dataset_text_builder *b) {
  labelset_free(&b->labels);
  free(b->prov);
}

int dataset_text_prepare(dataset *d, const dataset_keys *k, dataset_text_opts *s, const logger *log, char *err,
                         size_t errlen) {
  int rc = dataset_text_settings(k, s, err, errlen);
  return rc < 0 ? rc : dataset_text_vectors(d, s, log, err, errlen);
}

