/*
 * api_daemon.c -- bfeed_daemon_stats: the daemon-wide report, asked of the
 * client's implementation (single/ requests it and waits for its reader
 * thread to bring it; a fan-out client refuses: ask each member), decoded
 * here into the public groups of named counters.
 */
#include <stdlib.h>

#include "api.h"
#include "report.h"

/* Groups and their counters in one allocation: the group array, then the
 * counters, then the decoded report they point into. */
typedef struct api_daemon_block {
  report_group *groups;
  size_t n;
} api_daemon_block;

/* The report's groups and counters in the public view. */
static int api_daemon_stats(bfeed_client *c, bfeed_stat_group **out, size_t *nout, char *err, size_t errlen) {
  uint8_t *p = NULL;
  size_t len = 0;
  int rc = api_client_enter(c, err, errlen);
  if (rc < 0) return rc;
  rc = c->ops->report(c, &p, &len, err, errlen);
  api_client_leave(c); /* the last touch: bfeed_close may free c from here on */
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) return rc;
  report_group *g;
  size_t n;
  char why[MSG_ERROR_MAX];
  rc = report_decode(p, len, &g, &n, why, sizeof why);
  free(p);
  if (rc < 0) return api_err(err, errlen, rc, "statistics from the daemon: %s", why);
  /* The public view: groups first, then all counters, in one block so one
   * free releases it; names point into the decoded groups kept after it. */
  size_t ncounters = 0;
  for (size_t i = 0; i < n; i++) ncounters += g[i].ncounters;
  bfeed_stat_group *v = malloc(n * sizeof *v + ncounters * sizeof(bfeed_counter) + sizeof(api_daemon_block));
  if (!v) {
    free(g);
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  }
  bfeed_counter *ctr = (bfeed_counter *)(v + n);
  api_daemon_block *blk = (api_daemon_block *)(ctr + ncounters);
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

BFEED_API int bfeed_daemon_stats(bfeed_client *c, bfeed_stat_group **out, size_t *nout, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  *out = NULL;
  *nout = 0;
  return api_err_public(err, api_daemon_stats(c, out, nout, e, sizeof e), "%s", e);
}

BFEED_API void bfeed_daemon_stats_free(bfeed_stat_group *groups, size_t ngroups) {
  if (!groups) return;
  size_t ncounters = 0;
  for (size_t i = 0; i < ngroups; i++) ncounters += groups[i].ncounters;
  api_daemon_block *blk = (api_daemon_block *)((bfeed_counter *)(groups + ngroups) + ncounters);
  free(blk->groups);
  free(groups);
}
