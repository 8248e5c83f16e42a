/*
 * load_client.c -- a well-behaved client under load: rounds of one stream
 * each (a random config, epoch and start batch, to the end of that epoch,
 * or closed early), every batch checked against the reference hash of its
 * (config, epoch, index). A failure across a daemon restart is expected:
 * the client reconnects and resumes at the next batch it has not had, as
 * --epoch E --start-batch K allow; any other failure is an error.
 */
#include <stdio.h>
#include <string.h>

#include "load.h"
#include "splitmix.h"

typedef struct round {
  int config, epoch, next; /* next: the batch index expected next */
  int stop_at;             /* close the stream early there (LOAD_BATCHES: read to the end) */
} round;

/* 1 when a failure now is explained by a restart since gen was read. */
static int load_client_restarted(load *l, int gen) {
  int now = atomic_load(&l->generation);
  return now != gen || (now & 1);
}

/* Wait until the daemon is up (an even generation); returns it. */
static int load_client_wait_up(load *l) {
  int gen;
  while (((gen = atomic_load(&l->generation)) & 1) && load_now() < l->deadline) itest_sleep_ms(20);
  return gen;
}

/* Read the round's stream from r->next on. 0 when the round is done (or
 * the test is over), -1 on a failure (*client is closed then). */
static int load_client_stream(load_actor *a, bfeed_client **client, round *r, int gen) {
  load *l = a->l;
  char who[32], what[512];
  snprintf(who, sizeof who, "client %d", a->id);
  bfeed_stream_opts o;
  load_config_opts(r->config, &o);
  o.epoch = (uint64_t)r->epoch;
  o.batch_index = (uint64_t)r->next;
  o.epochs = 1;
  bfeed_stream *s;
  bfeed_error err;
  int rc = bfeed_stream_open(*client, "load", &o, &s, &err);
  atomic_fetch_add(&l->opens, 1);
  while (rc == 0 && r->next < r->stop_at && load_now() < l->deadline) {
    bfeed_batch *b;
    if ((rc = bfeed_stream_next(s, &b, &err)) < 0) break;
    uint64_t h = 0;
    int ok = load_hash(b, &h) == 0 && bfeed_batch_epoch(b) == (uint64_t)r->epoch &&
             bfeed_batch_index(b) == (uint64_t)r->next &&
             h == l->ref[r->config][r->epoch][r->next];
    if (!ok) {
      snprintf(what, sizeof what, "config %d: got epoch %llu batch %llu, expected epoch %d batch %d%s",
               r->config, (unsigned long long)bfeed_batch_epoch(b), (unsigned long long)bfeed_batch_index(b),
               r->epoch, r->next, " (or its bytes differ from the reference)");
      atomic_fetch_add(&l->mismatches, 1);
      load_error(l, who, what);
    }
    bfeed_batch_release(b);
    atomic_fetch_add(&l->batches, 1);
    r->next++;
  }
  if (rc == 0 && r->next == LOAD_BATCHES) { /* the epoch is over: the stream must say so */
    bfeed_batch *b;
    rc = bfeed_stream_next(s, &b, &err);
    if (rc == 0) {
      bfeed_batch_release(b);
      load_error(l, who, "a batch after the last one of the requested epoch");
      atomic_fetch_add(&l->mismatches, 1);
    }
    rc = rc == BFEED_EEOF ? 0 : rc;
  }
  if (rc == 0) {
    bfeed_stream_close(s);
    return 0;
  }
  if (load_client_restarted(l, gen)) {
    atomic_fetch_add(&l->reconnects, 1);
  } else {
    snprintf(what, sizeof what, "config %d epoch %d batch %d: %s", r->config, r->epoch, r->next, err.message);
    atomic_fetch_add(&l->errors, 1);
    load_error(l, who, what);
    r->next = r->stop_at; /* give the round up */
  }
  bfeed_close(*client); /* closes the failed stream with it */
  *client = NULL;
  return -1;
}

void *load_client_main(void *arg) {
  load_actor *a = arg;
  load *l = a->l;
  uint64_t st = 0x6c6f6164ull * 2654435761u + (uint64_t)a->id;
  bfeed_client *client = NULL;
  int conn_gen = 0; /* the generation the connection was made in */
  round r = {0, 0, LOAD_BATCHES, LOAD_BATCHES};
  char who[32], addr[160];
  snprintf(who, sizeof who, "client %d", a->id);
  while (load_now() < l->deadline) {
    int gen = load_client_wait_up(l);
    if (r.next >= r.stop_at) { /* a new round */
      uint64_t x = splitmix64_next(&st);
      r.config = (int)(x % LOAD_CONFIGS);
      r.epoch = (int)(x / LOAD_CONFIGS % LOAD_EPOCHS);
      r.next = (int)(x / 16 % LOAD_BATCHES);
      r.stop_at = x / 256 % 4 == 0 ? r.next + 1 + (int)(x / 1024 % 2) : LOAD_BATCHES;
      if (r.stop_at > LOAD_BATCHES) r.stop_at = LOAD_BATCHES;
      if (client && x / 4096 % 3 == 0) { /* now and then a fresh connection */
        bfeed_close(client);
        client = NULL;
      }
    }
    if (!client) {
      bfeed_error err;
      load_addr(l, a->id % 2, addr, sizeof addr);
      if (bfeed_connect(addr, &client, &err) < 0) {
        client = NULL;
        if (load_client_restarted(l, gen)) continue;
        atomic_fetch_add(&l->errors, 1);
        load_error(l, who, err.message);
        itest_sleep_ms(100);
        continue;
      }
      conn_gen = gen;
    }
    /* A connection made before a restart fails after it: expected. */
    if (load_client_stream(a, &client, &r, conn_gen) == 0) r.next = r.stop_at;
  }
  if (client) bfeed_close(client);
  return NULL;
}
