/* server.c -- see server.h */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_impl.h"
#include "listen.h"
#include "stream.h"

/* A stream's job, or a shared batch's build (share.c): each says where it goes back. */
static void on_job_done(batch_job *job, void *arg) {
  (void)arg;
  job->done(job);
}

static uint64_t server_share_held(void *arg) { return share_held(arg); }
static int server_share_trim(void *arg) { return share_trim(arg); }

/* A cold slot of a ring streams share is warmed only if its bytes fit max_memory. */
static int server_share_fits(void *fl, uint64_t bytes) { return flow_admits(fl, bytes); }

int server_init(server *s, uv_loop_t *loop, const logger *log, int nworkers, dataset **datasets,
                size_t ndatasets, const server_limits *limits, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->started_ns = uv_hrtime();
  s->loop = loop;
  s->log = log;
  s->datasets = datasets;
  s->ndatasets = ndatasets;
  s->limits = *limits;
  /* Enough for every stream's window to cycle without allocating. */
  if (!(s->buffers = bufcache_new(32)) || !(s->flow = flow_new(&s->limits.max_memory, s->buffers)) ||
      !(s->jobs = jobs_new(&s->limits.idle_timeout_ms, log)))
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  int rc = workers_start(&s->workers, nworkers, loop, on_job_done, s, err, errlen);
  if (rc < 0) return rc;
  if (!(s->share = share_new(s->workers, &s->limits.share_horizon)))
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  flow_set_cache(s->flow, &(flow_cache){.held = server_share_held, .trim = server_share_trim, .arg = s->share});
  share_set_fits(s->share, server_share_fits, s->flow);
  return 0;
}

dataset *server_find_dataset(server *s, const char *name) {
  for (size_t i = 0; i < s->ndatasets; i++)
    if (strcmp(s->datasets[i]->name, name) == 0) return s->datasets[i];
  return NULL;
}

void server_shutdown(server *s) {
  if (s->stopping) return;
  s->stopping = 1;
  listen_close_all(s);
  /* A last word to each client; the connection closes once it is out. */
  for (conn *c = s->conns; c; c = c->next) conn_fail(c, BFEED_ESHUTDOWN, "bfeedd is shutting down");
  share_stop(s->share);
  if (s->workers) s->workers_stuck = workers_stop(s->workers, s->limits.shutdown_timeout_ms, s->log);
  s->workers = NULL;
}

void server_force_close(server *s) {
  for (conn *c = s->conns; c; c = c->next) conn_force_close(c);
}

void server_tick(server *s) {
  if (s->buffers) bufcache_trim(s->buffers, 0);
}

int server_stream_count(const server *s) {
  int n = 0;
  for (const conn *c = s->conns; c; c = c->next) n += c->nstreams;
  return n;
}

void server_set_datasets(server *s, dataset **ds, size_t n) {
  for (size_t i = 0; i < s->ndatasets; i++) dataset_unref(s->datasets[i]);
  free(s->datasets);
  s->datasets = ds;
  s->ndatasets = n;
}

void server_free(server *s) {
  if (!s->workers_stuck) share_free(s->share); /* a stuck worker may still be building one */
  s->share = NULL;
  server_set_datasets(s, NULL, 0);
  flow_free(s->flow);
  s->flow = NULL;
  bufcache_unref(s->buffers);
  s->buffers = NULL;
  stats_free(s);
  jobs_free(s->jobs);
  s->jobs = NULL;
}
