/* batch.c -- see batch.h */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16.h"
#include "frame.h"
#include "msg.h"
#include "rng.h"
#include "wire.h"

uint64_t epoch_shard_size(uint64_t nsamples, uint32_t shard_count) {
  return nsamples / shard_count;
}

epoch_order *epoch_order_make(uint64_t nsamples, const bfeed_stream_opts *o, int shuffle, uint64_t epoch) {
  uint64_t n = epoch_shard_size(nsamples, o->shard_count);
  uint32_t *all = malloc(nsamples * sizeof *all);
  epoch_order *e = malloc(sizeof *e + n * sizeof e->idx[0]);
  if (!all || !e) {
    free(all);
    free(e);
    return NULL;
  }
  if (shuffle)
    rng_permutation(all, nsamples, o->seed, epoch);
  else
    for (uint64_t i = 0; i < nsamples; i++) all[i] = (uint32_t)i;
  for (uint64_t p = 0; p < n; p++) e->idx[p] = all[p * o->shard_count + o->shard_index];
  free(all);
  e->refs = 1;
  e->epoch = epoch;
  e->n = (uint32_t)n;
  return e;
}

epoch_order *epoch_order_ref(epoch_order *e) {
  __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
  return e;
}

void epoch_order_unref(epoch_order *e) {
  if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) free(e);
}

void batch_spec_init(batch_spec *s, dataset *ds, const bfeed_stream_opts *o, uint32_t stream_id,
                     const logger *log) {
  static const float unit_mean[3] = {0, 0, 0}, unit_std[3] = {1, 1, 1};
  memset(s, 0, sizeof *s);
  s->ds = ds;
  s->opts = *o;
  s->stream_id = stream_id;
  s->log = log;
  s->sample.size = (int)o->size;
  s->sample.mode = o->mode == BFEED_MODE_EVAL ? SAMPLE_EVAL : SAMPLE_TRAIN;
  s->sample.allow_dct_scale = 1;
  /* Inputs are 8-bit after resampling, so normalisation and the cast are a
   * table of 3 x 256 values, computed as torchvision computes them:
   * ToTensor divides by 255 in float32, Normalize subtracts and divides in
   * float32, then .to(bfloat16) rounds to nearest even. NONE keeps 0..255,
   * which bf16 represents exactly. */
  int raw = o->normalize == BFEED_NORM_NONE;
  for (int c = 0; c < 3; c++) {
    float mean = raw ? unit_mean[c] : o->mean[c], sd = raw ? unit_std[c] : o->std[c];
    for (int v = 0; v < 256; v++) {
      float x = raw ? (float)v : ((float)v / 255.0f - mean) / sd;
      s->lut[c][v] = bf16_from_f32(x);
    }
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  uint8_t *b = realloc(*buf, need);
  if (!b) return -1;
  *buf = b;
  *cap = need;
  return 0;
}

/* Normalise one RGB8 sample into slot i of the image tensor. */
static void put_image(const batch_spec *s, const uint8_t *rgb, uint8_t *image, uint32_t i) {
  size_t hw = (size_t)s->opts.size * s->opts.size;
  if (s->opts.layout == BFEED_LAYOUT_NHWC) {
    uint8_t *dst = image + (size_t)i * hw * 3 * 2;
    for (size_t p = 0; p < hw; p++)
      for (int c = 0; c < 3; c++) wire_put16(dst + (p * 3 + c) * 2, s->lut[c][rgb[p * 3 + c]]);
    return;
  }
  for (int c = 0; c < 3; c++) {
    uint8_t *dst = image + ((size_t)i * 3 + c) * hw * 2;
    const uint16_t *lut = s->lut[c];
    for (size_t p = 0; p < hw; p++) wire_put16(dst + p * 2, lut[rgb[p * 3 + c]]);
  }
}

/* Load the sample at `pos`, or the next valid one after it. Returns the
 * dataset index used, or -1 when no sample of the epoch decodes. */
static int64_t load_one(batch_job *job, batch_worker *w, uint32_t pos) {
  const batch_spec *s = job->spec;
  const epoch_order *ord = job->order;
  char why[200];
  for (uint32_t k = 0; k < ord->n; k++) {
    uint32_t idx = ord->idx[(pos + k) % ord->n];
    size_t len;
    rng_t r;
    rng_init(&r, s->opts.seed, RNG_DOMAIN_SAMPLE, job->epoch, idx);
    if (dataset_read(s->ds, idx, &w->file, &w->file_cap, &len, why, sizeof why) == 0 &&
        sample_load(w->file, len, &s->sample, &r, w->rgb, &w->scratch, why, sizeof why) == 0)
      return idx;
    job->skipped++;
    log_write(s->log, dataset_mark_bad(s->ds, idx) ? LOG_WARN : LOG_DEBUG,
              "dataset %s: skipping %s: %s (replaced by the next sample in the epoch)", s->ds->name,
              s->ds->paths[idx], why);
  }
  return -1;
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

void batch_build(batch_job *job, batch_worker *w) {
  const batch_spec *s = job->spec;
  const bfeed_stream_opts *o = &s->opts;
  uint64_t t0 = now_ns();
  uint32_t B = job->count, S = o->size;
  msg_batch m;
  memset(&m, 0, sizeof m);
  m.epoch = job->epoch;
  m.index = job->index;
  m.seq = job->seq;
  m.codec = (uint8_t)o->codec;
  m.ntensors = 3;
  msg_tensor *img = &m.t[0], *lab = &m.t[1], *ix = &m.t[2];
  strcpy(img->name, "image");
  img->dtype = BFEED_DTYPE_BF16;
  img->ndim = 4;
  img->shape[0] = B;
  int nhwc = o->layout == BFEED_LAYOUT_NHWC;
  img->shape[1] = nhwc ? S : 3;
  img->shape[2] = S;
  img->shape[3] = nhwc ? 3 : S;
  img->nbytes = (uint64_t)B * 3 * S * S * 2;
  strcpy(lab->name, "label");
  lab->dtype = BFEED_DTYPE_I32;
  lab->ndim = 1;
  lab->shape[0] = B;
  lab->offset = align64(img->nbytes);
  lab->nbytes = (uint64_t)B * 4;
  strcpy(ix->name, "index");
  ix->dtype = BFEED_DTYPE_I64;
  ix->ndim = 1;
  ix->shape[0] = B;
  ix->offset = align64(lab->offset + lab->nbytes);
  ix->nbytes = (uint64_t)B * 8;
  m.raw_size = ix->offset + ix->nbytes;

  wbuf_init(&job->frame);
  size_t at = msg_begin(&job->frame);
  msg_batch_encode_head(&job->frame, &m);
  /* Uncompressed, the tensors are built in place in the frame; for zstd
   * they are built in the worker's buffer and compressed into the frame. */
  uint8_t *raw;
  if (o->codec == BFEED_CODEC_NONE) {
    raw = wbuf_grow(&job->frame, m.raw_size);
  } else {
    raw = grow(&w->raw, &w->raw_cap, m.raw_size) == 0 ? w->raw : NULL;
  }
  if (!raw || grow(&w->rgb, &w->rgb_cap, (size_t)S * S * 3) < 0) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory building a %llu-byte batch",
             (unsigned long long)m.raw_size);
    goto done;
  }
  memset(raw, 0, m.raw_size); /* padding between tensors is deterministic too */
  for (uint32_t i = 0; i < B; i++) {
    int64_t idx = load_one(job, w, job->first + i);
    if (idx < 0) {
      job->rc = BFEED_EDATASET;
      snprintf(job->err, sizeof job->err, "dataset %s: no sample of epoch %llu could be decoded",
               s->ds->name, (unsigned long long)job->epoch);
      goto done;
    }
    put_image(s, w->rgb, raw, i);
    wire_put32(raw + lab->offset + 4 * i, (uint32_t)s->ds->labels[idx]);
    wire_put64(raw + ix->offset + 8 * i, (uint64_t)idx);
  }
  if (o->codec == BFEED_CODEC_ZSTD) {
    if (!w->zc && !(w->zc = ZSTD_createCCtx())) {
      job->rc = BFEED_ENOMEM;
      snprintf(job->err, sizeof job->err, "out of memory for a zstd context");
      goto done;
    }
    size_t bound = ZSTD_compressBound(m.raw_size);
    uint8_t *dst = wbuf_reserve(&job->frame, bound);
    size_t n = dst ? ZSTD_compressCCtx(w->zc, dst, bound, raw, m.raw_size, o->codec_level) : 0;
    if (!dst || ZSTD_isError(n)) {
      job->rc = BFEED_ECODEC;
      snprintf(job->err, sizeof job->err, "zstd compression failed: %s",
               dst ? ZSTD_getErrorName(n) : "out of memory");
      goto done;
    }
    job->frame.len += n;
  }
  job->rc = msg_finish(&job->frame, at, FRAME_BATCH, s->stream_id);
  if (job->rc < 0) snprintf(job->err, sizeof job->err, "batch frame too large or out of memory");
done:
  job->raw_bytes = m.raw_size;
  job->busy_ns = now_ns() - t0;
}

void batch_worker_free(batch_worker *w) {
  sample_scratch_free(&w->scratch);
  free(w->file);
  free(w->rgb);
  free(w->raw);
  ZSTD_freeCCtx(w->zc);
  memset(w, 0, sizeof *w);
}

void batch_job_free(batch_job *job) {
  if (!job) return;
  wbuf_free(&job->frame);
  epoch_order_unref(job->order);
  free(job);
}
