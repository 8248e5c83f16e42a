/*
 * api_stream.c -- the public stream calls: bfeed_stream_open checks the
 * request and resolves what the connection decides (the AUTO codec, the
 * transport), then the client's implementation opens it; next, wait,
 * stats and close are counted calls (api.h) dispatched through s->ops.
 * Also the part of a stream both implementations share: its request,
 * shape, id, place in c->streams and the counter names it hands out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "opts.h"
#include "clock.h"
#include "codec.h"

void api_stream_init(bfeed_stream *s, const api_stream_ops *ops, bfeed_client *c, const msg_open *m) {
  s->ops = ops;
  s->c = c;
  s->open = *m;
}

void api_stream_free(bfeed_stream *s) {
  for (size_t i = 0; i < s->nnames; i++) free(s->names[i]);
  free(s);
}

void api_stream_link(bfeed_stream *s) {
  bfeed_client *c = s->c;
  s->id = ++c->next_id;
  s->next_stream = c->streams;
  c->streams = s;
}

void api_stream_unlink(bfeed_stream *s) {
  for (bfeed_stream **pp = &s->c->streams; *pp; pp = &(*pp)->next_stream)
    if (*pp == s) {
      *pp = s->next_stream;
      return;
    }
}

const char *api_stream_name(bfeed_stream *s, const char *name) {
  for (size_t i = 0; i < s->nnames; i++)
    if (strcmp(s->names[i], name) == 0) return s->names[i];
  if (s->nnames == API_MAX_NAMES || !(s->names[s->nnames] = strdup(name))) return NULL;
  return s->names[s->nnames++];
}

/* The OPEN the caller asks for, checked, with what the connection decides. */
static int api_stream_request(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o, msg_open *m,
                              char *err, size_t errlen) {
  char why[256];
  memset(m, 0, sizeof *m);
  if (!dataset || strlen(dataset) >= sizeof m->dataset || !*dataset)
    return api_err(err, errlen, BFEED_EINVAL, "dataset name must be 1..%zu bytes", sizeof m->dataset - 1);
  m->opts = *o;
  if (o->codec == BFEED_CODEC_AUTO) /* one codec for all of a fan-out client's members: the same bytes from each */
    m->opts.codec = (bfeed_codec)codec_auto(c->ops->any_tcp(c));
  /* 8-bit pixels cannot carry values made after Normalize (erasing,
   * mixing): auto's u8 over TCP becomes lz4, compressed at memory speed. */
  if (o->codec == BFEED_CODEC_AUTO && opts_after_normalize(o) && codec_get(m->opts.codec)->u8)
    m->opts.codec = BFEED_CODEC_LZ4;
  /* Shared memory only where descriptors can travel; TCP never asks, nor a
   * fan-out client (its members are clients of their own, on the socket). */
  m->opts.transport = c->ops->shm(c) ? BFEED_TRANSPORT_SHM : BFEED_TRANSPORT_SOCKET;
  if (msg_opts_check(&m->opts, why, sizeof why) < 0) return api_err(err, errlen, BFEED_EINVAL, "%s", why);
  snprintf(m->dataset, sizeof m->dataset, "%s", dataset);
  return 0;
}

int api_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o, bfeed_stream **out,
                    char *err, size_t errlen) {
  msg_open m;
  *out = NULL;
  int rc = api_fork_check(c, err, errlen); /* before ops->any_tcp, which may take c->mu */
  if (rc == 0) rc = api_stream_request(c, dataset, o, &m, err, errlen);
  return rc < 0 ? rc : c->ops->open(c, &m, out, err, errlen);
}

BFEED_API int bfeed_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o,
                                bfeed_stream **out, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  return api_err_public(err, api_stream_open(c, dataset, o, out, e, sizeof e), "%s", e);
}

BFEED_API int bfeed_stream_get_info(const bfeed_stream *s, bfeed_stream_info *info) {
  *info = s->info; /* set once, before bfeed_stream_open returned; a reopen only compares */
  return 0;
}

int api_stream_next(bfeed_stream *s, bfeed_batch **out, char *err, size_t errlen) {
  *out = NULL;
  int rc = api_client_enter(s->c, err, errlen);
  if (rc < 0) return rc;
  api_timing_enter(&s->timing, clock_now_ns());
  rc = s->ops->next(s, out, err, errlen);
  uint64_t now = clock_now_ns();
  api_timing_leave(&s->timing, now, *out != NULL);
  if (*out && api_timing_due(&s->timing, now)) {
    msg_timing t;
    api_timing_msg(s, &t);
    s->ops->report(s, &t);
  }
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return rc;
}

BFEED_API int bfeed_stream_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  return api_err_public(err, api_stream_next(s, out, e, sizeof e), "%s", e);
}

BFEED_API int bfeed_stream_wait(bfeed_stream *s, int timeout_ms) {
  if (api_client_enter(s->c, NULL, 0) < 0) return 1; /* bfeed_stream_next would not block: it fails */
  api_timing_enter(&s->timing, clock_now_ns());
  int ready = s->ops->wait(s, timeout_ms);
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return ready;
}

int api_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, char *err, size_t errlen) {
  *count = 0;
  int rc = api_client_enter(s->c, err, errlen);
  if (rc < 0) return rc;
  rc = s->ops->stats(s, out, max, count, err, errlen);
  if (rc == 0 && api_timing_counters(s, s->ops->report(s, NULL), out, max, count) < 0)
    rc = api_err(err, errlen, BFEED_ENOMEM, "out of memory for counter names");
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return rc;
}

BFEED_API int bfeed_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  return api_err_public(err, api_stream_stats(s, out, max, count, e, sizeof e), "%s", e);
}

uint64_t api_stream_report(bfeed_stream *s, const msg_timing *t) {
  if (api_client_enter(s->c, NULL, 0) < 0) return 0;
  uint64_t expand = s->ops->report(s, t);
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return expand;
}

BFEED_API int bfeed_stream_get_timing(bfeed_stream *s, bfeed_stream_timing *out) {
  memset(out, 0, sizeof *out);
  int rc = api_client_enter(s->c, NULL, 0);
  if (rc < 0) return rc;
  api_timing_get(&s->timing, s->ops->report(s, NULL), out);
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return 0;
}

BFEED_API int bfeed_stream_report_timing(bfeed_stream *s, const bfeed_stream_timing *t, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  return api_err_public(err, api_timing_report(s, t, e, sizeof e), "%s", e);
}

BFEED_API void bfeed_stream_close(bfeed_stream *s) {
  if (!s) return;
  bfeed_client *c = s->c;
  /* bfeed_close has begun: it frees s; or in a forked child, where s is
   * the parent's stream: nothing is sent, bfeed_close frees the copy. */
  if (api_client_enter(c, NULL, 0) < 0) return;
  api_stream_unlink(s);
  s->ops->close(s);
  api_client_leave(c);
  pthread_mutex_unlock(&c->mu);
}
