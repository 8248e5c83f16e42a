/*
 * api_client.c -- the public client calls: bfeed_connect2 checks the
 * options once and makes a fan-out client (fanout/) when the address names
 * several endpoints, else a single connection (single/); bfeed_close and
 * the bfeed_client_* queries dispatch through c->ops. Also the counting of
 * calls in progress that bfeed_close waits out (api.h), for both, and
 * where a forked child's copy of a client stops (api_fork.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "token.h"

BFEED_API void bfeed_connect_opts_init(bfeed_connect_opts *o) {
  memset(o, 0, sizeof *o);
  o->reconnect = 1;
  o->reconnect_deadline = 60;
  o->stall_timeout = 10;
  o->shm = 1;
}

/* The token in a file (proto/token.c: the rule bfeedd reads its
 * auth_token_file by). what says where the path came from. */
static int api_client_token_file(api_settings *set, const char *path, const char *what, char *err, size_t errlen) {
  char why[160];
  if (token_read_file(path, set->token, sizeof set->token, why, sizeof why) < 0)
    return api_err(err, errlen, BFEED_EINVAL, "%s %s: %s", what, path, why);
  return 0;
}

static int api_client_settings(api_settings *set, const bfeed_connect_opts *o, char *err, size_t errlen) {
  bfeed_connect_opts def;
  if (!o) bfeed_connect_opts_init(&def), o = &def;
  memset(set, 0, sizeof *set);
  if (!(o->reconnect_deadline > 0 && o->reconnect_deadline <= 1e7))
    return api_err(err, errlen, BFEED_EINVAL,
                   "reconnect_deadline %g: expected seconds, more than 0 and at most 1e7", o->reconnect_deadline);
  if (!(o->stall_timeout > 0 && o->stall_timeout <= 1e7))
    return api_err(err, errlen, BFEED_EINVAL, "stall_timeout %g: expected seconds, more than 0 and at most 1e7",
                   o->stall_timeout);
  set->reconnect = o->reconnect != 0;
  set->deadline_ns = (uint64_t)(o->reconnect_deadline * 1e9);
  set->stall_s = o->stall_timeout;
  const char *shm_env = getenv("BFEED_SHM");
  set->shm = o->shm != 0 && !(shm_env && strcmp(shm_env, "0") == 0);
  const char *env = getenv("BFEED_TOKEN_FILE");
  if (o->token && (!*o->token || strlen(o->token) >= sizeof set->token))
    return api_err(err, errlen, BFEED_EINVAL, "token: expected 1 to %zu bytes, got %zu", sizeof set->token - 1,
                   strlen(o->token));
  if (o->token) snprintf(set->token, sizeof set->token, "%s", o->token);
  else if (o->token_file) return api_client_token_file(set, o->token_file, "token file", err, errlen);
  else if (env && *env) return api_client_token_file(set, env, "BFEED_TOKEN_FILE", err, errlen);
  return 0;
}

/* A list is checked as a list (fanout/ parses every item); one address is
 * checked before the options, as it always was, then may still turn out to
 * be a name for several daemons. */
static int api_client_connect(const char *addr, const bfeed_connect_opts *o, bfeed_client **out, char *err,
                              size_t errlen) {
  api_settings set;
  int rc = fanout_client_is_list(addr) ? 0 : single_client_check(addr, err, errlen);
  if (rc == 0) rc = api_client_settings(&set, o, err, errlen);
  if (rc == 0) rc = fanout_client_connect(addr, &set, out, err, errlen);
  if (rc == 0 && !*out) rc = single_client_connect(addr, &set, out, err, errlen);
  return rc;
}

BFEED_API int bfeed_connect(const char *addr, bfeed_client **out, bfeed_error *err) {
  return bfeed_connect2(addr, NULL, out, err);
}

BFEED_API int bfeed_connect2(const char *addr, const bfeed_connect_opts *o, bfeed_client **out, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  *out = NULL;
  return api_err_public(err, api_client_connect(addr, o, out, e, sizeof e), "%s", e);
}

void api_client_init(bfeed_client *c, const api_client_ops *ops) {
  c->ops = ops;
  api_fork_own(c);
  pthread_mutex_init(&c->mu, NULL);
  clock_cond_init(&c->cv); /* every timed wait's deadline comes from clock.h */
}

void api_client_free(bfeed_client *c) {
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

int api_client_enter(bfeed_client *c, char *err, size_t errlen) {
  int rc = api_fork_check(c, err, errlen); /* in a forked child c->mu may be held by a thread it lacks */
  if (rc < 0) return rc;
  pthread_mutex_lock(&c->mu);
  if (c->closing) {
    pthread_mutex_unlock(&c->mu);
    return api_err(err, errlen, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  }
  c->busy++;
  return 0;
}

void api_client_leave(bfeed_client *c) {
  if (--c->busy == 0 && c->closing) pthread_cond_broadcast(&c->cv);
}

bfeed_stream *api_client_pop_stream(bfeed_client *c) {
  bfeed_stream *s = c->streams;
  if (s) c->streams = s->next_stream;
  return s;
}

BFEED_API void bfeed_close(bfeed_client *c) {
  if (!c) return;
  if (api_fork_check(c, NULL, 0) < 0) return c->ops->forget(c); /* a forked child's copy (api.h) */
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_cond_broadcast(&c->cv); /* waiters give up, a reconnect stops */
  pthread_mutex_unlock(&c->mu);
  if (c->ops->stop) c->ops->stop(c);
  pthread_mutex_lock(&c->mu);
  while (c->busy > 0) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  c->ops->free(c);
}

BFEED_API uint32_t bfeed_client_version(const bfeed_client *c) { return c->version; }
BFEED_API const char *bfeed_client_server(const bfeed_client *c) { return c->server; }
BFEED_API uint64_t bfeed_client_reconnects(bfeed_client *c) {
  if (api_fork_check(c, NULL, 0) < 0) return c->reconnects; /* the count at the fork: no thread left to change it */
  pthread_mutex_lock(&c->mu);
  uint64_t n = c->reconnects;
  pthread_mutex_unlock(&c->mu);
  return n;
}

/* In a forked child no endpoint (the list may have been half replaced at the fork). */
BFEED_API size_t bfeed_client_endpoints(bfeed_client *c) {
  return api_fork_check(c, NULL, 0) < 0 ? 0 : c->ops->endpoints(c);
}
BFEED_API int bfeed_client_endpoint(bfeed_client *c, size_t i, char *buf, size_t cap) {
  int rc = api_fork_check(c, NULL, 0);
  return rc < 0 ? rc : c->ops->endpoint(c, i, buf, cap);
}
