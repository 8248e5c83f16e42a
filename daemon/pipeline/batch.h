/*
 * batch.h -- building one batch: the pure function at the heart of bfeed.
 * Called by workers.c (batch_build on a worker thread) and stream.c (specs, jobs).
 *
 * A batch is fully determined by its spec (dataset, stream options), its
 * epoch order and its index. batch_build() runs on a worker thread: it
 * chooses the batch's samples (reading, decoding and transforming images),
 * lays out the tensors the dataset's kind serves, fills them -- images
 * normalised and cast to bf16 through a lookup table, word vectors copied
 * from the bf16 table (or averaged), features cast from float32 --
 * compresses, and leaves a complete BATCH frame in job->frame for the event
 * loop to write.
 *
 * A sample whose image file cannot be read or decoded is replaced by the
 * next valid sample in the epoch's order (wrapping), so batches keep their
 * fixed size and stay reproducible; each replacement is counted in
 * job->skipped.
 */
#ifndef BFEED_BATCH_H
#define BFEED_BATCH_H

#include <pthread.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "bufcache.h"
#include "codec.h"
#include "dataset.h"
#include "epoch.h"
#include "log.h"
#include "msg.h"
#include "sample.h"
#include "aug_program.h"
#include "batch_aug.h"
#include "tlv.h"


/* What every batch of a stream shares; immutable while jobs run. */
typedef struct batch_spec {
  dataset *ds;
  bfeed_stream_opts opts;
  sample_params sample;
  uint16_t lut[3][256]; /* bf16 of (v/255 - mean[c]) / std[c], float32 math as torchvision */
  float lutf[3][256];   /* the same before the cast (erasing and mixing work on it) */
  aug_program aug;      /* the recipe past the crop (aug_program.h) */
  uint32_t len_cap;     /* text: tokens served per sample, the stream's cap or the dataset's
                           (batch_text_cap); 0 = all */
  uint32_t stream_id;
  const logger *log;
  bufcache *buffers;
} batch_spec;

void batch_spec_init(batch_spec *s, dataset *ds, const bfeed_stream_opts *o, uint32_t stream_id,
                     const logger *log, bufcache *buffers);
/* Whether o suits ds (after msg_opts_check): the text options as
 * batch_text_check says, and the largest batch the stream can produce
 * within the frame limit. 0, or BFEED_EINVAL with the reason. */
int batch_spec_check(const dataset *ds, const bfeed_stream_opts *o, char *err, size_t errlen);
/* Whether the largest batch of s (batch_frame_estimate) fits `share`, the
 * bytes of max_memory a stream opening now may hold (whose: how it was
 * worked out, for the message). 0, or BFEED_ELIMIT saying what would fit:
 * the largest batch at these options, for images the largest size at this
 * batch, for text the longest max_len at this batch, with the length of
 * the dataset's longest sample. */
int batch_spec_check_memory(const batch_spec *s, uint64_t share, const char *whose, char *err, size_t errlen);
/* Bytes of the pooled buffer the largest batch of s takes: what a stream
 * counts against max_memory for a batch before it has made one. */
uint64_t batch_frame_estimate(const batch_spec *s);
/* Raw tensor bytes of the largest batch of s: a shared-memory slot's size. */
uint64_t batch_raw_estimate(const batch_spec *s);
/* An image's output width: width, or size for a square. */
static inline uint32_t batch_width(const bfeed_stream_opts *o) { return o->width ? o->width : o->size; }
/* One image's pixels, H x W x 3. */
static inline size_t batch_image_px(const bfeed_stream_opts *o) { return (size_t)o->size * batch_width(o) * 3; }
/* Tokens served for sample i (text kinds): its length, capped. */
static inline uint32_t batch_sample_len(const batch_spec *s, uint32_t i) {
  uint32_t n = textset_len(&s->ds->text, i);
  return s->len_cap && n > s->len_cap ? s->len_cap : n;
}

/* Where a build's time went (batch_job.stage_ns; the verdict of bfeed
 * stats names the largest). */
enum { BATCH_STAGE_READ, BATCH_STAGE_DECODE, BATCH_STAGE_RESIZE, BATCH_STAGE_AUGMENT, BATCH_STAGE_BATCH, BATCH_STAGES };
/* "read", "decode", "resize", "augment", "batch" */
extern const char *const batch_stage_names[BATCH_STAGES];

typedef struct batch_job {
  /* input */
  const batch_spec *spec;
  epoch_cache *orders;   /* where the worker gets the order (not on the event loop) */
  epoch_order *order;    /* then a reference owned by the job */
  uint64_t epoch, index, seq;
  uint32_t first, count; /* positions [first, first+count) of the order */
  uint8_t *shm_slot;     /* NULL, or the ring slot the raw tensors go to: job->frame is then a BATCH_SHM */
  uint64_t shm_slot_size;
  uint32_t shm_index;    /* the slot's number in its ring */
  /* A copy (serve/share.c): src, a finished job of the daemon's, built once
   * for every stream that wants batch (epoch, index) at these bytes. This
   * job makes only its own frame of it (batch_copy.h), and src lives while
   * this job does (unref). */
  const struct batch_job *src;
  int shared;            /* 1 if src was asked for by another stream first (stream.c counts it) */
  /* output */
  wbuf frame;            /* the complete BATCH frame, inside buf (fixed: buf owns it); a socket
                            copy's frame is its header (and head), its data src's: tail */
  const uint8_t *tail;   /* NULL, or bytes sent right after frame, owned by src */
  size_t tail_len;
  msg_batch head;        /* what the frame's head says (a copy re-encodes it with its own seq) */
  size_t data_off;       /* where frame's data starts, after header and head */
  uint8_t *buf;          /* the pooled buffer holding it */
  size_t buf_cap;
  int rc;                /* 0, or BFEED_E* with err */
  char err[256];
  uint32_t skipped;
  uint64_t raw_bytes, busy_ns;
  /* busy_ns by stage (BATCH_STAGE_*): reading files or records, decoding,
   * resizing, the recipe past the crop (pixel ops, erasing, mixing); the
   * rest (casting, normalizing, assembling, compressing) is
   * BATCH_STAGE_BATCH. A copy of a shared batch has only BATCH. */
  uint64_t stage_ns[BATCH_STAGES];
  uint64_t reading;       /* atomic: 1 + the dataset index being read, 0 before the first */
  bufcache *buffers;      /* where frame's buffer goes back; outlives streams */
  /* owned by whoever queues the job */
  void *owner;
  void (*done)(struct batch_job *job);  /* back on the loop thread (server.c calls it) */
  void (*unref)(void *arg);             /* batch_job_free calls it, if set (a copy lets go of src) */
  void *unref_arg;
  struct batch_job *next;
} batch_job;

/* Per-thread working memory, reused across batches. Zero-initialise. */
typedef struct batch_worker {
  sample_scratch scratch;
  uint8_t *file, *rgb, *raw; /* rgb: one image per sample of the batch */
  size_t file_cap, rgb_cap, raw_cap;
  uint32_t *sel;             /* the batch's dataset indices */
  uint32_t valid_n;          /* how many of them are samples, not padding (eval_pad mask) */
  size_t sel_cap;
  uint8_t *flip;             /* per image: still to be mirrored (codec none, zstd) */
  size_t flip_cap;
  float *f32;                /* pooling sums, unaligned feature rows */
  size_t f32_cap;
  codec_state codecs;        /* compressor contexts (zstd) */
  batch_aug_mem aug;         /* the recipe's draws and buffers (batch_aug.h) */
} batch_worker;
void batch_worker_free(batch_worker *w);
/* Bytes all workers' buffers above hold now (flow.c counts them against
 * max_memory; the decoders' own are decode_mem_held's). */
uint64_t batch_scratch_bytes(void);

void batch_build(batch_job *job, batch_worker *w);
void batch_job_free(batch_job *job);

#endif
