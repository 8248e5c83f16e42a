/* batch_load.c -- see batch_load.h */
#include "batch_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfeed_types.h"
#include "clock.h"
#include "rng.h"
#include "dataset.h"
#include "log.h"
#include "sample.h"
#include "skips.h"

/* Tries after the first for a sample whose read or decode fails for a
 * reason of the moment (EMFILE, ENOMEM, EIO), with pauses between. */
#define BATCH_RETRIES 3

static uint64_t batch_load_total; /* atomic: all workers' buffers */

uint64_t batch_scratch_bytes(void) { return __atomic_load_n(&batch_load_total, __ATOMIC_RELAXED); }

/* A worker buffer's capacity went from `was` to `now`. */
void batch_load_count(size_t was, size_t now) {
  if (now > was) __atomic_add_fetch(&batch_load_total, now - was, __ATOMIC_RELAXED);
  else if (was > now) __atomic_sub_fetch(&batch_load_total, was - now, __ATOMIC_RELAXED);
}

/* Batches past a job's own whose samples it announces (dataset_prefetch). */
#define BATCH_PREFETCH_AHEAD 2

int batch_load_grow(void *buf, size_t *cap, size_t need) {
  void **b = buf;
  if (need <= *cap) return 0;
  void *p = realloc(*b, need);
  if (!p) return BFEED_ENOMEM;
  *b = p;
  batch_load_count(*cap, need);
  *cap = need;
  return 0;
}

/* Read and decode sample idx into rgb. A failure of the moment (out of
 * descriptors or memory, an I/O error) is tried again after a pause; only
 * the file's own faults are returned as such (BFEED_EDATASET...). err
 * starts with the file's name. */
static int batch_load_one(batch_job *job, batch_worker *w, uint32_t idx, uint8_t *rgb, batch_aug_sample *aug, char *err,
                    size_t errlen, int *reason) {
  static const int pause_ms[BATCH_RETRIES] = {10, 100, 500};
  const batch_spec *s = job->spec;
  int rc = 0;
  for (int attempt = 0; attempt <= BATCH_RETRIES; attempt++) {
    size_t len;
    rng_t r;
    rng_init(&r, s->opts.seed, RNG_DOMAIN_SAMPLE, job->epoch, idx);
    /* What a worker stuck in a read is reading, for the shutdown's log. */
    __atomic_store_n(&job->reading, (uint64_t)idx + 1, __ATOMIC_RELAXED);
    char name[600];
    dataset_sample_name(s->ds, idx, name, sizeof name);
    size_t file_cap = w->file_cap;
    /* dataset_read's reasons name the sample, as sample_load's start with
     * the name it is given. */
    uint64_t t0 = clock_now_ns();
    rc = dataset_read(s->ds, idx, &w->file, &w->file_cap, &len, err, errlen);
    uint64_t t1 = clock_now_ns(), resized = w->scratch.resize_ns;
    job->stage_ns[BATCH_STAGE_READ] += t1 - t0;
    batch_load_count(file_cap, w->file_cap);
    *reason = rc < 0 ? SKIPS_UNREADABLE : SKIPS_CORRUPT;
    if (rc == 0) rc = sample_load(w->file, len, name, &s->sample, &r, rgb, &w->scratch, err, errlen);
    uint64_t resize = w->scratch.resize_ns - resized;
    job->stage_ns[BATCH_STAGE_RESIZE] += resize;
    job->stage_ns[BATCH_STAGE_DECODE] += clock_now_ns() - t1 - resize;
    if (rc == BFEED_ELIMIT) *reason = SKIPS_TOO_LARGE; /* max_pixels, max_decode_memory */
    if (rc == 0 && aug) { /* the recipe past the crop: the augment stage */
      uint64_t t2 = clock_now_ns();
      aug->crop = w->scratch.crop;
      aug->eval = w->scratch.eval;
      rc = aug_program_sample(&s->aug, &r, rgb, (int)s->opts.size, (int)batch_width(&s->opts), w->aug.tmp, &aug->aug,
                              err, errlen);
      w->aug.ns += clock_now_ns() - t2;
    }
    if (rc != BFEED_EIO && rc != BFEED_ENOMEM) return rc;
    if (attempt < BATCH_RETRIES) {
      log_write(s->log, LOG_DEBUG, "dataset %s: %s; trying again", s->ds->name, err);
      struct timespec ts = {0, pause_ms[attempt] * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  return rc;
}

/* Load the image of the sample at `pos` into rgb, or of the next valid one
 * after it. Returns the dataset index used, -1 when no sample of the
 * epoch decodes, or -2 (job->rc and err set) when an error of the moment
 * persisted (a substitute would make the batch depend on the weather) or
 * the dataset's files changed since it loaded. */
static int64_t batch_load_image(batch_job *job, batch_worker *w, uint32_t pos, uint8_t *rgb, batch_aug_sample *aug) {
  const batch_spec *s = job->spec;
  const epoch_order *ord = job->order;
  char why[400];
  for (uint32_t k = 0; k < ord->n; k++) {
    uint32_t idx = ord->idx[(pos + k) % ord->n];
    int reason;
    int rc = batch_load_one(job, w, idx, rgb, aug, why, sizeof why, &reason);
    if (rc == 0) return idx;
    if (rc == BFEED_EIO || rc == BFEED_ENOMEM) {
      job->rc = rc;
      snprintf(job->err, sizeof job->err, "dataset %s: %s (after %d tries; the batch is not served with a substitute)",
               s->ds->name, why, BATCH_RETRIES + 1);
      log_warn(s->log, "%s", job->err);
      return -2;
    }
    /* A file changed or gone since the dataset loaded is no bad sample:
     * the batch fails, as every later one does (dataset.h). */
    if ((job->rc = dataset_check(s->ds, job->err, sizeof job->err)) < 0) return -2;
    /* Counted by the position it holds in the epoch, not by each position
     * whose search for a replacement passes it: once per epoch. */
    job->skipped += k == 0;
    int first = dataset_mark_bad(s->ds, idx);
    if (first) { /* listed once, with its reason, for the user to fix (skips.h) */
      char name[SKIPS_NAME_MAX];
      dataset_sample_name(s->ds, idx, name, sizeof name);
      skips_add(s->ds->skips, s->ds->name, idx, reason, name, why);
    }
    log_write(s->log, first ? LOG_WARN : LOG_DEBUG, "dataset %s: skipping %s (replaced by the next sample in the epoch)",
              s->ds->name, why);
  }
  return -1;
}

/* The batch's dataset indices into w->sel, and for kinds with images their
 * pixels into w->rgb (one slot per sample): the samples are settled before
 * the layout, which for text depends on their lengths. */
int batch_load_samples(batch_job *job, batch_worker *w, uint32_t B) {
  const batch_spec *s = job->spec;
  size_t slot = batch_image_px(&s->opts);
  /* Files changed under the dataset: no batch, rather than one that mixes
   * old and new data. */
  if ((job->rc = dataset_check(s->ds, job->err, sizeof job->err)) < 0) return job->rc;
  if (batch_load_grow(&w->sel, &w->sel_cap, (size_t)B * sizeof *w->sel) < 0 ||
      (dataset_has_images(s->ds) && (batch_load_grow(&w->rgb, &w->rgb_cap, slot * B) < 0 || batch_load_grow(&w->flip, &w->flip_cap, B) < 0))) {
    job->rc = BFEED_ENOMEM;
    snprintf(job->err, sizeof job->err, "out of memory for a batch of %u samples", B);
    return job->rc;
  }
  int recipe = dataset_has_images(s->ds) && (aug_program_active(&s->aug) || s->opts.explain);
  if (recipe) {
    int64_t grew;
    int rc = batch_aug_reserve(&w->aug, B, (int)s->opts.size, (int)batch_width(&s->opts),
                               aug_mix_active(&s->aug.mix), &grew);
    batch_load_count(0, (size_t)grew);
    if (rc < 0) {
      snprintf(job->err, sizeof job->err, "out of memory for the recipe of a batch of %u samples", B);
      return job->rc = rc;
    }
  }
  /* Remote shards: every sample's bytes, this batch's and the next
   * ones', are asked for before the first is read, so the requests overlap
   * and the next batch's are under way while this one decodes (read-ahead
   * along the epoch's order; blocks already held or coming are not asked
   * again). */
  /* The shard's samples come before its padding (eval_pad mask). */
  uint32_t real = job->order->real;
  w->valid_n = job->first >= real ? 0 : real - job->first < B ? (uint32_t)(real - job->first) : B;
  uint64_t ahead = (uint64_t)B * (1 + BATCH_PREFETCH_AHEAD);
  for (uint64_t p = job->first; dataset_has_images(s->ds) && p < job->first + ahead && p < job->order->n; p++)
    dataset_prefetch(s->ds, job->order->idx[p]);
  for (uint32_t i = 0; i < B; i++) {
    if (!dataset_has_images(s->ds)) {
      w->sel[i] = job->order->idx[job->first + i];
      continue;
    }
    int64_t idx = batch_load_image(job, w, job->first + i, w->rgb + slot * i, recipe ? &w->aug.sample[i] : NULL);
    if (idx == -2) return job->rc;
    if (idx < 0) {
      job->rc = BFEED_EDATASET;
      snprintf(job->err, sizeof job->err, "dataset %s: no sample of epoch %llu could be decoded", s->ds->name,
               (unsigned long long)job->epoch);
      return job->rc;
    }
    w->sel[i] = (uint32_t)idx;
    w->flip[i] = (uint8_t)w->scratch.flip;
  }
  return 0;
}
