/* epoch.c -- see epoch.h */
#include "epoch.h"

#include <stdlib.h>

#include "batch.h"
#include "batch_text.h"
#include "rng.h"

uint64_t epoch_shard_size(uint64_t nsamples, uint32_t shard_count) {
  return nsamples / shard_count;
}

epoch_order *epoch_order_make(const batch_spec *s, int shuffle, uint64_t epoch) {
  const bfeed_stream_opts *o = &s->opts;
  uint64_t nsamples = s->ds->nsamples;
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
