/* make_demo_text.c -- the labelled text demo dataset (see make_demo.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "bfeed_types.h"
#include "bf16.h"
#include "demo_files.h"
#include "demo_rng.h"
#include "demo_vectors.h"
#include "make_demo.h"

#define TEXT_SALT 0x6d616b652d747874ULL /* "make-txt" */
#define P_TOPIC 0.55f
#define P_OOV 0.06f

void make_demo_text_opts_init(make_demo_text_opts *o) {
  *o = (make_demo_text_opts){
      .train_per_class = 200, .val_per_class = 50, .nclasses = 4, .min_words = 6, .max_words = 24, .seed = 1};
}

/* A word every tokenization setting keeps whole and finds as it is. */
static int candidate(const char *w, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)w[i];
    if (c <= ' ' || c == 0x7f || (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))))
      return 0;
  }
  return demo_vectors_is_lower(w, n);
}

typedef struct topics {
  uint32_t n;        /* candidates */
  uint32_t *word;    /* table index of each candidate */
  float *unit;       /* n x dim unit vectors */
  int *topic;        /* topic of each candidate */
  uint32_t *members; /* candidates grouped by topic */
  uint32_t start[MAKE_DEMO_TEXT_MAX_CLASSES + 1];
} topics;

static void topics_free(topics *t) {
  free(t->word);
  free(t->unit);
  free(t->topic);
  free(t->members);
}

static float dot(const float *a, const float *b, uint32_t d) {
  float s = 0;
  for (uint32_t i = 0; i < d; i++) s += a[i] * b[i];
  return s;
}

static int make_topics(const demo_vectors *v, int k, uint64_t seed, topics *t, char *err, size_t errlen) {
  uint32_t D = v->dim, cap = v->nwords < MAKE_DEMO_TEXT_MAX_VOCAB ? v->nwords : MAKE_DEMO_TEXT_MAX_VOCAB;
  memset(t, 0, sizeof *t);
  t->word = malloc(cap * sizeof *t->word);
  t->unit = malloc((size_t)cap * D * sizeof *t->unit);
  t->topic = malloc(cap * sizeof *t->topic);
  t->members = malloc(cap * sizeof *t->members);
  float *best = malloc(cap * sizeof *best);
  int anchors[MAKE_DEMO_TEXT_MAX_CLASSES];
  if (!t->word || !t->unit || !t->topic || !t->members || !best) {
    free(best);
    return cli_fail(err, errlen, BFEED_ENOMEM, "make-demo: out of memory");
  }
  for (uint32_t i = 0; i < v->nwords && t->n < cap; i++) {
    const char *w = v->words + v->off[i];
    if (!candidate(w, (size_t)(v->off[i + 1] - v->off[i]))) continue;
    float *u = t->unit + (size_t)t->n * D, norm = 0;
    for (uint32_t d = 0; d < D; d++) {
      u[d] = bf16_to_f32(v->rows[(size_t)i * D + d]);
      norm += u[d] * u[d];
    }
    if (!(norm > 0) || !isfinite(norm)) continue;
    for (uint32_t d = 0; d < D; d++) u[d] /= sqrtf(norm);
    t->word[t->n++] = i;
  }
  if (t->n < 2 * (uint32_t)k) {
    free(best);
    return cli_fail(err, errlen, BFEED_EINVAL,
                     "make-demo: the vectors hold %u usable words (no punctuation, lowercase), fewer than 2 per class",
                     t->n);
  }
  /* Farthest-point anchors: each next one least similar to those chosen. */
  demo_rng r;
  demo_rng_init(&r, TEXT_SALT, seed, 2, 0, 0);
  anchors[0] = (int)(demo_next(&r) % t->n);
  for (uint32_t i = 0; i < t->n; i++) best[i] = -INFINITY;
  for (int a = 1; a <= k; a++) {
    const float *u = t->unit + (size_t)anchors[a - 1] * D;
    for (uint32_t i = 0; i < t->n; i++) {
      float c = dot(t->unit + (size_t)i * D, u, D);
      if (c > best[i]) best[i] = c;
    }
    if (a == k) break;
    uint32_t far = 0;
    for (uint32_t i = 1; i < t->n; i++)
      if (best[i] < best[far]) far = i;
    anchors[a] = (int)far;
  }
  /* Topics: nearest anchor; grouped in candidate order. */
  for (uint32_t i = 0; i < t->n; i++) {
    int arg = 0;
    float top = -INFINITY;
    for (int a = 0; a < k; a++) {
      float c = dot(t->unit + (size_t)i * D, t->unit + (size_t)anchors[a] * D, D);
      if (c > top) top = c, arg = a;
    }
    t->topic[i] = arg;
  }
  uint32_t n = 0;
  for (int a = 0; a < k; a++) {
    t->start[a] = n;
    for (uint32_t i = 0; i < t->n; i++)
      if (t->topic[i] == a) t->members[n++] = i;
  }
  t->start[k] = n;
  free(best);
  return 0;
}

typedef struct text_buf {
  char *p;
  size_t len, cap;
} text_buf;

static int put(text_buf *b, const char *s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1 << 16;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}

static int line(text_buf *b, const demo_vectors *v, const topics *t, const make_demo_text_opts *o, int split, int cls,
                int index) {
  demo_rng r;
  char tmp[32];
  demo_rng_init(&r, TEXT_SALT, o->seed, split, cls, index);
  int n = demo_int(&r, o->min_words, o->max_words);
  int rc = put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "__label__%d", cls));
  for (int i = 0; i < n && rc == 0; i++) {
    float u = demo_uniform(&r, 0.0f, 1.0f);
    const char *w;
    size_t len;
    if (u < P_OOV) {
      do len = (size_t)snprintf(tmp, sizeof tmp, "zq%06llx", (unsigned long long)(demo_next(&r) & 0xffffff));
      while (demo_vectors_has(v, tmp, len));
      w = tmp;
    } else {
      uint32_t c = u < P_OOV + P_TOPIC
                       ? t->members[t->start[cls] + (uint32_t)(demo_next(&r) % (t->start[cls + 1] - t->start[cls]))]
                       : (uint32_t)(demo_next(&r) % t->n);
      uint32_t word = t->word[c];
      w = v->words + v->off[word];
      len = (size_t)(v->off[word + 1] - v->off[word]);
    }
    rc = put(b, " ", 1);
    if (rc == 0) rc = put(b, w, len);
  }
  return rc == 0 ? put(b, "\n", 1) : rc;
}

static int check_opts(const make_demo_text_opts *o, char *err, size_t errlen) {
  if (o->nclasses < 2 || o->nclasses > MAKE_DEMO_TEXT_MAX_CLASSES)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: %d classes is outside 2..%d", o->nclasses,
                     MAKE_DEMO_TEXT_MAX_CLASSES);
  if (o->train_per_class < 1 || o->train_per_class > 1000000 || o->val_per_class < 0 || o->val_per_class > 1000000)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: lines per class must be 1..1000000 (train), 0..1000000 (val)");
  if (o->min_words < 1 || o->min_words > o->max_words || o->max_words > 1000)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: words per line %d..%d must satisfy 1 <= min <= max <= 1000",
                     o->min_words, o->max_words);
  return 0;
}

int make_demo_text(const char *dir, const char *vectors, const make_demo_text_opts *o, make_demo_stats *stats,
                   char *err, size_t errlen) {
  make_demo_text_opts defaults;
  if (!o) {
    make_demo_text_opts_init(&defaults);
    o = &defaults;
  }
  if (stats) memset(stats, 0, sizeof *stats);
  if (!dir || !*dir || !vectors) return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: no directory or vectors given");
  int rc = check_opts(o, err, errlen);
  if (rc != 0) return rc;
  if ((rc = demo_dir_check(dir, o->overwrite, err, errlen)) != 0) return rc;
  demo_vectors v;
  char why[512];
  if ((rc = demo_vectors_load(vectors, &v, why, sizeof why)) < 0) return cli_fail(err, errlen, rc, "make-demo: %s", why);
  topics t;
  rc = make_topics(&v, o->nclasses, o->seed, &t, err, errlen);
  if (rc == 0) rc = cli_mkdirs(dir, err, errlen);
  static const char *const names[2] = {"train.txt", "val.txt"};
  int counts[2] = {o->train_per_class, o->val_per_class};
  for (int split = 0; rc == 0 && split < 2; split++) {
    text_buf b = {0};
    for (int c = 0; rc == 0 && c < o->nclasses; c++)
      for (int i = 0; rc == 0 && i < counts[split]; i++) rc = line(&b, &v, &t, o, split, c, i);
    char path[PATH_MAX];
    if (rc < 0) rc = cli_fail(err, errlen, BFEED_ENOMEM, "make-demo: out of memory");
    else if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[split]) >= sizeof path)
      rc = cli_fail(err, errlen, BFEED_EINVAL, "%s: path too long", dir);
    else rc = demo_write_file(path, (const unsigned char *)b.p, b.len, err, errlen);
    if (rc == 0 && stats) stats->files++, stats->bytes += b.len;
    free(b.p);
  }
  topics_free(&t);
  demo_vectors_free(&v);
  return rc;
}
