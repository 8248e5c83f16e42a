/*
 * test_epoch_cache.c -- a stream's epoch orders (daemon/pipeline/epoch.c),
 * made on worker threads: threads asking for the same epoch at once get
 * one order, equal to the shard's positions of the seeded permutation; the
 * two latest epochs are kept; an order a job still holds survives being
 * dropped from the cache.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"
#include "epoch.h"
#include "msg.h"
#include "rng.h"

enum { N = 100003, SHARDS = 3, SHARD = 2, THREADS = 4, ROUNDS = 50 };

typedef struct fixture {
  dataset ds;
  batch_spec spec;
  epoch_cache cache;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->ds.kind = DATASET_IMAGE;
  f->ds.nsamples = N;
  f->spec.ds = &f->ds;
  msg_opts_defaults(&f->spec.opts);
  f->spec.opts.seed = 5;
  f->spec.opts.shard_index = SHARD;
  f->spec.opts.shard_count = SHARDS;
  epoch_cache_init(&f->cache, &f->spec, 1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  epoch_cache_free(&f->cache);
  free(f);
  return 0;
}

/* PROTOCOL.md: shard i of n takes positions p*n + i of the epoch's order. */
static void check_order(const epoch_order *e, uint64_t epoch) {
  static uint32_t all[N];
  rng_permutation(all, N, 5, epoch);
  assert_int_equal(e->epoch, epoch);
  assert_int_equal(e->n, N / SHARDS);
  for (uint32_t p = 0; p < e->n; p++)
    if (e->idx[p] != all[(size_t)p * SHARDS + SHARD]) fail_msg("epoch %llu position %u", (unsigned long long)epoch, p);
}

typedef struct asker {
  fixture *f;
  epoch_order *got[ROUNDS];
} asker;

/* Like the jobs of two epochs in flight: each worker asks for 7, then 8. */
static void *asker_main(void *arg) {
  asker *a = arg;
  for (int r = 0; r < ROUNDS; r++) a->got[r] = epoch_cache_get(&a->f->cache, 7 + (uint64_t)(r >= ROUNDS / 2));
  return NULL;
}

static void test_threads_share_one_order(void **state) {
  fixture *f = *state;
  asker a[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    a[i].f = f;
    assert_int_equal(pthread_create(&t[i], NULL, asker_main, &a[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  check_order(a[0].got[0], 7);
  check_order(a[0].got[ROUNDS - 1], 8);
  for (int i = 0; i < THREADS; i++)
    for (int r = 0; r < ROUNDS; r++) {
      assert_ptr_equal(a[i].got[r], r < ROUNDS / 2 ? a[0].got[0] : a[0].got[ROUNDS - 1]);
      epoch_order_unref(a[i].got[r]);
    }
}

static void test_two_latest_kept(void **state) {
  fixture *f = *state;
  epoch_order *e0 = epoch_cache_get(&f->cache, 0), *e1 = epoch_cache_get(&f->cache, 1);
  epoch_order *again = epoch_cache_get(&f->cache, 0);
  assert_ptr_equal(again, e0);
  epoch_order_unref(again);
  /* Epoch 2 pushes out epoch 0, the older; a job's reference to it stays good. */
  epoch_order *e2 = epoch_cache_get(&f->cache, 2);
  again = epoch_cache_get(&f->cache, 1);
  assert_ptr_equal(again, e1);
  epoch_order_unref(again);
  check_order(e0, 0);
  epoch_order *remade = epoch_cache_get(&f->cache, 0);
  check_order(remade, 0);
  assert_memory_equal(remade->idx, e0->idx, (size_t)e0->n * sizeof e0->idx[0]);
  epoch_order *held[] = {remade, e0, e1, e2};
  for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) epoch_order_unref(held[i]);
}

/* Unshuffled, the shard's positions in dataset order. */
static void test_unshuffled(void **state) {
  fixture *f = *state;
  epoch_cache c;
  epoch_cache_init(&c, &f->spec, 0);
  epoch_order *e = epoch_cache_get(&c, 3);
  for (uint32_t p = 0; p < e->n; p++) assert_int_equal(e->idx[p], p * SHARDS + SHARD);
  epoch_order_unref(e);
  epoch_cache_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_threads_share_one_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_latest_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unshuffled, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
