/*
 * fanout_stream.c -- a stream over several daemons (a fan-out client's,
 * fanout_client.c): an on-demand sub-stream on every member
 * (fanout_member.c runs each), each position of the sequence one daemon
 * would serve requested from the member expected to finish it first
 * (fewest outstanding times average time per batch), batches reordered and
 * handed to the caller exactly once; members silent past stall_timeout
 * dropped and their positions asked of others, a slow head of line asked
 * of a second member. Positions, slots and locking: fanout.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "fanout.h"

#define FANOUT_HEDGE_MIN_NS 1000000000ull /* the head of line waits this long at least before a second request */

static const api_stream_ops fanout_stream_ops;

static inline fanout_stream *fanout_stream_of(bfeed_stream *s) { return (fanout_stream *)s; }

static void fanout_stream_pos(const fanout_stream *f, uint64_t k, uint64_t *epoch, uint64_t *index) {
  subset_pos p = subset_nth(&f->base.open.opts, f->bpe, (subset_pos){f->e0, f->i0}, k);
  *epoch = p.epoch;
  *index = p.index;
}

/* Whether k is in flight or waiting for the caller. */
static int fanout_stream_live_pos(const fanout_stream *f, uint64_t k) { return k >= f->next && k < f->assigned; }

static void fanout_stream_retry_add(fanout_stream *f, uint64_t k) {
  size_t at = f->nretry;
  while (at > 0 && f->retry[at - 1] > k) at--;
  if (at > 0 && f->retry[at - 1] == k) return;
  memmove(f->retry + at + 1, f->retry + at, (f->nretry - at) * sizeof *f->retry);
  f->retry[at] = k;
  f->nretry++;
}

/* The live member that would finish one more batch first, not holding k. */
static fanout_member *fanout_stream_best(fanout_stream *f, uint64_t k) {
  fanout_member *best = NULL;
  double best_t = 0;
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    if (!m->live || m->qlen >= FANOUT_QUEUE_MAX || (f->slot[k % f->window].at & (1u << i))) continue;
    double t = (double)(m->qlen + 1) * (m->avg_ns > 0 ? m->avg_ns : 1e6);
    if (!best || t < best_t) best = m, best_t = t;
  }
  return best;
}

static void fanout_stream_assign(fanout_stream *f, fanout_member *m, uint64_t k, uint64_t now) {
  fanout_slot *sl = &f->slot[k % f->window];
  if (!sl->at) sl->since_ns = now;
  sl->at |= 1u << m->i;
  if (m->qlen == 0) m->last_ns = now;
  m->q[(m->qhead + m->qlen++) % FANOUT_QUEUE_MAX] = k;
  m->unsent++;
}

/* Send every member its new requests (c->base.mu held). A failed send
 * shuts the member's socket down: its thread then drops it. */
static void fanout_stream_flush(fanout_stream *f) {
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    while (m->unsent > 0 && m->live) {
      uint32_t n = m->unsent < MSG_MAX_REQUEST ? (uint32_t)m->unsent : MSG_MAX_REQUEST;
      f->req->count = n;
      for (uint32_t j = 0; j < n; j++)
        fanout_stream_pos(f, m->q[(m->qhead + m->qlen - m->unsent + j) % FANOUT_QUEUE_MAX], &f->req->b[j].epoch,
                          &f->req->b[j].index);
      m->unsent -= n;
      if (single_stream_request(m->ms, f->req) < 0) single_client_abort(m->mc);
    }
    m->unsent = 0;
  }
}

void fanout_stream_pump(fanout_stream *f) {
  uint64_t now = clock_now_ns();
  while (f->nretry > 0) {
    uint64_t k = f->retry[0];
    fanout_member *m = NULL;
    if (fanout_stream_live_pos(f, k) && !f->slot[k % f->window].b && !(m = fanout_stream_best(f, k))) break;
    if (m) fanout_stream_assign(f, m, k, now);
    memmove(f->retry, f->retry + 1, --f->nretry * sizeof *f->retry);
  }
  while (f->assigned < f->total && f->assigned - f->next < f->window) {
    fanout_slot *sl = &f->slot[f->assigned % f->window];
    *sl = (fanout_slot){0};
    fanout_member *m = fanout_stream_best(f, f->assigned);
    if (!m) break;
    fanout_stream_assign(f, m, f->assigned++, now);
  }
  fanout_stream_flush(f);
}

void fanout_stream_drop(fanout_stream *f, fanout_member *m, const char *why) {
  if (!m->live) return;
  m->live = 0;
  snprintf(m->why, sizeof m->why, "%s", why);
  for (size_t j = 0; j < m->qlen; j++) {
    uint64_t k = m->q[(m->qhead + j) % FANOUT_QUEUE_MAX];
    if (!fanout_stream_live_pos(f, k)) continue;
    fanout_slot *sl = &f->slot[k % f->window];
    sl->at &= ~(1u << m->i);
    if (!sl->b && !sl->at) fanout_stream_retry_add(f, k);
  }
  m->qlen = m->unsent = 0;
  if (m->mc) single_client_abort(m->mc);
  int any = 0;
  for (size_t i = 0; i < f->nm; i++) any |= f->m[i].live;
  if (!any && !f->down_ns) f->down_ns = clock_now_ns();
  fanout_stream_pump(f);
  pthread_cond_broadcast(&f->base.c->cv);
}

bfeed_batch *fanout_stream_arrive(fanout_stream *f, fanout_member *m, bfeed_batch *b) {
  uint64_t k = subset_index_of(&f->base.open.opts, f->bpe, (subset_pos){f->e0, f->i0}, (subset_pos){b->epoch, b->index});
  uint64_t now = clock_now_ns();
  if (m->live && (m->qlen == 0 || m->q[m->qhead] != k)) {
    fanout_stream_drop(f, m, "it sent a batch it was not asked for next");
    return b;
  }
  if (m->live) {
    m->qhead = (m->qhead + 1) % FANOUT_QUEUE_MAX;
    m->qlen--;
    double t = (double)(now - m->last_ns);
    m->avg_ns = m->avg_ns > 0 ? 0.8 * m->avg_ns + 0.2 * t : t;
    m->last_ns = now;
  }
  m->served++;
  if (!fanout_stream_live_pos(f, k)) return b; /* a second copy (hedge, or a late one of a dropped member) */
  fanout_slot *sl = &f->slot[k % f->window];
  sl->at &= ~(1u << m->i);
  if (sl->b) return b;
  sl->b = b;
  pthread_cond_broadcast(&f->base.c->cv);
  return NULL;
}

/* Wait for news (a batch, a member's change) or ms at most (c->base.mu
 * held): the caller looks again either way. */
static void fanout_stream_await(fanout_stream *f, uint64_t ms) {
  uint64_t until = clock_now_ns() + ms * 1000000u;
  struct timespec ts = clock_timespec(until);
  if (!f->closing) pthread_cond_timedwait(&f->base.c->cv, &f->base.c->mu, &ts);
}

/* The stream's shape from the first member that opens (the AUTO codec
 * resolved once for all, so that every member serves the same bytes). */
static int fanout_stream_open_members(fanout_stream *f, char *err, size_t errlen) {
  bfeed_stream *s = &f->base;
  const char *first = NULL;
  int rc = 0, last = BFEED_ECONNECT;
  char e[API_ERRLEN] = "";
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    fanout_member *m = &f->m[i];
    int r = fanout_member_join(f, m, &s->info, s->fingerprint, first, &m->mc, &m->ms, e, sizeof e);
    if (r == 0 && !first) {
      s->info = m->ms->info;
      s->fingerprint = m->ms->fingerprint;
      first = m->addr;
    }
    if (r < 0 && !single_reconnect_transient(r)) rc = api_err(err, errlen, r, "%s", e);
    else if (r < 0) last = r, snprintf(m->why, sizeof m->why, "%s", e);
  }
  if (rc == 0 && !first)
    rc = api_err(err, errlen, last, "no member of %.200s opened the stream: %.200s", f->fc->ends.addr, e);
  return rc;
}

/* Members joined and the positions laid out; their threads not started. */
static int fanout_stream_start(fanout_stream *f, char *err, size_t errlen) {
  f->window = f->base.open.opts.window ? f->base.open.opts.window : 1;
  f->slot = calloc(f->window, sizeof *f->slot);
  f->retry = calloc(f->window, sizeof *f->retry);
  f->req = malloc(sizeof *f->req);
  if (!f->slot || !f->retry || !f->req) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  /* The endpoints as they are now, under c->mu: another stream's member
   * may be resolving them again (fanout_member.c). */
  int rc = 0;
  pthread_mutex_lock(&f->base.c->mu);
  for (size_t i = 0; i < f->fc->ends.n && rc == 0; i++) rc = fanout_member_init(f, f->fc->ends.ep[i]);
  pthread_mutex_unlock(&f->base.c->mu);
  if (rc < 0) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  rc = fanout_stream_open_members(f, err, errlen);
  if (rc < 0) return rc;
  const bfeed_stream_opts *o = &f->base.open.opts;
  f->bpe = f->base.info.batches_per_epoch;
  if (f->bpe == 0) return api_err(err, errlen, BFEED_EDATASET, "dataset %s has no batches", f->base.open.dataset);
  /* After an epoch's last batch: the next epoch's first; the stream's
   * select (residue, stride) picks which of the positions from there the
   * members are asked for. */
  subset_pos first = subset_first(o, f->bpe, (subset_pos){o->epoch, o->batch_index});
  f->e0 = first.epoch, f->i0 = first.index;
  f->total = o->epochs ? subset_count(o, f->bpe, first, o->epoch + o->epochs) : UINT64_MAX;
  return 0;
}

int fanout_stream_open(bfeed_client *c, const msg_open *req, bfeed_stream **out, char *err, size_t errlen) {
  fanout_stream *f = calloc(1, sizeof *f);
  if (!f) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  api_stream_init(&f->base, &fanout_stream_ops, c, req);
  f->fc = fanout_client_of(c);
  /* A call in progress like any other, so that bfeed_close waits for it
   * (the members take a while to join) rather than free c under it. */
  int rc = api_client_enter(c, err, errlen);
  if (rc < 0) {
    fanout_stream_free(f);
    return rc;
  }
  pthread_mutex_unlock(&c->mu);
  rc = fanout_stream_start(f, err, errlen);
  pthread_mutex_lock(&c->mu);
  if (rc == 0 && c->closing) rc = api_err(err, errlen, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  if (rc == 0) {
    for (size_t i = 0; i < f->nm; i++) {
      fanout_member *m = &f->m[i];
      m->live = m->mc != NULL;
      m->th_running = pthread_create(&m->th, NULL, fanout_member_main, m) == 0;
    }
    fanout_stream_pump(f);
    api_stream_link(&f->base);
    *out = &f->base;
  }
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) fanout_stream_free(f); /* before the call ends: it takes c->mu */
  pthread_mutex_lock(&c->mu);
  api_client_leave(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* c->base.mu held: drop members silent past the stall deadline, and ask a
 * second member for the head of line when its holder is slow. */
static void fanout_stream_check(fanout_stream *f) {
  uint64_t now = clock_now_ns(), stall = (uint64_t)(f->fc->stall_s * 1e9);
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    if (m->live && m->qlen > 0 && now - m->last_ns > stall) {
      char why[96];
      snprintf(why, sizeof why, "no batch for %.1f s with %zu requested", (double)(now - m->last_ns) / 1e9, m->qlen);
      fanout_stream_drop(f, m, why);
    }
  }
  if (f->next >= f->assigned) return;
  fanout_slot *sl = &f->slot[f->next % f->window];
  if (sl->b || sl->hedged || !sl->at) return;
  fanout_member *holder = &f->m[__builtin_ctz(sl->at)];
  uint64_t limit = (uint64_t)(4 * holder->avg_ns);
  if (now - sl->since_ns < (limit > FANOUT_HEDGE_MIN_NS ? limit : FANOUT_HEDGE_MIN_NS)) return;
  fanout_member *m = fanout_stream_best(f, f->next);
  if (!m) return;
  sl->hedged = 1;
  fanout_stream_assign(f, m, f->next, now);
  fanout_stream_flush(f);
}

static int fanout_stream_ready(const fanout_stream *f) {
  return f->slot[f->next % f->window].b != NULL && f->next < f->assigned;
}

/* Why the stream cannot go on (c->base.mu held), or 0. */
static int fanout_stream_failed(fanout_stream *f, char *err, size_t errlen) {
  bfeed_client *c = f->base.c;
  if (c->closing) return api_err(err, errlen, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  int any = 0;
  for (size_t i = 0; i < f->nm; i++) any |= f->m[i].live || (f->m[i].th_running && !f->m[i].gone && f->fc->reconnect);
  uint64_t waited = f->down_ns ? clock_now_ns() - f->down_ns : 0;
  if (any && waited < (uint64_t)(f->fc->deadline_s * 1e9)) return 0;
  char msg[MSG_ERROR_MAX];
  int n = snprintf(msg, sizeof msg, "every daemon of %.100s is gone", f->fc->ends.addr);
  for (size_t i = 0; i < f->nm && n > 0 && (size_t)n < sizeof msg; i++)
    n += snprintf(msg + n, sizeof msg - (size_t)n, "; %s: %.80s", f->m[i].addr, f->m[i].why);
  return api_err(err, errlen, BFEED_ECONNECT, "%s", msg);
}

static int fanout_stream_next(bfeed_stream *s, bfeed_batch **out, char *err, size_t errlen) {
  fanout_stream *f = fanout_stream_of(s);
  int rc = 0;
  while (rc == 0 && !fanout_stream_ready(f) && f->next < f->total) {
    fanout_stream_check(f);
    if ((rc = fanout_stream_failed(f, err, errlen)) < 0) break;
    fanout_stream_await(f, 50);
  }
  if (rc == 0 && fanout_stream_ready(f)) {
    fanout_slot *sl = &f->slot[f->next % f->window];
    *out = sl->b;
    sl->b = NULL;
    f->next++;
    fanout_stream_pump(f);
  } else if (rc == 0) {
    rc = api_err(err, errlen, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  }
  return rc;
}

static int fanout_stream_wait(bfeed_stream *s, int timeout_ms) {
  fanout_stream *f = fanout_stream_of(s);
  uint64_t until = clock_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
  int ready;
  while (!(ready = fanout_stream_ready(f) || f->next >= f->total || fanout_stream_failed(f, NULL, 0) < 0) &&
         (timeout_ms < 0 || clock_now_ns() < until)) {
    fanout_stream_check(f);
    fanout_stream_await(f, 20);
  }
  return ready;
}

/* Add value to the counter called name in out (c->base.mu held); the
 * stream's shape (samples_per_epoch, ...) is each member's, not a sum. */
static int fanout_stream_count(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, const char *name,
                               uint64_t v) {
  int shape = strstr(name, "_per_epoch") != NULL;
  for (size_t i = 0; i < *count; i++)
    if (strcmp(out[i].name, name) == 0) {
      out[i].value = shape ? (v > out[i].value ? v : out[i].value) : out[i].value + v;
      return 0;
    }
  if (*count == max) return 0;
  if (!(out[*count].name = api_stream_name(s, name))) return BFEED_ENOMEM;
  out[(*count)++].value = v;
  return 0;
}

/* A live member's stream, for a call made without c->mu: hold lets c->mu
 * go, the caller takes it again before let_go. Counted in users meanwhile,
 * so that the member's thread does not close that stream. */
static bfeed_stream *fanout_stream_hold(bfeed_client *c, fanout_member *m) {
  m->users++;
  bfeed_stream *ms = m->ms;
  pthread_mutex_unlock(&c->mu);
  return ms;
}

static void fanout_stream_let_go(bfeed_client *c, fanout_member *m) {
  m->users--;
  pthread_cond_broadcast(&c->cv);
}

static int fanout_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, char *err,
                               size_t errlen) {
  fanout_stream *f = fanout_stream_of(s);
  bfeed_client *c = s->c;
  int rc = 0;
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    fanout_member *m = &f->m[i];
    bfeed_counter got[MSG_MAX_COUNTERS];
    size_t n = 0;
    if (!m->live) continue;
    int r = api_stream_stats(fanout_stream_hold(c, m), got, MSG_MAX_COUNTERS, &n, NULL, 0);
    pthread_mutex_lock(&c->mu);
    for (size_t j = 0; r == 0 && rc == 0 && j < n; j++)
      rc = fanout_stream_count(s, out, max, count, got[j].name, got[j].value);
    fanout_stream_let_go(c, m); /* got's names belong to the member's stream: used before it may close */
  }
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    char name[32];
    snprintf(name, sizeof name, "member%zu_batches", i);
    rc = fanout_stream_count(s, out, max, count, name, f->m[i].served);
    snprintf(name, sizeof name, "member%zu_live", i);
    if (rc == 0) rc = fanout_stream_count(s, out, max, count, name, (uint64_t)f->m[i].live);
  }
  if (rc < 0) rc = api_err(err, errlen, rc, "out of memory for counter names");
  return rc;
}

/* The whole stream's timing to every live member's daemon; the members'
 * reader time added up. */
static uint64_t fanout_stream_report(bfeed_stream *s, const msg_timing *t) {
  fanout_stream *f = fanout_stream_of(s);
  bfeed_client *c = s->c;
  uint64_t expand = 0;
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    if (!m->live) continue;
    expand += api_stream_report(fanout_stream_hold(c, m), t);
    pthread_mutex_lock(&c->mu);
    fanout_stream_let_go(c, m);
  }
  return expand;
}

/* The dataset's class names, asked of the first live member that serves
 * them (all serve one dataset: the fingerprints agree); another one is
 * asked when it is dropped meanwhile or predates class names. */
static int fanout_stream_class_names(bfeed_stream *s, api_names *out, char *err, size_t errlen) {
  fanout_stream *f = fanout_stream_of(s);
  bfeed_client *c = s->c;
  int rc = api_err(err, errlen, BFEED_ECLOSED, "no member of the stream is connected now (%s)",
                   f->nm ? f->m[0].why : "none");
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    if (!m->live) continue;
    bfeed_stream *ms = fanout_stream_hold(c, m);
    api_names_clear(out);
    rc = api_stream_class_names(ms, out, err, errlen);
    pthread_mutex_lock(&c->mu);
    fanout_stream_let_go(c, m);
    if (rc == 0 || (m->live && rc != BFEED_EUNSUPPORTED)) break;
  }
  return rc;
}

/* The members' connections closed (their threads ended, or in a forked
 * child never there: bfeed_close then frees each one's copy), the batches
 * waiting in the slots released, f freed. */
static void fanout_stream_release(fanout_stream *f, int join) {
  for (size_t i = 0; i < f->nm; i++) {
    fanout_member *m = &f->m[i];
    if (join && m->th_running) pthread_join(m->th, NULL);
    if (m->mc) bfeed_close(m->mc);
    free(m->q);
  }
  for (uint32_t i = 0; f->slot && i < f->window; i++)
    if (f->slot[i].b) bfeed_batch_release(f->slot[i].b);
  free(f->slot);
  free(f->retry);
  free(f->req);
  api_stream_free(&f->base);
}

void fanout_stream_free(fanout_stream *f) {
  bfeed_client *c = f->base.c;
  pthread_mutex_lock(&c->mu);
  f->closing = 1;
  for (size_t i = 0; i < f->nm; i++) {
    f->m[i].live = 0;
    if (f->m[i].mc) single_client_abort(f->m[i].mc);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  fanout_stream_release(f, 1);
}

void fanout_stream_forget(fanout_stream *f) { fanout_stream_release(f, 0); }

/* bfeed_stream_close: the members stopped and closed (c->base.mu released
 * meanwhile: their threads take it). */
static void fanout_stream_close(bfeed_stream *s) {
  bfeed_client *c = s->c;
  pthread_mutex_unlock(&c->mu);
  fanout_stream_free(fanout_stream_of(s));
  pthread_mutex_lock(&c->mu);
}

static const api_stream_ops fanout_stream_ops = {
    .next = fanout_stream_next,
    .wait = fanout_stream_wait,
    .stats = fanout_stream_stats,
    .report = fanout_stream_report,
    .class_names = fanout_stream_class_names,
    .close = fanout_stream_close,
};
