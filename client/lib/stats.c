/*
 * stats.c -- the daemon-wide report: request it, wait for the reader thread
 * to bring it, decode it into the public groups of named counters.
 */
#include <stdlib.h>

#include "client.h"
#include "report.h"

/* Groups and their counters in one allocation: the group array, then the
 * counters, then the decoded report they point into. */
typedef struct stats_block {
  report_group *groups;
  size_t n;
} stats_block;

/* The report's payload, asked for on the connection that is up (again on
 * the next one if it is replaced meanwhile). c->mu held. */
static int stats_fetch(bfeed_client *c, uint8_t **p, size_t *len, bfeed_error *err) {
  for (;;) {
    while (!c->ready && !c->dead && !c->closing) pthread_cond_wait(&c->cv, &c->mu);
    if (c->closing) return common_err(err, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
    if (c->dead) return common_err(err, c->dead_code, "%s", c->dead_msg);
    uint64_t gen = c->gen;
    c->report_ready = 0;
    pthread_mutex_unlock(&c->mu);
    int rc = conn_send(c, gen, FRAME_STATS_REQ, 0, NULL, NULL, err);
    pthread_mutex_lock(&c->mu);
    if (rc < 0 && !c->reconnect) return rc;
    while (!c->report_ready && c->gen == gen && !c->dead && !c->closing) pthread_cond_wait(&c->cv, &c->mu);
    if (c->report_ready && c->gen == gen) {
      *p = c->report;
      *len = c->report_len;
      c->report = NULL;
      c->report_ready = 0;
      return 0;
    }
  }
}

BFEED_API int bfeed_daemon_stats(bfeed_client *c, bfeed_stat_group **out, size_t *nout, bfeed_error *err) {
  *out = NULL;
  *nout = 0;
  if (c->pool)
    return common_err(err, BFEED_EINVAL,
                      "%.200s names several daemons: ask each (bfeed_client_endpoint, then bfeed_connect)", c->addr);
  uint8_t *p = NULL;
  size_t len = 0;
  int rc = conn_lock_enter(c, err);
  if (rc < 0) return rc;
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&c->stats_mu); /* one request at a time */
  pthread_mutex_lock(&c->mu);
  rc = stats_fetch(c, &p, &len, err);
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&c->stats_mu);
  pthread_mutex_lock(&c->mu);
  conn_leave(c); /* the last touch: bfeed_close may free c from here on */
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) return rc;
  report_group *g;
  size_t n;
  const char *why;
  rc = report_decode(p, len, &g, &n, &why);
  free(p);
  if (rc < 0) return common_err(err, rc, "statistics from the daemon: %s", why);
  /* The public view: groups first, then all counters, in one block so one
   * free releases it; names point into the decoded groups kept after it. */
  size_t ncounters = 0;
  for (size_t i = 0; i < n; i++) ncounters += g[i].ncounters;
  bfeed_stat_group *v = malloc(n * sizeof *v + ncounters * sizeof(bfeed_counter) + sizeof(stats_block));
  if (!v) {
    free(g);
    return common_err(err, BFEED_ENOMEM, "out of memory");
  }
  bfeed_counter *ctr = (bfeed_counter *)(v + n);
  stats_block *blk = (stats_block *)(ctr + ncounters);
  blk->groups = g;
  blk->n = n;
  for (size_t i = 0; i < n; i++) {
    v[i].kind = g[i].kind;
    v[i].id = g[i].id;
    v[i].ncounters = g[i].ncounters;
    v[i].counters = ctr;
    for (size_t k = 0; k < g[i].ncounters; k++, ctr++) {
      ctr->name = g[i].counters[k].name;
      ctr->value = g[i].counters[k].value;
    }
  }
  *out = v;
  *nout = n;
  return 0;
}

BFEED_API void bfeed_daemon_stats_free(bfeed_stat_group *groups, size_t ngroups) {
  if (!groups) return;
  size_t ncounters = 0;
  for (size_t i = 0; i < ngroups; i++) ncounters += groups[i].ncounters;
  stats_block *blk = (stats_block *)((bfeed_counter *)(groups + ngroups) + ncounters);
  free(blk->groups);
  free(groups);
}
