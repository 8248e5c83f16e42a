/*
 * batch_load.h -- a batch's samples: their dataset indices, and for image
 * kinds their pixels (read, decoded, cropped, flipped, through the
 * recipe's pixel ops), a sample that cannot be decoded replaced by the
 * next of the epoch's order; and the workers' buffers, counted.
 * Called by batch.c (batch_build, batch_worker_free).
 */
#ifndef BFEED_BATCH_LOAD_H
#define BFEED_BATCH_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"

/* Positions [job->first, job->first + B) of the epoch's order into w->sel,
 * their pixels into w->rgb (one slot each), their flips into w->flip and
 * their draws into w->aug. 0, or job->rc (< 0) with job->err set: out of
 * memory, an error of the moment that persisted, no sample that decodes,
 * or the dataset's files changed. */
int batch_load_samples(batch_job *job, batch_worker *w, uint32_t B);

/* Grow a worker buffer *buf of *cap bytes to need (never shrinks), counted
 * in batch_scratch_bytes. 0 or BFEED_ENOMEM. */
int batch_load_grow(void *buf, size_t *cap, size_t need);
/* A worker buffer's capacity went from `was` to `now`. */
void batch_load_count(size_t was, size_t now);

#endif
