/*
 * batch_text.h -- the parts of a batch from tables: word vectors, features, length buckets.
 * Called by batch.c (filling tensors) and epoch.c (bucketing an epoch's order).
 *
 * Pure functions of the spec and the chosen samples, like the rest of
 * batch_build().
 */
#ifndef BFEED_BATCH_TEXT_H
#define BFEED_BATCH_TEXT_H

#include <stdint.h>

#include "batch.h"

/* A sample's vectors served by default (no max_len from the stream or the
 * dataset): at most this many bytes of them in a tokens tensor. */
#define BATCH_TEXT_DEFAULT_BYTES (16u << 20)

/* The text options, all read here: tokens served per sample (the
 * stream's cap, else the dataset's setting, else the default cap below;
 * 0 = all); the default cap alone: BATCH_TEXT_DEFAULT_BYTES / (2 x dim)
 * tokens when the dataset's longest sample has more and the stream serves
 * tokens (not pooled), else 0; T of the largest
 * batch a stream can make; whether o suits ds (text options only on text
 * kinds, a fixed length only with a cap: 0 or BFEED_EINVAL with the
 * reason); and what to add to "a batch does not fit" for text. */
uint32_t batch_text_cap(const bfeed_stream_opts *o, const dataset *ds);
uint32_t batch_text_default_cap(const bfeed_stream_opts *o, const dataset *ds);
uint32_t batch_text_longest(const bfeed_stream_opts *o, const dataset *ds);
int batch_text_check(const dataset *ds, const bfeed_stream_opts *o, char *err, size_t errlen);
const char *batch_text_fit_hint(const dataset *ds, const bfeed_stream_opts *o);
/* T of a tokens tensor for samples sel[0..B): the cap with a fixed length,
 * else the longest sample's served length; at least 1, so the tensor is
 * never empty. */
uint32_t batch_text_len(const batch_spec *s, const uint32_t *sel, uint32_t B);
/* tokens bf16 [B, T, D]: each sample's first rows, then zeros. */
void batch_text_put_tokens(const batch_spec *s, const uint32_t *sel, uint32_t B, uint32_t T, uint8_t *dst);
/* pooled bf16 [B, D]: per sample the float32 mean of its served token
 * vectors, summed in token order, divided by their count, rounded to bf16
 * (zeros for an empty sample). acc holds D floats. */
void batch_text_put_pooled(const batch_spec *s, const uint32_t *sel, uint32_t B, float *acc, uint8_t *dst);
/* features bf16 [B, ...]: each sample's float32 row, read into tmp (one
 * row), cast to bf16. 0, or npy_source_read_row's error; a row the file
 * no longer holds because it changed is dataset_check's error (and the
 * dataset is marked changed). */
int batch_text_put_features(const batch_spec *s, const uint32_t *sel, uint32_t B, float *tmp, uint8_t *dst, char *err,
                            size_t errlen);
/* Reorder idx[0..n) (an epoch's shard order) for length bucketing: the
 * whole batches' positions are cut into runs of opts.bucket batches, each
 * run sorted by served length (ties by position) and, with shuffle, its
 * batches permuted by Philox(seed, RNG_DOMAIN_BUCKET, epoch, run).
 * The last n mod B positions (the short batch) are left alone. BFEED_ENOMEM when out
 * of memory. */
int batch_text_bucket(const batch_spec *s, uint32_t *idx, uint32_t n, int shuffle, uint64_t epoch);

#endif
