/* batch.c -- see batch.h */
#include "batch.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "batch_text.h"
#include "bf16.h"
#include "codec.h"
#include "frame.h"
#include "fwriter.h"
#include "batch_copy.h"
#include "batch_load.h"
#include "image_decode.h"
#include "msg.h"
#include "names.h"
#include "opts.h"
#include "tobf16.h"
#include "wire.h"

/* What a batch travels as (codec.h): the u8 form of an image batch,
 * unless its values are made after Normalize (erasing, mixing), which 8
 * bits cannot carry: then zstd and lz4 compress its bf16. */
static int batch_codec(const bfeed_stream_opts *o, int has_image) {
  return codec_for_batch(o->codec, has_image && !opts_after_normalize(o));
}

void batch_spec_init(batch_spec *s, dataset *ds, const bfeed_stream_opts *o, uint32_t stream_id,
                     const logger *log, bufcache *buffers) {
  static const float unit_mean[3] = {0, 0, 0}, unit_std[3] = {1, 1, 1};
  memset(s, 0, sizeof *s);
  s->ds = ds;
  s->opts = *o;
  s->stream_id = stream_id;
  s->log = log;
  s->buffers = buffers;
  s->len_cap = batch_text_cap(o, ds);
  s->sample.size = (int)o->size;
  s->sample.width = (int)o->width;
  s->sample.mode = o->mode == BFEED_MODE_EVAL ? SAMPLE_EVAL : SAMPLE_TRAIN;
  s->sample.allow_dct_scale = o->train_decode == BFEED_TRAIN_DECODE_FAST;
  s->sample.eval_draft = o->eval_decode == BFEED_EVAL_DECODE_FAST;
  s->sample.rrc = (transform_rrc_params){{o->crop_scale[0], o->crop_scale[1]}, {o->crop_ratio[0], o->crop_ratio[1]}, o->hflip};
  s->sample.interp = o->interpolation;
  s->sample.resize = (int)o->resize;
  s->sample.max_pixels = IMAGE_DECODE_MAX_PIXELS_DEFAULT; /* the server sets its own */
  /* Codec u8 (and zstd, which sends image batches as u8+zstd: batch_build)
   * sends the pixels as served, mirrored; with codec none the mirror is
   * part of the pass to bf16 (tobf16.h), not a pass of its own. */
  s->sample.defer_flip = !codec_get(batch_codec(o, 1))->u8;
  aug_program_init(&s->aug, o, (int)o->size, (int)batch_width(o));
  if (aug_program_active(&s->aug)) s->sample.defer_flip = 0; /* the ops see the flipped image */
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
      s->lutf[c][v] = x;
    }
  }
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* The tensors of a batch of B samples (T tokens per text sample), in the
 * order every kind shares: image, tokens or pooled, length, features,
 * label, index, and with eval_pad mask valid. Each starts at a multiple of
 * 64 bytes. */
typedef struct batch_layout {
  msg_batch m;
  msg_tensor *image, *tokens, *pooled, *length, *features, *label, *index, *valid, *target, *explain;
} batch_layout;

static msg_tensor *add_tensor(msg_batch *m, const char *name, int dtype, int ndim, const uint64_t *shape) {
  msg_tensor *t = &m->t[m->ntensors];
  uint64_t n = names_dtype_size(dtype);
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->dtype = (uint8_t)dtype;
  t->ndim = (uint8_t)ndim;
  for (int d = 0; d < ndim; d++) n *= (t->shape[d] = shape[d]);
  t->offset = m->ntensors ? align64(m->t[m->ntensors - 1].offset + m->t[m->ntensors - 1].nbytes) : 0;
  t->nbytes = n;
  m->raw_size = t->offset + t->nbytes;
  m->ntensors++;
  return t;
}

/* The mixed target's width. */
static uint32_t batch_classes(const batch_spec *s) {
  return s->opts.mix_classes ? s->opts.mix_classes : (uint32_t)s->ds->nclasses;
}

static void layout(const batch_spec *s, uint32_t B, uint32_t T, batch_layout *L) {
  const bfeed_stream_opts *o = &s->opts;
  const dataset *ds = s->ds;
  memset(L, 0, sizeof *L);
  msg_batch *m = &L->m;
  if (dataset_has_images(ds)) {
    int nhwc = o->layout == BFEED_LAYOUT_NHWC;
    uint64_t sh[4] = {B, nhwc ? o->size : 3, nhwc ? batch_width(o) : o->size, nhwc ? 3 : batch_width(o)};
    L->image = add_tensor(m, "image", BFEED_DTYPE_BF16, 4, sh);
  }
  if (dataset_has_text(ds)) {
    uint64_t D = ds->vectors.dim;
    if (o->pool == BFEED_POOL_MEAN) L->pooled = add_tensor(m, "pooled", BFEED_DTYPE_BF16, 2, (uint64_t[]){B, D});
    else L->tokens = add_tensor(m, "tokens", BFEED_DTYPE_BF16, 3, (uint64_t[]){B, T, D});
    L->length = add_tensor(m, "length", BFEED_DTYPE_I32, 1, (uint64_t[]){B});
  }
  if (dataset_has_features(ds)) {
    const npy_source_header *h = &ds->features.h;
    uint64_t sh[3] = {B, h->shape[1], h->ndim == 3 ? h->shape[2] : 0};
    L->features = add_tensor(m, "features", BFEED_DTYPE_BF16, h->ndim, sh);
  }
  if (ds->labels) L->label = add_tensor(m, "label", BFEED_DTYPE_I32, 1, (uint64_t[]){B});
  L->index = add_tensor(m, "index", BFEED_DTYPE_I64, 1, (uint64_t[]){B});
  if (o->eval_pad == BFEED_EVAL_PAD_MASK) L->valid = add_tensor(m, "valid", BFEED_DTYPE_U8, 1, (uint64_t[]){B});
  if (aug_mix_active(&s->aug.mix))
    L->target = add_tensor(m, "target", BFEED_DTYPE_F32, 2, (uint64_t[]){B, batch_classes(s)});
  if (o->explain && L->image) L->explain = add_tensor(m, "explain", BFEED_DTYPE_U8, 1, (uint64_t[]){batch_aug_explain_bytes(B)});
}

/* Frame bytes besides the raw tensors: header, batch fields, descriptors. */
static size_t frame_overhead(const msg_batch *m) {
  return FRAME_HEADER_SIZE + 64 + m->ntensors * (MSG_TENSOR_NAME_MAX + 2 + 8 * (BFEED_MAX_DIMS + 2));
}

/* The layout of the largest batch a stream can make: T at its most. */
static void batch_largest(const batch_spec *s, batch_layout *L) {
  uint32_t T = dataset_has_text(s->ds) ? batch_text_longest(&s->opts, s->ds) : 1;
  layout(s, s->opts.batch, T ? T : 1, L);
}

uint64_t batch_frame_estimate(const batch_spec *s) {
  batch_layout L;
  batch_largest(s, &L);
  /* u8 data is at most the raw bytes plus its head; a compressor's bound covers both. */
  int codec = batch_codec(&s->opts, L.image != NULL);
  uint64_t data = codec_bound(codec, L.m.raw_size + (codec_get(codec)->u8 ? MSG_U8_HEAD : 0));
  return data + frame_overhead(&L.m) + 63;
}

uint64_t batch_raw_estimate(const batch_spec *s) {
  batch_layout L;
  batch_largest(s, &L);
  return L.m.raw_size;
}

/* Whether the largest batch of s fits: one frame (limit 0), or `limit`
 * bytes of pooled buffer (a stream's share of max_memory). */
static int batch_fits(const batch_spec *s, uint64_t limit) {
  batch_layout L;
  if (limit) return batch_frame_estimate(s) <= limit;
  batch_largest(s, &L);
  return L.m.raw_size + frame_overhead(&L.m) <= FRAME_MAX_PAYLOAD;
}

/* The largest value in [lo, hi] of the option *field (s->opts.batch,
 * .size or .max_len) whose largest batch fits as batch_fits says, 0 if
 * none: the batch grows with each, so a binary search finds it. (.size is
 * the height: a width of its own stays, a square stays square.) */
static uint32_t largest_fitting(batch_spec *s, uint32_t *field, uint32_t lo, uint32_t hi, uint64_t limit) {
  uint32_t best = 0;
  while (lo <= hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    *field = mid;
    if (batch_fits(s, limit)) best = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  return best;
}

/* The size option's text: "S", or "H,W". */
static void batch_size_text(const bfeed_stream_opts *o, char *buf, size_t cap) {
  if (o->width && o->width != o->size) snprintf(buf, cap, "%u,%u", o->size, o->width);
  else snprintf(buf, cap, "%u", o->size);
}

/* "batch N fits", and for images "at size S, or size S' at batch B" (H,W
 * for an image that is not square), into hint; "" when not even a batch
 * of one fits. */
static void batch_fit_hint(const batch_spec *spec, uint64_t limit, char *hint, size_t cap) {
  batch_spec s = *spec;
  const bfeed_stream_opts *o = &spec->opts;
  uint32_t batch_fits = largest_fitting(&s, &s.opts.batch, 1, o->batch, limit);
  hint[0] = 0;
  if (!batch_fits) return;
  int n = snprintf(hint, cap, "batch %u fits", batch_fits);
  s.opts = *o;
  if (!dataset_has_images(s.ds) || n < 0 || (size_t)n >= cap) return;
  char now[24], fits[24];
  batch_size_text(o, now, sizeof now);
  s.opts.size = largest_fitting(&s, &s.opts.size, 8, o->size, limit);
  batch_size_text(&s.opts, fits, sizeof fits);
  snprintf(hint + n, cap - (size_t)n, " at size %s, or size %s at batch %u", now, s.opts.size ? fits : "none",
           o->batch);
}

/* MixUp and CutMix mix one-hot labels: the dataset has them, each below
 * the target's width. */
static int batch_check_mix(const batch_spec *s, char *err, size_t errlen) {
  const dataset *ds = s->ds;
  if (!aug_mix_active(&s->aug.mix)) return 0;
  if (!dataset_has_images(ds) || !ds->labels)
    return snprintf(err, errlen, "mixup-alpha and cutmix-alpha mix images and their labels: dataset %s has %s",
                    ds->name, dataset_has_images(ds) ? "no labels" : "no images"),
           BFEED_EINVAL;
  uint32_t classes = batch_classes(s);
  for (size_t i = 0; i < ds->nsamples; i++)
    if (ds->labels[i] < 0 || (uint32_t)ds->labels[i] >= classes)
      return snprintf(err, errlen, "dataset %s: sample %zu's label %d is not below mix-classes %u (%zu classes)",
                      ds->name, i, (int)ds->labels[i], classes, ds->nclasses),
             BFEED_EINVAL;
  return 0;
}

int batch_spec_check(const dataset *ds, const bfeed_stream_opts *o, char *err, size_t errlen) {
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), BFEED_EINVAL
  int ready = dataset_ready(ds, err, errlen);
  if (ready < 0) return ready;
  if ((ready = batch_text_check(ds, o, err, errlen)) < 0) return ready;
  if (dataset_has_features(ds) && ds->features.row_floats > FRAME_MAX_PAYLOAD / 2 / o->batch)
    BAD("a batch of %u feature rows of %llu values is over the %u-byte frame limit", o->batch,
        (unsigned long long)ds->features.row_floats, FRAME_MAX_PAYLOAD);
  batch_spec s = {.ds = (dataset *)ds, .opts = *o};
  aug_program_init(&s.aug, o, (int)o->size, (int)batch_width(o));
  if ((ready = batch_check_mix(&s, err, errlen)) < 0) return ready;
  if (batch_fits(&s, 0)) return 0;
  /* Say what would fit: the largest batch at these options, and for
   * images the largest size at this batch. */
  batch_layout L;
  batch_largest(&s, &L);
  char hint[160];
  batch_fit_hint(&s, 0, hint, sizeof hint);
  BAD("a batch of %u could reach %llu bytes, over the %u-byte frame limit: %s%s", o->batch,
      (unsigned long long)L.m.raw_size, FRAME_MAX_PAYLOAD, hint[0] ? hint : "lower the batch",
      batch_text_fit_hint(ds, o));
#undef BAD
}

int batch_spec_check_memory(const batch_spec *spec, uint64_t share, const char *whose, char *err, size_t errlen) {
  uint64_t need = batch_frame_estimate(spec);
  if (need <= share) return 0;
  char hint[160], text[200] = "";
  batch_fit_hint(spec, share, hint, sizeof hint);
  const dataset *ds = spec->ds;
  if (dataset_has_text(ds) && spec->opts.pool != BFEED_POOL_MEAN) {
    /* The tokens tensor's length is the other knob: the longest max_len
     * that fits at this batch, beside what the data holds. */
    batch_spec s = *spec;
    uint32_t longest = batch_text_longest(&spec->opts, ds);
    uint32_t len = largest_fitting(&s, &s.opts.max_len, 1, longest > 1 ? longest - 1 : 1, share);
    int n = len ? snprintf(text, sizeof text, "%smax_len %u at batch %u", hint[0] ? "; or " : "", len,
                           spec->opts.batch) : 0;
    if (n >= 0 && (size_t)n < sizeof text)
      snprintf(text + n, sizeof text - (size_t)n, " (%s's longest sample: %u tokens)", ds->name, ds->text.longest);
  }
  return snprintf(err, errlen, "a batch of %u could take %llu bytes, over %s: %s%s", spec->opts.batch,
                  (unsigned long long)need, whose, hint[0] || text[0] ? hint : "lower the batch", text),
         BFEED_ELIMIT;
}

const char *const batch_stage_names[BATCH_STAGES] = {"read", "decode", "resize", "augment", "batch"};

/* The tensors of the batch into raw, where raw data offset `skip` lands:
 * 0 for everything, or the image tensor's size to leave it out (codec u8
 * sends its pixels instead). 0, or an error reading feature rows (err set). */
static int fill(const batch_spec *s, batch_worker *w, const batch_layout *L, uint32_t B, uint8_t *raw, size_t skip,
                char *err, size_t errlen) {
#define AT(t) (raw + ((t)->offset - skip))
  /* Zero the padding between tensors so a batch is byte-identical wherever
   * it is made; the tensors themselves are fully written below. */
  for (uint32_t t = 1; t < L->m.ntensors; t++) {
    uint64_t end = L->m.t[t - 1].offset + L->m.t[t - 1].nbytes;
    memset(raw + (end - skip), 0, L->m.t[t].offset - end);
  }
  const uint32_t *sel = w->sel;
  int nhwc = s->opts.layout == BFEED_LAYOUT_NHWC;
  if (L->image && !skip && (s->aug.erase_on || aug_mix_active(&s->aug.mix)))
    batch_aug_image_timed(&s->aug, &w->aug, w->rgb, B, (int)s->opts.size, (int)batch_width(&s->opts), nhwc, s->lut,
                    s->lutf, s->opts.seed, L->m.epoch, L->m.index, (uint16_t *)AT(L->image));
  else if (L->image && !skip) {
    size_t slot = batch_image_px(&s->opts);
    for (uint32_t i = 0; i < B; i++)
      tobf16_rect(w->rgb + slot * i, (int)s->opts.size, (int)batch_width(&s->opts), w->flip[i],
                  s->opts.layout == BFEED_LAYOUT_NHWC, s->lut, AT(L->image) + slot * 2 * i);
  }
  if (L->tokens) batch_text_put_tokens(s, sel, B, (uint32_t)L->tokens->shape[1], AT(L->tokens));
  if (L->pooled) batch_text_put_pooled(s, sel, B, w->f32, AT(L->pooled));
  if (L->length)
    for (uint32_t i = 0; i < B; i++) {
      uint32_t n = batch_sample_len(s, sel[i]);
      if (L->tokens && n > L->tokens->shape[1]) n = (uint32_t)L->tokens->shape[1];
      wire_put32(AT(L->length) + 4 * i, n);
    }
  if (L->features) {
    int rc = batch_text_put_features(s, sel, B, w->f32, AT(L->features), err, errlen);
    if (rc < 0) return rc;
  }
  if (L->label)
    for (uint32_t i = 0; i < B; i++) wire_put32(AT(L->label) + 4 * i, (uint32_t)s->ds->labels[sel[i]]);
  for (uint32_t i = 0; i < B; i++) wire_put64(AT(L->index) + 8 * i, (uint64_t)sel[i]);
  if (L->valid)
    for (uint32_t i = 0; i < B; i++) AT(L->valid)[i] = i < w->valid_n;
  if (L->target) batch_aug_target(&w->aug, s->ds->labels, sel, B, batch_classes(s), (float *)AT(L->target));
  if (L->explain)
    batch_aug_explain(&s->aug, &w->aug, sel, B, s->opts.mode == BFEED_MODE_EVAL, L->m.epoch, L->m.index,
                      AT(L->explain));
  return 0;
#undef AT
}

/* Codec u8's data (msg.h): head and table, the pixels as the resampler
 * left them, then the other tensors. */
static int fill_u8(const batch_spec *s, batch_worker *w, const batch_layout *L, uint32_t B, uint8_t *data, char *err,
                   size_t errlen) {
  codec_u8_head(data, s->opts.layout == BFEED_LAYOUT_NHWC, s->lut);
  size_t pixels = (size_t)L->image->nbytes / 2;
  memcpy(data + MSG_U8_HEAD, w->rgb, pixels);
  return fill(s, w, L, B, data + MSG_U8_HEAD + pixels, (size_t)L->image->nbytes, err, errlen);
}

/* A shared-memory stream's batch (PROTOCOL.md "Shared memory"): the raw
 * tensors straight into the job's ring slot (codec none: the stream
 * forced it), and a BATCH_SHM frame naming the slot into a small pooled
 * buffer. */
static void batch_build_shm(batch_job *job, batch_worker *w, batch_layout *L) {
  const batch_spec *s = job->spec;
  msg_batch *m = &L->m;
  if (m->raw_size > job->shm_slot_size || !codec_is_plain(m->codec)) {
    job->rc = BFEED_EINTERNAL;
    snprintf(job->err, sizeof job->err, "batch of %llu bytes does not fit its %llu-byte shared-memory slot",
             (unsigned long long)m->raw_size, (unsigned long long)job->shm_slot_size);
    return;
  }
  size_t cap = FRAME_HEADER_SIZE + msg_batch_shm_size(m);
  job->buf = bufcache_get(job->buffers, cap, &job->buf_cap);
  if (!job->buf) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory");
    return;
  }
  fwriter fw;
  fwriter_init(&fw, job->buf, cap);
  msg_batch_shm_encode(&fw.w, m, job->shm_index);
  if ((job->rc = fill(s, w, L, job->count, job->shm_slot, 0, job->err, sizeof job->err)) < 0) return;
  char why[96];
  if ((job->rc = fwriter_finish(&fw, FRAME_BATCH_SHM, s->stream_id, why, sizeof why)) < 0) {
    snprintf(job->err, sizeof job->err, "BATCH_SHM of %llu bytes: %s", (unsigned long long)m->raw_size, why);
    return;
  }
  job->frame = fw.w;
  job->raw_bytes = m->raw_size;
  job->head = *m;
}

void batch_build(batch_job *job, batch_worker *w) {
  const batch_spec *s = job->spec;
  const bfeed_stream_opts *o = &s->opts;
  uint64_t t0 = clock_now_ns();
  uint32_t B = job->count;
  batch_layout L;
  wbuf_init_fixed(&job->frame, NULL, 0);
  if (job->src) {
    batch_copy_build(job);
    goto done;
  }
  if (!job->order && !(job->order = epoch_cache_get(job->orders, job->epoch))) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory for the order of epoch %llu", (unsigned long long)job->epoch);
    goto done;
  }
  if (batch_load_samples(job, w, B) < 0) goto done;
  layout(s, B, dataset_has_text(s->ds) ? batch_text_len(s, w->sel, B) : 1, &L);
  msg_batch *m = &L.m;
  m->epoch = job->epoch;
  m->index = job->index;
  m->seq = job->seq;
  /* What the batch travels as (codec.h): the u8 form only with an image
   * tensor, and a compressor on an image batch compresses its u8 form
   * (PROTOCOL.md, bench/README.md). */
  m->codec = (uint8_t)batch_codec(o, L.image != NULL);
  const codec_info *codec = codec_get(m->codec);
  int zst = codec->comp != NULL, u8 = codec->u8;
  size_t scratch = dataset_has_text(s->ds) ? s->ds->vectors.dim : dataset_has_features(s->ds) ? s->ds->features.row_floats : 0;
  if (scratch && batch_load_grow(&w->f32, &w->f32_cap, scratch * sizeof *w->f32) < 0) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory");
    goto done;
  }

  /* The whole frame is sized up front and written through a fixed-capacity
   * writer into one pooled buffer. Uncompressed, the data is built in place
   * in the frame, which for codec none starts `pad` bytes into the buffer
   * so that the tensors land 64-byte aligned in memory, as the code filling
   * them may assume; compressed, the data is built in the worker's buffer
   * and compressed into the frame. */
  int none = codec_is_plain(m->codec);
  if (job->shm_slot) {
    batch_build_shm(job, w, &L);
    goto done;
  }
  size_t plain = codec_plain_size(m); /* the data before compression */
  size_t head = FRAME_HEADER_SIZE + msg_batch_head_size(m);
  size_t cap = head + codec_bound(m->codec, plain);
  job->buf = bufcache_get(job->buffers, cap + 63, &job->buf_cap);
  size_t pad = job->buf && none ? (64 - ((uintptr_t)(job->buf + head) & 63)) & 63 : 0;
  fwriter fw;
  fwriter_init(&fw, job->buf ? job->buf + pad : NULL, cap);
  msg_batch_encode_head(&fw.w, m);
  uint8_t *raw = !zst ? fwriter_append(&fw, plain) : batch_load_grow(&w->raw, &w->raw_cap, plain) == 0 ? w->raw : NULL;
  if (!job->buf || !raw) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory building a %llu-byte batch",
             (unsigned long long)m->raw_size);
    goto done;
  }
  job->rc = u8 ? fill_u8(s, w, &L, B, raw, job->err, sizeof job->err)
               : fill(s, w, &L, B, raw, 0, job->err, sizeof job->err);
  if (job->rc < 0) goto done;
  if (zst && !fw.w.failed) { /* failed: the head overran its size, fwriter_finish says so */
    size_t room, n;
    uint8_t *dst = fwriter_room(&fw, &room);
    job->rc = codec_compress(&w->codecs, m->codec, o->codec_level, raw, plain, dst, room, &n, job->err, sizeof job->err);
    if (job->rc < 0) goto done;
    fwriter_commit(&fw, n);
  }
  char why[96];
  if ((job->rc = fwriter_finish(&fw, FRAME_BATCH, s->stream_id, why, sizeof why)) < 0) {
    snprintf(job->err, sizeof job->err, "batch of %llu bytes: %s", (unsigned long long)m->raw_size, why);
    goto done;
  }
  job->frame = fw.w;
  job->raw_bytes = m->raw_size;
  job->head = *m;
  job->data_off = head;
done:
  job->busy_ns = clock_now_ns() - t0;
  job->stage_ns[BATCH_STAGE_AUGMENT] += w->aug.ns;
  w->aug.ns = 0;
  uint64_t staged = 0;
  for (int k = 0; k < BATCH_STAGE_BATCH; k++) staged += job->stage_ns[k];
  job->stage_ns[BATCH_STAGE_BATCH] = job->busy_ns > staged ? job->busy_ns - staged : 0;
}

void batch_worker_free(batch_worker *w) {
  int64_t aug;
  batch_aug_free(&w->aug, &aug);
  batch_load_count(w->file_cap + w->rgb_cap + w->raw_cap + w->sel_cap + w->flip_cap + w->f32_cap + (size_t)aug, 0);
  sample_scratch_free(&w->scratch);
  free(w->file);
  free(w->rgb);
  free(w->raw);
  free(w->sel);
  free(w->flip);
  free(w->f32);
  codec_state_free(&w->codecs);
  memset(w, 0, sizeof *w);
}

void batch_job_free(batch_job *job) {
  if (!job) return;
  if (job->unref) job->unref(job->unref_arg);
  bufcache_put(job->buffers, job->buf, job->buf_cap);
  epoch_order_unref(job->order);
  free(job);
}
