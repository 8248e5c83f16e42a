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

void batch_pool_init(batch_pool *p) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
}

void batch_pool_destroy(batch_pool *p) {
  for (int i = 0; i < p->n; i++) free(p->v[i].p);
  p->n = 0;
  pthread_mutex_destroy(&p->mu);
}

uint8_t *batch_pool_get(batch_pool *p, size_t need, size_t *cap) {
  uint8_t *buf = NULL;
  pthread_mutex_lock(&p->mu);
  for (int i = p->n - 1; i >= 0; i--)
    if (p->v[i].cap >= need) {
      buf = p->v[i].p;
      *cap = p->v[i].cap;
      p->v[i] = p->v[--p->n];
      break;
    }
  pthread_mutex_unlock(&p->mu);
  if (!buf && (buf = malloc(need))) *cap = need;
  return buf;
}

void batch_pool_put(batch_pool *p, uint8_t *buf, size_t cap) {
  if (!buf) return;
  if (p) {
    pthread_mutex_lock(&p->mu);
    if (p->n < BATCH_POOL_MAX) {
      p->v[p->n].p = buf;
      p->v[p->n].cap = cap;
      p->n++;
      buf = NULL;
    }
    pthread_mutex_unlock(&p->mu);
  }
  free(buf);
}

void batch_spec_init(batch_spec *s, dataset *ds, const bfeed_stream_opts *o, uint32_t stream_id,
                     const logger *log, batch_pool *pool) {
  static const float unit_mean[3] = {0, 0, 0}, unit_std[3] = {1, 1, 1};
  memset(s, 0, sizeof *s);
  s->ds = ds;
  s->opts = *o;
  s->stream_id = stream_id;
  s->log = log;
  s->pool = pool;
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

/* Normalise one RGB8 sample into slot i of the image tensor. One pass over
 * the pixels writing three planes (NCHW) or one interleaved run (NHWC); on
 * little-endian hosts the table values are stored as they are. */
static inline void put16(uint8_t *p, uint16_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(p, &v, 2);
#else
  wire_put16(p, v);
#endif
}

static void put_image(const batch_spec *s, const uint8_t *rgb, uint8_t *image, uint32_t i) {
  size_t hw = (size_t)s->opts.size * s->opts.size;
  const uint16_t *l0 = s->lut[0], *l1 = s->lut[1], *l2 = s->lut[2];
  if (s->opts.layout == BFEED_LAYOUT_NHWC) {
    uint8_t *dst = image + (size_t)i * hw * 3 * 2;
    for (size_t p = 0; p < hw; p++, rgb += 3, dst += 6) {
      put16(dst, l0[rgb[0]]);
      put16(dst + 2, l1[rgb[1]]);
      put16(dst + 4, l2[rgb[2]]);
    }
    return;
  }
  uint8_t *r = image + (size_t)i * 3 * hw * 2, *g = r + hw * 2, *b = g + hw * 2;
  for (size_t p = 0; p < hw; p++, rgb += 3) {
    put16(r + 2 * p, l0[rgb[0]]);
    put16(g + 2 * p, l1[rgb[1]]);
    put16(b + 2 * p, l2[rgb[2]]);
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

  /* The whole frame is sized up front, so the pooled buffer never grows. */
  size_t need = FRAME_HEADER_SIZE + 64 + m.ntensors * (MSG_TENSOR_NAME_MAX + 2 + 8 * (BFEED_MAX_DIMS + 2)) +
                (o->codec == BFEED_CODEC_NONE ? m.raw_size : ZSTD_compressBound(m.raw_size));
  wbuf_init(&job->frame);
  job->frame.data = batch_pool_get(job->pool, need, &job->frame.cap);
  job->frame.failed = job->frame.data == NULL;
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
  /* Zero the padding between tensors so a batch is byte-identical wherever
   * it is made; the tensors themselves are fully written below. */
  memset(raw + img->nbytes, 0, lab->offset - img->nbytes);
  memset(raw + lab->offset + lab->nbytes, 0, ix->offset - lab->offset - lab->nbytes);
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
  batch_pool_put(job->pool, job->frame.data, job->frame.cap);
  epoch_order_unref(job->order);
  free(job);
}
