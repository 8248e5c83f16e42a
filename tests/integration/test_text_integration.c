/*
 * test_text_integration.c -- a text dataset through the real daemon.
 *
 * The suite writes a labelled text dataset with make_demo_text (words from
 * ../shared/data/wordvec/lee_fasttext.vec when present, else from a table
 * written here) and starts two bfeedd children on it, one with 1 worker
 * and one with 2. Expectations are worked out here, independently of the
 * daemon: labels from the lines' __label__ tags, lengths by splitting the
 * lines on blanks and looking each word up in the vectors file's words.
 * Values are the numpy oracle's business (wordvec_fetch_oracle.py);
 * this checks shapes, padding, lengths, labels, order, bucketing, and
 * byte-identical batches whatever the worker count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed.h"
#include "itest_util.h"
#include "make_demo.h"

#define PER_CLASS 61 /* 244 lines: batches of 16 leave a short one */
#define NCLASSES 4

typedef struct suite {
  char root[128], vectors[256], text[256], cache[256], images[256];
  char text_arg[1024], zero_arg[1024], img_arg[300];
  size_t n;           /* samples */
  int32_t *labels;    /* per sample, from the file */
  int32_t *lengths;   /* per sample: words found in the vectors */
  uint32_t dim;
  itest_daemon d[2];  /* 1 and 2 workers */
} suite;

static suite S;

/* ------------------------------------------------------------------ */
/* The expectations                                                    */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The vectors file's words (first token of each line after a "V D"
 * header), sorted for bsearch; its dimension in *dim. */
static char **read_words(const char *path, size_t *n, uint32_t *dim) {
  size_t len;
  char *data = itest_read_file(path, &len);
  assert_non_null(data);
  char **w = NULL;
  *n = 0;
  int line = 0;
  for (char *s = strtok(data, "\n"); s; s = strtok(NULL, "\n"), line++) {
    unsigned v1, v2;
    char extra;
    if (line == 0 && sscanf(s, "%u %u %c", &v1, &v2, &extra) == 2) {
      *dim = v2;
      continue;
    }
    char *sp = strchr(s, ' ');
    assert_non_null(sp);
    if (line <= 1 && *dim == 0) /* GloVe: count the values */
      for (char *p = sp; *p; p++) *dim += p[0] == ' ' && p[1] && p[1] != ' ' && p[1] != '\r';
    w = realloc(w, (*n + 1) * sizeof *w);
    w[(*n)++] = strndup(s, (size_t)(sp - s));
  }
  free(data);
  qsort(w, *n, sizeof *w, cmp_str);
  return w;
}

static void expectations(void) {
  size_t nw, len;
  char **words = read_words(S.vectors, &nw, &S.dim);
  char *data = itest_read_file(S.text, &len);
  assert_non_null(data);
  for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
    S.labels = realloc(S.labels, (S.n + 1) * sizeof *S.labels);
    S.lengths = realloc(S.lengths, (S.n + 1) * sizeof *S.lengths);
    assert_int_equal(strncmp(line, "__label__", 9), 0);
    S.labels[S.n] = atoi(line + 9);
    int32_t k = 0;
    char *save, *tok = strtok_r(strchr(line, ' '), " ", &save);
    for (; tok; tok = strtok_r(NULL, " ", &save)) k += bsearch(&tok, words, nw, sizeof *words, cmp_str) != NULL;
    S.lengths[S.n++] = k;
  }
  free(data);
  for (size_t i = 0; i < nw; i++) free(words[i]);
  free(words);
}

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */

static void write_vectors(const char *path) {
  const char *shared = TEXT_SHARED_DATA "/wordvec/lee_fasttext.vec";
  size_t len;
  char *data = itest_read_file(shared, &len);
  if (!data) { /* no team data: a small GloVe table of our own */
    static const char *const w[] = {"the", "of", "and", "to", "in", "was", "said", "people", "fire", "police",
                                    "year", "new", "world", "water", "minister", "days", "army", "city"};
    char buf[8192];
    size_t k = 0;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s", w[i]);
      for (int d = 0; d < 8; d++) k += (size_t)snprintf(buf + k, sizeof buf - k, " %.4f", (double)((int)(i * 7 + d * 3) % 11 - 5) / 7);
      buf[k++] = '\n';
    }
    assert_int_equal(itest_write_file(path, buf, k), 0);
    return;
  }
  assert_int_equal(itest_write_file(path, data, len), 0);
  free(data);
}

static int setup(void **state) {
  char err[1024];
  if (itest_tmpdir(S.root, sizeof S.root) < 0) return -1;
  snprintf(S.vectors, sizeof S.vectors, "%s/vectors.vec", S.root);
  snprintf(S.cache, sizeof S.cache, "%s/cache", S.root);
  snprintf(S.images, sizeof S.images, "%s/img", S.root);
  char dir[200];
  snprintf(dir, sizeof dir, "%s/text", S.root);
  snprintf(S.text, sizeof S.text, "%s/train.txt", dir);
  write_vectors(S.vectors);
  make_demo_text_opts o;
  make_demo_text_opts_init(&o);
  o.train_per_class = PER_CLASS;
  o.val_per_class = 0;
  o.nclasses = NCLASSES;
  o.min_words = 1;
  o.max_words = 30;
  if (make_demo_text(dir, S.vectors, &o, NULL, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), -1;
  if (itest_make_dataset(S.images, 2, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), -1;
  expectations();
  snprintf(S.text_arg, sizeof S.text_arg, "txt=text:%s,vectors=%s,cache_dir=%s", S.text, S.vectors, S.root);
  snprintf(S.zero_arg, sizeof S.zero_arg, "txtz=text:%s,vectors=%s,oov=zero,max_len=12,cache=0", S.text, S.vectors);
  snprintf(S.img_arg, sizeof S.img_arg, "img=%s", S.images);
  for (int i = 0; i < 2; i++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", i + 1);
    itest_daemon_opts d = {.dir = S.root, .name = name, .datasets = {S.text_arg, S.zero_arg, S.img_arg}, .workers = i + 1};
    if (itest_daemon_start(&S.d[i], &d, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), -1;
  }
  return 0;
}

static int teardown(void **state) {
  char err[512];
  int rc = 0;
  for (int i = 0; i < 2; i++)
    if (S.d[i].pid && itest_daemon_stop(&S.d[i], 5000, err, sizeof err) < 0) rc = (fprintf(stderr, "%s\n", err), -1);
  itest_rmtree(S.root);
  free(S.labels);
  free(S.lengths);
  return rc;
}

static void text_opts(bfeed_stream_opts *o) {
  bfeed_stream_opts_init(o);
  o->batch = 16;
}

static void open_stream(int d, const char *ds, const bfeed_stream_opts *o, bfeed_client **c, bfeed_stream **s) {
  bfeed_error err;
  if (bfeed_connect(S.d[d].unix_addr, c, &err) < 0) fail_msg("connect: %s", err.message);
  if (bfeed_stream_open(*c, ds, o, s, &err) < 0) fail_msg("open %s: %s", ds, err.message);
}

static void find(const bfeed_batch *b, const char *name, int dtype, int ndim, bfeed_tensor *t) {
  if (bfeed_batch_find(b, name, t) < 0) fail_msg("batch lacks %s", name);
  assert_int_equal(t->dtype, dtype);
  assert_int_equal(t->ndim, ndim);
}

/* One batch's tokens/length/label/index against the expectations; returns
 * its padding (token slots beyond the lengths). */
static uint64_t check_batch(const bfeed_batch *b, uint32_t cap, int fixed) {
  bfeed_tensor tok, len, lab, idx;
  find(b, "tokens", BFEED_DTYPE_BF16, 3, &tok);
  find(b, "length", BFEED_DTYPE_I32, 1, &len);
  find(b, "label", BFEED_DTYPE_I32, 1, &lab);
  find(b, "index", BFEED_DTYPE_I64, 1, &idx);
  int64_t B = tok.shape[0], T = tok.shape[1];
  assert_int_equal(tok.shape[2], S.dim);
  assert_int_equal(len.shape[0], B);
  const int32_t *l = len.data, *y = lab.data;
  const int64_t *ix = idx.data;
  const uint16_t *v = tok.data;
  int32_t longest = 0;
  uint64_t pad = 0;
  for (int64_t i = 0; i < B; i++) {
    assert_true(ix[i] >= 0 && (size_t)ix[i] < S.n);
    int32_t want = S.lengths[ix[i]];
    if (cap && want > (int32_t)cap) want = (int32_t)cap;
    assert_int_equal(l[i], want);
    assert_int_equal(y[i], S.labels[ix[i]]);
    if (l[i] > longest) longest = l[i];
    for (int64_t t = l[i]; t < T; t++)
      for (int64_t d = 0; d < S.dim; d++)
        if (v[(i * T + t) * S.dim + d] != 0) fail_msg("padding of sample %lld at %lld is not zero", (long long)i, (long long)t);
    pad += (uint64_t)(T - l[i]);
  }
  assert_int_equal(T, fixed ? (int64_t)cap : longest > 0 ? longest : 1);
  return pad;
}

/* ------------------------------------------------------------------ */

/* Eval order, every sample once, the short batch kept, then END. */
static void test_epoch_in_order(void **state) {
  bfeed_stream_opts o;
  text_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  o.keep_partial = 1;
  o.epochs = 1;
  bfeed_client *c;
  bfeed_stream *s;
  open_stream(0, "txt", &o, &c, &s);
  bfeed_stream_info info;
  bfeed_stream_get_info(s, &info);
  assert_int_equal(info.samples, S.n);
  assert_int_equal(info.batches_per_epoch, (S.n + 15) / 16);
  assert_int_equal(info.classes, NCLASSES);
  bfeed_batch *b;
  bfeed_error err;
  size_t seen = 0;
  int rc;
  while ((rc = bfeed_stream_next(s, &b, &err)) == 0) {
    check_batch(b, 0, 0);
    bfeed_tensor idx;
    bfeed_batch_find(b, "index", &idx);
    for (int64_t i = 0; i < idx.shape[0]; i++) assert_int_equal(((const int64_t *)idx.data)[i], (int64_t)seen++);
    bfeed_batch_release(b);
  }
  assert_int_equal(rc, BFEED_EEOF);
  assert_int_equal(seen, S.n);
  bfeed_stream_close(s);
  bfeed_close(c);
}

/* Shuffled, with and without bucketing, pooled, zstd: the same bytes from
 * 1 and 2 workers; and codecs u8 (no images: sent as they are), u8+zstd,
 * u8+lz4 and lz4 (the raw tensors compressed) as none. */
static void test_same_bytes_any_workers(void **state) {
  static const bfeed_codec versus_none[] = {BFEED_CODEC_U8, BFEED_CODEC_U8_ZSTD, BFEED_CODEC_U8_LZ4, BFEED_CODEC_LZ4};
  for (int variant = 0; variant < 8; variant++) {
    bfeed_stream_opts o;
    text_opts(&o);
    o.seed = 42;
    o.epochs = 2;
    o.bucket = variant >= 1 ? 4 : 0;
    o.pool = variant == 2 ? BFEED_POOL_MEAN : BFEED_POOL_NONE;
    if (variant == 3) o.codec = BFEED_CODEC_ZSTD, o.max_len = 9;
    itest_run r[2] = {{0}};
    bfeed_error err;
    for (int d = 0; d < 2; d++) {
      if (variant >= 4) o.codec = d == 0 ? BFEED_CODEC_NONE : versus_none[variant - 4];
      if (itest_fetch(S.d[d].unix_addr, "txt", &o, 0, &r[d], &err) != BFEED_EEOF) fail_msg("%s", err.message);
    }
    assert_int_equal(r[0].n, 2 * (S.n / 16));
    long diff = itest_run_diff(&r[0], &r[1]);
    if (diff >= 0) fail_msg("variant %d: batch %ld differs between 1 and 2 workers", variant, diff);
    itest_run_free(&r[0]);
    itest_run_free(&r[1]);
  }
}

/* Bucketing: each epoch serves the same samples as without it (only whole
 * batches are reordered, the dropped short batch is the same); in every
 * run of 4 batches the batches hold consecutive stretches of the run's
 * lengths; padding drops; epochs differ; a resumed stream continues
 * exactly. */
static void test_bucketing(void **state) {
  uint64_t padding[2] = {0, 0};
  itest_run runs[2] = {{0}};
  unsigned char *served[2][2];
  for (int i = 0; i < 4; i++) served[i / 2][i % 2] = calloc(S.n, 1);
  for (int bucket = 0; bucket < 2; bucket++) {
    bfeed_stream_opts o;
    text_opts(&o);
    o.seed = 7;
    o.epochs = 2;
    o.bucket = bucket ? 4 : 0;
    bfeed_client *c;
    bfeed_stream *s;
    open_stream(1, "txt", &o, &c, &s);
    bfeed_batch *b;
    bfeed_error err;
    unsigned char *seen = calloc(S.n, 1);
    int32_t lo[4], hi[4];
    for (size_t k = 0; bfeed_stream_next(s, &b, &err) == 0; k++) {
      padding[bucket] += check_batch(b, 0, 0);
      itest_rec rec;
      assert_int_equal(itest_rec_from_batch(b, &rec), 0);
      runs[bucket].b = realloc(runs[bucket].b, (runs[bucket].n + 1) * sizeof rec);
      runs[bucket].b[runs[bucket].n++] = rec;
      bfeed_tensor len, idx;
      bfeed_batch_find(b, "length", &len);
      bfeed_batch_find(b, "index", &idx);
      if (bfeed_batch_epoch(b) != (k < S.n / 16 ? 0u : 1u)) fail_msg("batch %zu in epoch %llu", k, (unsigned long long)bfeed_batch_epoch(b));
      if (bfeed_batch_index(b) == 0) memset(seen, 0, S.n);
      const int32_t *l = len.data;
      int slot = (int)(bfeed_batch_index(b) % 4);
      lo[slot] = INT32_MAX, hi[slot] = -1;
      for (int64_t i = 0; i < idx.shape[0]; i++) {
        int64_t x = ((const int64_t *)idx.data)[i];
        if (seen[x]++) fail_msg("sample %lld twice in one epoch", (long long)x);
        served[bucket][bfeed_batch_epoch(b)][x] = 1;
        if (l[i] < lo[slot]) lo[slot] = l[i];
        if (l[i] > hi[slot]) hi[slot] = l[i];
      }
      if (bucket && slot == 3) /* a full run: its batches' length ranges meet at most at their ends */
        for (int p = 0; p < 4; p++)
          for (int q = 0; q < 4; q++)
            if (p != q && !(hi[p] <= lo[q] || hi[q] <= lo[p]))
              fail_msg("batches %d and %d of a run overlap in length: [%d,%d] [%d,%d]", p, q, lo[p], hi[p], lo[q], hi[q]);
      bfeed_batch_release(b);
    }
    free(seen);
    bfeed_stream_close(s);
    bfeed_close(c);
  }
  assert_int_equal(runs[0].n, runs[1].n);
  for (int e = 0; e < 2; e++) {
    assert_memory_equal(served[0][e], served[1][e], S.n);
    free(served[0][e]);
    free(served[1][e]);
  }
  if (!(padding[1] * 2 < padding[0])) fail_msg("bucketing left %llu padding slots, unbucketed %llu", (unsigned long long)padding[1], (unsigned long long)padding[0]);
  /* Epoch 1's order is not epoch 0's. */
  size_t bpe = S.n / 16;
  assert_false(itest_rec_equal(&runs[1].b[0], &runs[1].b[bpe]));
  /* Resume at epoch 1, batch 3: the same batches as the whole run. */
  bfeed_stream_opts o;
  text_opts(&o);
  o.seed = 7;
  o.bucket = 4;
  o.epoch = 1;
  o.batch_index = 3;
  itest_run tail = {0};
  bfeed_error err;
  assert_int_equal(itest_fetch(S.d[0].unix_addr, "txt", &o, bpe - 3, &tail, &err), 0);
  for (size_t k = 0; k < tail.n; k++) assert_true(itest_rec_equal(&tail.b[k], &runs[1].b[bpe + 3 + k]));
  itest_run_free(&tail);
  itest_run_free(&runs[0]);
  itest_run_free(&runs[1]);
}

/* Pooled batches have no tokens; fixed length pads to max_len; the
 * dataset's max_len and oov=zero apply when the stream does not ask. */
static void test_pool_fixed_and_zero(void **state) {
  bfeed_stream_opts o;
  text_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  o.pool = BFEED_POOL_MEAN;
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_batch *b;
  bfeed_error err;
  bfeed_tensor t;
  open_stream(0, "txt", &o, &c, &s);
  assert_int_equal(bfeed_stream_next(s, &b, &err), 0);
  find(b, "pooled", BFEED_DTYPE_BF16, 2, &t);
  assert_int_equal(t.shape[0], 16);
  assert_int_equal(t.shape[1], S.dim);
  assert_int_equal(bfeed_batch_find(b, "tokens", &t), BFEED_EINVAL);
  bfeed_batch_release(b);
  bfeed_stream_close(s);
  bfeed_close(c);

  text_opts(&o);
  o.fixed_len = 1;
  o.max_len = 12;
  open_stream(0, "txt", &o, &c, &s);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(bfeed_stream_next(s, &b, &err), 0);
    check_batch(b, 12, 1);
    bfeed_batch_release(b);
  }
  bfeed_stream_close(s);
  bfeed_close(c);

  /* oov=zero: every word counts; made-up words are zero rows. */
  text_opts(&o);
  o.mode = BFEED_MODE_EVAL;
  open_stream(1, "txtz", &o, &c, &s);
  assert_int_equal(bfeed_stream_next(s, &b, &err), 0);
  bfeed_tensor len, tok;
  find(b, "length", BFEED_DTYPE_I32, 1, &len);
  find(b, "tokens", BFEED_DTYPE_BF16, 3, &tok);
  size_t k, lenb;
  char *data = itest_read_file(S.text, &lenb);
  char *line = data;
  for (k = 0; k < 16; k++) {
    int words = 0;
    char *nl = strchr(line, '\n');
    for (char *p = line; p < nl; p++) words += *p == ' ';
    assert_int_equal(((const int32_t *)len.data)[k], words < 12 ? words : 12);
    line = nl + 1;
  }
  assert_true(tok.shape[1] <= 12);
  free(data);
  bfeed_batch_release(b);
  bfeed_stream_close(s);
  bfeed_close(c);
}

static void expect_refusal(const char *ds, const bfeed_stream_opts *o, int code, const char *frag) {
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_error err;
  assert_int_equal(bfeed_connect(S.d[0].unix_addr, &c, &err), 0);
  int rc = bfeed_stream_open(c, ds, o, &s, &err);
  if (rc == 0) {
    bfeed_stream_close(s);
    fail_msg("opened %s", ds);
  }
  assert_int_equal(rc, code);
  if (!strstr(err.message, frag)) fail_msg("message '%s' lacks '%s'", err.message, frag);
  bfeed_close(c);
}

static void test_refusals(void **state) {
  bfeed_stream_opts o;
  text_opts(&o);
  o.pool = BFEED_POOL_MEAN;
  expect_refusal("img", &o, BFEED_EINVAL, "apply to text datasets");
  text_opts(&o);
  o.fixed_len = 1;
  expect_refusal("txt", &o, BFEED_EINVAL, "fixed_len needs a length");
  text_opts(&o);
  o.batch = 4096;
  o.size = 8;
  o.max_len = 1u << 20;
  o.fixed_len = 1;
  expect_refusal("txt", &o, BFEED_EINVAL, "frame limit");
  /* And a table that does not parse leaves its dataset out (it used to
   * keep the daemon from starting), with the file and line in the log
   * and in the answer to an OPEN on it. */
  char bad[256], arg[600], err[2048];
  snprintf(bad, sizeof bad, "%s/bad.vec", S.root);
  assert_int_equal(itest_write_file(bad, "3 2\na 1 2\nb 1\nc 1 2\n", 20), 0);
  snprintf(arg, sizeof arg, "bad=text:%s,vectors=%s,cache=0", S.text, bad);
  itest_daemon d;
  itest_daemon_opts od = {.dir = S.root, .name = "bad", .datasets = {arg}, .workers = 1};
  if (itest_daemon_start(&d, &od, err, sizeof err) < 0) fail_msg("%s", err);
  int logged = itest_daemon_log_has(&d, "bad.vec:3:") && itest_daemon_log_has(&d, "'b' has 1 values, expected 2");
  text_opts(&o);
  itest_run run = {0};
  bfeed_error e;
  int rc = itest_fetch(d.unix_addr, "bad", &o, 1, &run, &e);
  if (itest_daemon_stop(&d, 5000, err, sizeof err) < 0) fail_msg("%s", err);
  if (!logged) fail_msg("the log does not name bad.vec:3 and its fault");
  assert_int_equal(rc, BFEED_EDATASET);
  if (!strstr(e.message, "bad.vec:3:")) fail_msg("the OPEN's error: %s", e.message);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_epoch_in_order),
      cmocka_unit_test(test_same_bytes_any_workers),
      cmocka_unit_test(test_bucketing),
      cmocka_unit_test(test_pool_fixed_and_zero),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
