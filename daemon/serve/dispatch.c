/* dispatch.c -- see dispatch.h */
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

#include "fingerprint.h"
#include "msg.h"
#include "stream.h"

#define DISPATCH_SERVER_NAME "bfeedd/" BFEED_VERSION_STRING

static void send_reply(conn *c, int type, uint32_t stream, void (*encode)(wbuf *, const void *),
                       const void *msg) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  encode(&w, msg);
  msg_finish(&w, at, type, stream);
  conn_send_frame(c, &w);
}

static void enc_hello_ok(wbuf *w, const void *m) { msg_hello_ok_encode(w, m); }
static void enc_open_ok(wbuf *w, const void *m) { msg_open_ok_encode(w, m); }

/* Equal strings, in a time that does not depend on where they differ. */
static int dispatch_token_equal(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char d = la != lb;
  for (size_t i = 0; i < MSG_TOKEN_MAX; i++)
    d |= (unsigned char)((i < la ? a[i] : 0) ^ (i < lb ? b[i] : 0));
  return d == 0;
}

static void on_hello(conn *c, const uint8_t *p, size_t n) {
  msg_hello h;
  char why[MSG_ERROR_MAX];
  if (msg_hello_decode(p, n, &h, why, sizeof why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
  uint32_t v = h.max_version < FRAME_VERSION_MAX ? h.max_version : FRAME_VERSION_MAX;
  uint32_t lo = h.min_version > FRAME_VERSION_MIN ? h.min_version : FRAME_VERSION_MIN;
  if (v < lo)
    return conn_fail(c, BFEED_EVERSION, "client speaks protocol %u..%u, daemon %u..%u", h.min_version,
                     h.max_version, FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  if (c->tcp && c->s->limits.auth_token[0] && !dispatch_token_equal(h.token, c->s->limits.auth_token))
    return conn_fail(c, BFEED_EAUTH, "%s: this daemon requires the access token from TCP clients "
                     "(give the client --token-file or BFEED_TOKEN_FILE)", h.token[0] ? "wrong token" : "no token");
  conn_hello_done(c);
  log_debug(c->s->log, "client %u: %s, protocol %u", c->id, h.agent, v); /* escaped by log.c: the client's to choose */
  msg_hello_ok ok = {.version = v, .max_frame = FRAME_MAX_PAYLOAD};
  snprintf(ok.server, sizeof ok.server, "%s", DISPATCH_SERVER_NAME);
  send_reply(c, FRAME_HELLO_OK, 0, enc_hello_ok, &ok);
}

/* The served datasets' names for an error message, in at most cap bytes:
 * whole names, then "and N more" for those that do not fit (an ERROR's
 * message is MSG_ERROR_MAX bytes: a cut-off name would mislead). */
static void dispatch_dataset_names(const server *s, char *out, size_t cap) {
  size_t used = 0, i = 0;
  if (s->ndatasets == 0) {
    snprintf(out, cap, "none");
    return;
  }
  for (; i < s->ndatasets; i++) {
    const char *name = s->datasets[i]->name;
    size_t need = strlen(name) + (i ? 2 : 0), more = i + 1 < s->ndatasets ? 24 : 0; /* ", and 4294967295 more" */
    if (used + need + more >= cap) break;
    used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? ", " : "", name);
  }
  if (i < s->ndatasets)
    snprintf(out + used, cap - used, "%sand %zu more", i ? ", " : "", s->ndatasets - i);
}

static void on_open(conn *c, uint32_t id, const uint8_t *p, size_t n) {
  server *s = c->s;
  msg_open m;
  char why[MSG_ERROR_MAX];
  int rc = msg_open_decode(p, n, &m, why, sizeof why);
  if (rc < 0) return conn_send_error(c, id, rc, "%s", why);
  /* An ERROR on the id would tell the client its live stream failed while
   * the daemon goes on serving it: a reused id breaks the protocol. */
  if (id != 0 && conn_find_stream(c, id) >= 0)
    return conn_fail(c, BFEED_EPROTO, "OPEN of stream %u, which is already open", id);
  if (id == 0) return conn_send_error(c, id, BFEED_EINVAL, "stream id 0 is the connection's, not a stream's");
  if (c->nstreams >= s->limits.max_streams || c->nstreams >= CONN_MAX_STREAMS)
    return conn_send_error(c, id, BFEED_ELIMIT, "at most %d streams per connection", s->limits.max_streams);
  dataset *ds = server_find_dataset(s, m.dataset);
  if (!ds) {
    /* Room left for the client's "bfeedd: " before the message (libbfeed
     * keeps MSG_ERROR_MAX bytes of it all). */
    char names[MSG_ERROR_MAX];
    int named = snprintf(NULL, 0, "no dataset named '%.64s' (this daemon serves: )", m.dataset);
    dispatch_dataset_names(s, names, sizeof names - 16 - (size_t)named);
    return conn_send_error(c, id, BFEED_ENODATASET, "no dataset named '%.64s' (this daemon serves: %s)", m.dataset,
                           names);
  }
  msg_open_ok ok;
  char err[MSG_ERROR_MAX];
  if (m.opts.window > s->limits.max_window)
    return conn_send_error(c, id, BFEED_ELIMIT, "window %u exceeds this daemon's max_window %u", m.opts.window,
                           s->limits.max_window);
  ds_stats *stats = stats_for(s, ds->name);
  if (!stats) return conn_send_error(c, id, BFEED_ENOMEM, "out of memory");
  stream *st;
  rc = stream_open(&st, c, s->flow, id, ds, &m.opts, s->workers, s->buffers, s->share, stats, s->log, &ok, err,
                   sizeof err);
  if (rc < 0) return conn_send_error(c, id, rc, "%s", err);
  stream_set_max_pixels(st, s->limits.max_pixels);
  stream_set_job(st, jobs_join(s->jobs, m.opts.job, ds->name, workers_busy_ns(s->workers)));
  ok.fingerprint = fingerprint_stream(ds->fingerprint, &m.opts, s->limits.max_pixels);
  ok.features |= MSG_FEATURE_CLASSES; /* on_classes_req */
  c->streams[c->nstreams++] = st;
  conn_streams_changed(c);
  log_info(s->log, "client %u: stream %u on %s: batch %u, size %ux%u, %s, seed %llu, epoch %llu batch %llu", c->id,
           id, ds->name, m.opts.batch, m.opts.size, m.opts.width ? m.opts.width : m.opts.size, m.opts.mode == BFEED_MODE_EVAL ? "eval" : "train",
           (unsigned long long)m.opts.seed, (unsigned long long)m.opts.epoch,
           (unsigned long long)m.opts.batch_index);
  send_reply(c, FRAME_OPEN_OK, id, enc_open_ok, &ok);
  stream_start(st);
}

static void on_ack(conn *c, uint32_t id, int i, const uint8_t *p, size_t n) {
  msg_ack a;
  char why[MSG_ERROR_MAX];
  char err[MSG_ERROR_MAX];
  if (msg_ack_decode(p, n, &a, why, sizeof why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
  if (i < 0) return; /* the stream ended or failed: a late ack is harmless */
  int rc = stream_ack(c->streams[i], &a, err, sizeof err);
  if (rc < 0) return conn_fail(c, rc, "stream %u: %s", id, err);
}

/* Malformed or not, REQUEST is judged like ACK: a broken frame ends the
 * connection, one for a stream already gone is ignored. */
static void on_request(conn *c, int i, const uint8_t *p, size_t n) {
  msg_request m; /* 16 KiB, on the loop thread's stack */
  char why[MSG_ERROR_MAX];
  int rc = msg_request_decode(p, n, &m, why, sizeof why);
  if (rc < 0) return conn_fail(c, rc, "%s", why);
  if (i >= 0) stream_request(c->streams[i], &m);
}

/* TIMING, like ACK: malformed ends the connection, late is ignored. A
 * loop's (MSG_TIMING_LOOP) is also its stream's job's (jobs.h). */
static void on_timing(conn *c, int i, const uint8_t *p, size_t n) {
  msg_timing t;
  char why[MSG_ERROR_MAX];
  if (msg_timing_decode(p, n, &t, why, sizeof why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
  if (i < 0) return;
  stream_timing(c->streams[i], &t);
  if (t.flags & MSG_TIMING_LOOP) jobs_loop(stream_job(c->streams[i]), &t);
}

static void on_stats_req(conn *c, uint32_t id, int i) {
  if (id != 0 && i < 0) return conn_send_error(c, id, BFEED_EINVAL, "no open stream %u", id);
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  if (id == 0) {
    stats_report(c->s, &w);
  } else {
    msg_counter ctr[MSG_MAX_COUNTERS];
    msg_stats_encode(&w, ctr, stream_stats(c->streams[i], ctr, MSG_MAX_COUNTERS));
  }
  msg_finish(&w, at, FRAME_STATS, id);
  conn_send_frame(c, &w);
}

/* CLASSES_REQ: a page of the stream's dataset's class names (none for
 * kinds without them, npy, tfrecord and tar: total 0). Malformed, or on
 * stream 0, it breaks the protocol; on a stream not open it is answered as
 * STATS_REQ's; past the names it fails the stream (EINVAL). */
static void on_classes_req(conn *c, uint32_t id, int i, const uint8_t *p, size_t n) {
  msg_classes_req m;
  char why[MSG_ERROR_MAX];
  if (msg_classes_req_decode(p, n, &m, why, sizeof why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
  if (id == 0) return conn_fail(c, BFEED_EPROTO, "CLASSES_REQ on stream 0: class names are a stream's dataset's");
  if (i < 0) return conn_send_error(c, id, BFEED_EINVAL, "no open stream %u", id);
  const dataset *ds = stream_dataset(c->streams[i]);
  uint32_t total = ds->classes ? (uint32_t)ds->nclasses : 0;
  if (m.first > total) {
    snprintf(why, sizeof why, "CLASSES_REQ from name %u, past dataset %s's %u class names", m.first, ds->name, total);
    return stream_fail(c->streams[i], BFEED_EINVAL, why);
  }
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_classes_encode(&w, total, m.first, (const char *const *)(ds->classes ? ds->classes + m.first : NULL),
                     total - m.first, MSG_CLASSES_MAX);
  msg_finish(&w, at, FRAME_CLASSES, id);
  conn_send_frame(c, &w);
}

void dispatch_frame(conn *c, const frame_header *h, const uint8_t *p) {
  if (!c->hello_done && h->type != FRAME_HELLO)
    return conn_fail(c, BFEED_EPROTO, "first frame must be HELLO, got %s", frame_type_name(h->type));
  int i = conn_find_stream(c, h->stream);
  switch (h->type) {
    case FRAME_HELLO:
      if (c->hello_done) return conn_fail(c, BFEED_EPROTO, "HELLO sent twice");
      return on_hello(c, p, h->length);
    case FRAME_OPEN: return on_open(c, h->stream, p, h->length);
    case FRAME_ACK: return on_ack(c, h->stream, i, p, h->length);
    case FRAME_CLOSE:
      if (i >= 0) {
        stream *st = c->streams[i];
        conn_forget_stream(c, st);
        stream_close(st);
      }
      return;
    case FRAME_STATS_REQ: return on_stats_req(c, h->stream, i);
    case FRAME_REQUEST: return on_request(c, i, p, h->length);
    case FRAME_TIMING: return on_timing(c, i, p, h->length);
    case FRAME_CLASSES_REQ: return on_classes_req(c, h->stream, i, p, h->length);
    default:
      return conn_fail(c, BFEED_EPROTO, "unexpected %s frame from a client", frame_type_name(h->type));
  }
}
