/* epoch.c -- see epoch.h */
#include "epoch.h"

#include <stdio.h>
#include <stdlib.h>

#include "batch.h"
#include "batch_text.h"
#include "rng.h"

uint64_t epoch_shard_size(const bfeed_stream_opts *o, uint64_t nsamples) {
  uint64_t left = nsamples > o->start_sample ? nsamples - o->start_sample : 0;
  if (o->eval_pad != BFEED_EVAL_PAD_MASK) return left / o->shard_count;
  uint64_t longest = (left + o->shard_count - 1) / o->shard_count;
  return (longest + o->batch - 1) / o->batch * o->batch;
}

/* Shard positions that are samples: with eval_pad mask, the longest shards'
 * length or one less; the rest of epoch_shard_size is padding. */
static uint64_t epoch_shard_real(const bfeed_stream_opts *o, uint64_t nsamples) {
  if (o->eval_pad != BFEED_EVAL_PAD_MASK) return epoch_shard_size(o, nsamples);
  uint64_t left = nsamples - o->start_sample;
  return left > o->shard_index ? (left - o->shard_index + o->shard_count - 1) / o->shard_count : 0;
}

int epoch_check(const bfeed_stream_opts *o, const char *name, uint64_t nsamples, int text, char *err,
                size_t errlen) {
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), BFEED_EINVAL
  if (o->start_sample && o->start_sample >= nsamples)
    BAD("start_sample %llu is not below the %llu samples of dataset %s (an epoch read to its end is resumed as "
        "the next epoch from sample 0)", (unsigned long long)o->start_sample, (unsigned long long)nsamples, name);
  if (o->start_sample && o->epochs != 1)
    BAD("start_sample resumes the rest of one epoch: open it with epochs 1, and the next epochs as a stream of "
        "their own (their length differs)");
  if (o->eval_pad == BFEED_EVAL_PAD_MASK && o->mode != BFEED_MODE_EVAL)
    BAD("eval_pad mask pads eval shards: it needs mode eval");
  if (o->eval_pad == BFEED_EVAL_PAD_MASK && text && o->bucket)
    BAD("eval_pad mask and bucket do not go together: length bucketing would move the padding into the epoch");
  return 0;
#undef BAD
}

epoch_order *epoch_order_make(const batch_spec *s, int shuffle, uint64_t epoch) {
  const bfeed_stream_opts *o = &s->opts;
  uint64_t nsamples = s->ds->nsamples;
  uint64_t n = epoch_shard_size(o, nsamples);
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
  /* The order from start_sample on, dealt to the shards in turn. The
   * padding of eval_pad mask wraps round to the order's first samples, as
   * DistributedSampler's does. */
  for (uint64_t p = 0; p < n; p++) {
    uint64_t q = o->start_sample + p * o->shard_count + o->shard_index;
    e->idx[p] = all[q < nsamples ? q : q % nsamples];
  }
  free(all);
  e->real = (uint32_t)epoch_shard_real(o, nsamples);
  e->refs = 1;
  e->epoch = epoch;
  e->n = (uint32_t)n;
  if (o->bucket && dataset_has_text(s->ds) && batch_text_bucket(s, e->idx, e->n, shuffle, epoch) < 0) {
    free(e);
    return NULL;
  }
  return e;
}

epoch_order *epoch_order_ref(epoch_order *e) {
  __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
  return e;
}

void epoch_order_unref(epoch_order *e) {
  if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) free(e);
}

void epoch_cache_init(epoch_cache *c, const batch_spec *s, int shuffle) {
  pthread_mutex_init(&c->mu, NULL);
  c->spec = s;
  c->shuffle = shuffle;
  c->orders[0] = c->orders[1] = NULL;
}

epoch_order *epoch_cache_get(epoch_cache *c, uint64_t epoch) {
  pthread_mutex_lock(&c->mu);
  epoch_order *e = NULL;
  for (int i = 0; i < 2 && !e; i++)
    if (c->orders[i] && c->orders[i]->epoch == epoch) e = c->orders[i];
  if (!e && (e = epoch_order_make(c->spec, c->shuffle, epoch)) != NULL) {
    /* The cache keeps this reference; an empty slot or the older epoch's goes. */
    int slot = !c->orders[0] ? 0 : !c->orders[1] ? 1 : c->orders[0]->epoch < c->orders[1]->epoch ? 0 : 1;
    epoch_order_unref(c->orders[slot]);
    c->orders[slot] = e;
  }
  if (e) epoch_order_ref(e);
  pthread_mutex_unlock(&c->mu);
  return e;
}

void epoch_cache_free(epoch_cache *c) {
  epoch_order_unref(c->orders[0]);
  epoch_order_unref(c->orders[1]);
  pthread_mutex_destroy(&c->mu);
}
