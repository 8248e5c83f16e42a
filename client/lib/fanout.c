/*
 * fanout.c -- a stream over several daemons (a pool client's, pool.c): an
 * on-demand sub-stream on every member, each position of the sequence one
 * daemon would serve requested from the member expected to finish it
 * first, batches reordered and handed to the caller exactly once.
 *
 * Positions: k = 0, 1, ... counts the stream's batches from where it was
 * opened; (epoch, index) = (e0 + (i0 + k) / bpe, (i0 + k) % bpe). The
 * positions [next, assigned) are in flight or waiting for the caller, at
 * most `window` of them, each in slot k % window. A slot records which
 * members have it outstanding (a bit each): a position whose last holder
 * is dropped is requested again from another (f->retry).
 *
 * Threads: one per member. It connects (again, with backoff, re-resolving
 * names), opens the sub-stream, and takes its batches with
 * bfeed_stream_next (which ACKs them). Everything shared is under the pool
 * client's c->mu; c->cv wakes the caller. REQUEST frames are sent under
 * c->mu (small, and the member's writer lock is never held waiting for
 * c->mu); only a member's own thread closes its connection, after it has
 * taken it out of the member under c->mu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "clock.h"

#define FAN_QUEUE_MAX 1024            /* requests outstanding at one member (the daemon's limit is 1024 + window) */
#define FAN_HEDGE_MIN_NS 1000000000ull /* the head of line waits this long at least before a second request */

typedef struct fan_member {
  fan *f;
  int i;
  char addr[POOL_ADDR_MAX];
  pthread_t th;
  int th_running, gone;
  bfeed_client *mc; /* the member's connection; set and cleared by its thread */
  bfeed_stream *ms;
  int live;         /* requests go to it */
  unsigned users;   /* bfeed_stream_stats calls on mc in progress */
  uint64_t *q;      /* positions requested, in order; ring of FAN_QUEUE_MAX */
  size_t qhead, qlen, unsent;
  uint64_t last_ns; /* its last progress: a batch, or its first request while idle */
  double avg_ns;    /* moving average of the time one batch takes it */
  uint64_t served;
  char why[MSG_ERROR_MAX];
} fan_member;

typedef struct fan_slot {
  bfeed_batch *b;
  uint32_t at;       /* members it is outstanding at */
  int hedged;
  uint64_t since_ns; /* first requested */
} fan_slot;

struct fan {
  bfeed_stream *s;
  pool *p;
  uint64_t e0, i0, bpe, total; /* total: UINT64_MAX for endless */
  uint64_t next, assigned;
  uint32_t window;
  fan_slot *slot;
  uint64_t *retry;
  size_t nretry;
  fan_member m[POOL_MAX];
  size_t nm;
  int closing;
  uint64_t down_ns; /* when the last live member went; 0 while one is live */
  msg_request *req;
};

static void fan_pos(const fan *f, uint64_t k, uint64_t *epoch, uint64_t *index) {
  uint64_t g = f->i0 + k;
  *epoch = f->e0 + g / f->bpe;
  *index = g % f->bpe;
}

/* Whether k is in flight or waiting for the caller. */
static int fan_live_pos(const fan *f, uint64_t k) { return k >= f->next && k < f->assigned; }

static void fan_retry_add(fan *f, uint64_t k) {
  size_t at = f->nretry;
  while (at > 0 && f->retry[at - 1] > k) at--;
  if (at > 0 && f->retry[at - 1] == k) return;
  memmove(f->retry + at + 1, f->retry + at, (f->nretry - at) * sizeof *f->retry);
  f->retry[at] = k;
  f->nretry++;
}

/* The live member that would finish one more batch first, not holding k. */
static fan_member *fan_best(fan *f, uint64_t k) {
  fan_member *best = NULL;
  double best_t = 0;
  for (size_t i = 0; i < f->nm; i++) {
    fan_member *m = &f->m[i];
    if (!m->live || m->qlen >= FAN_QUEUE_MAX || (f->slot[k % f->window].at & (1u << i))) continue;
    double t = (double)(m->qlen + 1) * (m->avg_ns > 0 ? m->avg_ns : 1e6);
    if (!best || t < best_t) best = m, best_t = t;
  }
  return best;
}

static void fan_assign(fan *f, fan_member *m, uint64_t k, uint64_t now) {
  fan_slot *sl = &f->slot[k % f->window];
  if (!sl->at) sl->since_ns = now;
  sl->at |= 1u << m->i;
  if (m->qlen == 0) m->last_ns = now;
  m->q[(m->qhead + m->qlen++) % FAN_QUEUE_MAX] = k;
  m->unsent++;
}

static void fan_enc_request(wbuf *w, const void *m) { msg_request_encode(w, m); }

/* Send every member its new requests (c->mu held). A failed send shuts the
 * member's socket down: its thread then drops it. */
static void fan_flush(fan *f) {
  for (size_t i = 0; i < f->nm; i++) {
    fan_member *m = &f->m[i];
    while (m->unsent > 0 && m->live) {
      uint32_t n = m->unsent < MSG_MAX_REQUEST ? (uint32_t)m->unsent : MSG_MAX_REQUEST;
      f->req->count = n;
      for (uint32_t j = 0; j < n; j++)
        fan_pos(f, m->q[(m->qhead + m->qlen - m->unsent + j) % FAN_QUEUE_MAX], &f->req->b[j].epoch,
                &f->req->b[j].index);
      m->unsent -= n;
      if (conn_send(m->mc, 0, FRAME_REQUEST, m->ms->id, fan_enc_request, f->req, NULL) < 0) conn_abort(m->mc);
    }
    m->unsent = 0;
  }
}

/* Request what is to be requested (c->mu held): positions whose holders
 * were dropped first, then new ones up to the window. */
static void fan_pump(fan *f) {
  uint64_t now = clock_now_ns();
  while (f->nretry > 0) {
    uint64_t k = f->retry[0];
    fan_member *m = NULL;
    if (fan_live_pos(f, k) && !f->slot[k % f->window].b && !(m = fan_best(f, k))) break;
    if (m) fan_assign(f, m, k, now);
    memmove(f->retry, f->retry + 1, --f->nretry * sizeof *f->retry);
  }
  while (f->assigned < f->total && f->assigned - f->next < f->window) {
    fan_slot *sl = &f->slot[f->assigned % f->window];
    *sl = (fan_slot){0};
    fan_member *m = fan_best(f, f->assigned);
    if (!m) break;
    fan_assign(f, m, f->assigned++, now);
  }
  fan_flush(f);
}

/* Take m out of service (c->mu held): what it had outstanding goes to the
 * others, and its connection is shut down for its thread to close. */
static void fan_drop(fan *f, fan_member *m, const char *why) {
  if (!m->live) return;
  m->live = 0;
  snprintf(m->why, sizeof m->why, "%s", why);
  for (size_t j = 0; j < m->qlen; j++) {
    uint64_t k = m->q[(m->qhead + j) % FAN_QUEUE_MAX];
    if (!fan_live_pos(f, k)) continue;
    fan_slot *sl = &f->slot[k % f->window];
    sl->at &= ~(1u << m->i);
    if (!sl->b && !sl->at) fan_retry_add(f, k);
  }
  m->qlen = m->unsent = 0;
  if (m->mc) conn_abort(m->mc);
  int any = 0;
  for (size_t i = 0; i < f->nm; i++) any |= f->m[i].live;
  if (!any && !f->down_ns) f->down_ns = clock_now_ns();
  fan_pump(f);
  pthread_cond_broadcast(&f->s->c->cv);
}

/* A batch from m (c->mu held): kept for the caller unless the position was
 * handed out or is there already; returns what the caller of this frees. */
static bfeed_batch *fan_arrive(fan *f, fan_member *m, bfeed_batch *b) {
  uint64_t k = (b->epoch - f->e0) * f->bpe + b->index - f->i0, now = clock_now_ns();
  if (b->epoch < f->e0 || b->index >= f->bpe || (b->epoch == f->e0 && b->index < f->i0)) k = UINT64_MAX;
  if (m->live && (m->qlen == 0 || m->q[m->qhead] != k)) {
    fan_drop(f, m, "it sent a batch it was not asked for next");
    return b;
  }
  if (m->live) {
    m->qhead = (m->qhead + 1) % FAN_QUEUE_MAX;
    m->qlen--;
    double t = (double)(now - m->last_ns);
    m->avg_ns = m->avg_ns > 0 ? 0.8 * m->avg_ns + 0.2 * t : t;
    m->last_ns = now;
  }
  m->served++;
  if (!fan_live_pos(f, k)) return b; /* a second copy (hedge, or a late one of a dropped member) */
  fan_slot *sl = &f->slot[k % f->window];
  sl->at &= ~(1u << m->i);
  if (sl->b) return b;
  sl->b = b;
  pthread_cond_broadcast(&f->s->c->cv);
  return NULL;
}

/* Connect to m and open its on-demand sub-stream (c->mu not held); the
 * shape must be the stream's. */
static int fan_join(fan *f, fan_member *m, const bfeed_stream_info *want, uint64_t want_fp, const char *want_addr,
                    bfeed_client **mc, bfeed_stream **ms, bfeed_error *err) {
  bfeed_stream_opts o = f->s->open.opts;
  o.select = BFEED_SELECT_ON_DEMAND;
  int rc = pool_member_connect(f->p, m->addr, mc, err);
  if (rc == 0 && (rc = bfeed_stream_open(*mc, f->s->open.dataset, &o, ms, err)) == 0 && want_addr) {
    bfeed_stream_info i = (*ms)->info;
    uint64_t fp = (*ms)->fingerprint;
    char what[160] = "";
    if (i.samples != want->samples)
      snprintf(what, sizeof what, "%llu samples, not %llu", (unsigned long long)i.samples,
               (unsigned long long)want->samples);
    else if (i.batches_per_epoch != want->batches_per_epoch)
      snprintf(what, sizeof what, "%llu batches per epoch, not %llu", (unsigned long long)i.batches_per_epoch,
               (unsigned long long)want->batches_per_epoch);
    else if (i.classes != want->classes)
      snprintf(what, sizeof what, "%u classes, not %u", i.classes, want->classes);
    else if (fp && want_fp && fp != want_fp)
      snprintf(what, sizeof what, "dataset fingerprint %016llx, not %016llx (other files or options)",
               (unsigned long long)fp, (unsigned long long)want_fp);
    if (what[0])
      rc = common_err(err, BFEED_EDATASET, "dataset %s on %s differs from %s: %s; daemons behind one stream must serve the same bytes",
                      f->s->open.dataset, m->addr, want_addr, what);
  }
  if (rc < 0 && *mc) bfeed_close(*mc);
  if (rc < 0) *mc = NULL, *ms = NULL;
  return rc;
}

static void fan_member_start(fan *f, const char *addr);

/* Names resolve afresh (c->mu held): new addresses join; members whose
 * address is gone leave once they have failed (their thread sees gone). */
static void fan_refresh(fan *f) {
  if (f->closing || pool_refresh(f->p, &f->s->c->mu) < 0 || f->closing) return;
  for (size_t i = 0; i < f->nm; i++)
    if (!f->m[i].live && !pool_has(f->p, f->m[i].addr)) f->m[i].gone = 1;
  for (size_t j = 0; j < f->p->n; j++) {
    size_t i = 0;
    while (i < f->nm && (f->m[i].gone || strcmp(f->m[i].addr, f->p->ep[j]) != 0)) i++;
    if (i == f->nm && f->nm < POOL_MAX) fan_member_start(f, f->p->ep[j]);
  }
}

/* Sleep ms unless the stream closes (c->mu held, c->cv on CLOCK_MONOTONIC). */
static void fan_sleep(fan *f, uint64_t ms) {
  uint64_t until = clock_now_ns() + ms * 1000000u;
  struct timespec ts = clock_timespec(until);
  while (!f->closing && clock_now_ns() < until) pthread_cond_timedwait(&f->s->c->cv, &f->s->c->mu, &ts);
}

/* Wait for news (a batch, a member's change) or ms at most (c->mu held):
 * the caller looks again either way. */
static void fan_wait(fan *f, uint64_t ms) {
  uint64_t until = clock_now_ns() + ms * 1000000u;
  struct timespec ts = clock_timespec(until);
  if (!f->closing) pthread_cond_timedwait(&f->s->c->cv, &f->s->c->mu, &ts);
}

static void *fan_member_main(void *arg) {
  fan_member *m = arg;
  fan *f = m->f;
  bfeed_client *c = f->s->c;
  uint64_t backoff = CLIENT_BACKOFF_FIRST_MS;
  unsigned seed = (unsigned)(clock_now_ns() ^ (uintptr_t)m); /* jitter: members do not retry in step */
  int lost = 0; /* it served, then was dropped: its return counts as a reconnect */
  pthread_mutex_lock(&c->mu);
  while (!f->closing && !m->gone) {
    if (!m->mc) {
      bfeed_client *mc;
      bfeed_stream *ms;
      bfeed_error e;
      bfeed_stream_info want = f->s->info;
      pthread_mutex_unlock(&c->mu);
      int rc = fan_join(f, m, &want, f->s->fingerprint, f->p->addr, &mc, &ms, &e);
      pthread_mutex_lock(&c->mu);
      if (rc == 0 && !f->closing) {
        m->mc = mc, m->ms = ms, m->live = 1, m->qlen = m->unsent = 0, m->avg_ns = 0;
        c->reconnects += (uint64_t)lost;
        lost = 0;
        f->down_ns = 0;
        backoff = CLIENT_BACKOFF_FIRST_MS;
        fan_pump(f);
        pthread_cond_broadcast(&c->cv);
        continue;
      }
      if (rc == 0) {
        pthread_mutex_unlock(&c->mu);
        bfeed_close(mc);
        pthread_mutex_lock(&c->mu);
        break;
      }
      snprintf(m->why, sizeof m->why, "%s", e.message);
      if (!f->p->reconnect) break;
      fan_sleep(f, backoff / 2 + (uint64_t)rand_r(&seed) % (backoff / 2 + 1));
      backoff = backoff * 2 < CLIENT_BACKOFF_CAP_MS ? backoff * 2 : CLIENT_BACKOFF_CAP_MS;
      fan_refresh(f);
      continue;
    }
    bfeed_stream *ms = m->ms;
    bfeed_batch *b;
    bfeed_error e;
    pthread_mutex_unlock(&c->mu);
    int rc = bfeed_stream_next(ms, &b, &e);
    pthread_mutex_lock(&c->mu);
    if (rc == 0) {
      b = fan_arrive(f, m, b);
      if (b) {
        pthread_mutex_unlock(&c->mu);
        bfeed_batch_release(b);
        pthread_mutex_lock(&c->mu);
      }
      continue;
    }
    fan_drop(f, m, e.message);
    while (m->users > 0) pthread_cond_wait(&c->cv, &c->mu);
    bfeed_client *mc = m->mc;
    m->mc = NULL, m->ms = NULL;
    lost = 1;
    pthread_mutex_unlock(&c->mu);
    bfeed_close(mc);
    pthread_mutex_lock(&c->mu);
    if (!f->p->reconnect) break;
    fan_refresh(f);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* A new member at addr (its thread not started): 0 or -1 (out of memory). */
static int fan_member_init(fan *f, const char *addr) {
  fan_member *m = &f->m[f->nm];
  memset(m, 0, sizeof *m);
  if (!(m->q = malloc(FAN_QUEUE_MAX * sizeof *m->q))) return -1;
  m->f = f;
  m->i = (int)f->nm++;
  snprintf(m->addr, sizeof m->addr, "%s", addr);
  return 0;
}

static void fan_member_start(fan *f, const char *addr) {
  if (fan_member_init(f, addr) < 0) return;
  fan_member *m = &f->m[f->nm - 1];
  m->th_running = pthread_create(&m->th, NULL, fan_member_main, m) == 0;
}

/* The stream's shape from the first member that opens (the AUTO codec
 * resolved once for all, so that every member serves the same bytes). */
static int fan_open_members(fan *f, bfeed_error *err) {
  bfeed_stream *s = f->s;
  const char *first = NULL;
  int rc = 0, last = BFEED_ECONNECT;
  bfeed_error e = {0};
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    fan_member *m = &f->m[i];
    int r = fan_join(f, m, &s->info, s->fingerprint, first, &m->mc, &m->ms, &e);
    if (r == 0 && !first) {
      s->info = m->ms->info;
      s->fingerprint = m->ms->fingerprint;
      first = m->addr;
    }
    if (r < 0 && !reconnect_transient(r)) rc = common_err(err, r, "%s", e.message);
    else if (r < 0) last = r, snprintf(m->why, sizeof m->why, "%s", e.message);
  }
  if (rc == 0 && !first)
    rc = common_err(err, last, "no member of %.200s opened the stream: %.200s", f->p->addr, e.message);
  return rc;
}

int fanout_open(bfeed_client *c, bfeed_stream *s, bfeed_error *err) {
  fan *f = calloc(1, sizeof *f);
  if (!f) return common_err(err, BFEED_ENOMEM, "out of memory");
  s->fan = f;
  f->s = s;
  f->p = c->pool;
  f->window = s->open.opts.window ? s->open.opts.window : 1;
  f->slot = calloc(f->window, sizeof *f->slot);
  f->retry = calloc(f->window, sizeof *f->retry);
  f->req = malloc(sizeof *f->req);
  if (!f->slot || !f->retry || !f->req) return common_err(err, BFEED_ENOMEM, "out of memory");
  for (size_t i = 0; i < f->p->n; i++)
    if (fan_member_init(f, f->p->ep[i]) < 0) return common_err(err, BFEED_ENOMEM, "out of memory");
  int rc = fan_open_members(f, err);
  if (rc < 0) return rc;
  const bfeed_stream_opts *o = &s->open.opts;
  f->bpe = s->info.batches_per_epoch;
  f->e0 = o->epoch, f->i0 = o->batch_index;
  if (f->bpe == 0) return common_err(err, BFEED_EDATASET, "dataset %s has no batches", s->open.dataset);
  if (f->i0 >= f->bpe) f->e0++, f->i0 = 0; /* after an epoch's last batch: the next epoch's first */
  f->total = UINT64_MAX;
  if (o->epochs) {
    uint64_t end = (o->epoch + o->epochs) * f->bpe, from = f->e0 * f->bpe + f->i0;
    f->total = end > from ? end - from : 0;
  }
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < f->nm; i++) {
    fan_member *m = &f->m[i];
    m->live = m->mc != NULL;
    m->th_running = pthread_create(&m->th, NULL, fan_member_main, m) == 0;
  }
  fan_pump(f);
  pthread_mutex_unlock(&c->mu);
  return 0;
}

/* c->mu held: drop members silent past the stall deadline, and ask a
 * second member for the head of line when its holder is slow. */
static void fan_check(fan *f) {
  uint64_t now = clock_now_ns(), stall = (uint64_t)(f->p->stall_s * 1e9);
  for (size_t i = 0; i < f->nm; i++) {
    fan_member *m = &f->m[i];
    if (m->live && m->qlen > 0 && now - m->last_ns > stall) {
      char why[96];
      snprintf(why, sizeof why, "no batch for %.1f s with %zu requested", (double)(now - m->last_ns) / 1e9, m->qlen);
      fan_drop(f, m, why);
    }
  }
  if (f->next >= f->assigned) return;
  fan_slot *sl = &f->slot[f->next % f->window];
  if (sl->b || sl->hedged || !sl->at) return;
  fan_member *holder = &f->m[__builtin_ctz(sl->at)];
  uint64_t limit = (uint64_t)(4 * holder->avg_ns);
  if (now - sl->since_ns < (limit > FAN_HEDGE_MIN_NS ? limit : FAN_HEDGE_MIN_NS)) return;
  fan_member *m = fan_best(f, f->next);
  if (!m) return;
  sl->hedged = 1;
  fan_assign(f, m, f->next, now);
  fan_flush(f);
}

static int fan_ready(const fan *f) { return f->slot[f->next % f->window].b != NULL && f->next < f->assigned; }

/* Why the stream cannot go on (c->mu held), or 0. */
static int fan_failed(fan *f, bfeed_error *err) {
  bfeed_client *c = f->s->c;
  if (c->closing) return common_err(err, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  int any = 0;
  for (size_t i = 0; i < f->nm; i++) any |= f->m[i].live || (f->m[i].th_running && !f->m[i].gone && f->p->reconnect);
  uint64_t waited = f->down_ns ? clock_now_ns() - f->down_ns : 0;
  if (any && waited < (uint64_t)(f->p->deadline_s * 1e9)) return 0;
  char msg[MSG_ERROR_MAX];
  int n = snprintf(msg, sizeof msg, "every daemon of %.100s is gone", f->p->addr);
  for (size_t i = 0; i < f->nm && n > 0 && (size_t)n < sizeof msg; i++)
    n += snprintf(msg + n, sizeof msg - (size_t)n, "; %s: %.80s", f->m[i].addr, f->m[i].why);
  return common_err(err, BFEED_ECONNECT, "%s", msg);
}

int fanout_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err) {
  fan *f = s->fan;
  bfeed_client *c = s->c;
  *out = NULL;
  int rc = conn_lock_enter(c, err);
  if (rc < 0) return rc;
  while (rc == 0 && !fan_ready(f) && f->next < f->total) {
    fan_check(f);
    if ((rc = fan_failed(f, err)) < 0) break;
    fan_wait(f, 50);
  }
  if (rc == 0 && fan_ready(f)) {
    fan_slot *sl = &f->slot[f->next % f->window];
    *out = sl->b;
    sl->b = NULL;
    f->next++;
    fan_pump(f);
  } else if (rc == 0) {
    rc = common_err(err, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  }
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int fanout_wait(bfeed_stream *s, int timeout_ms) {
  fan *f = s->fan;
  bfeed_client *c = s->c;
  uint64_t until = clock_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
  if (conn_lock_enter(c, NULL) < 0) return 1;
  int ready;
  while (!(ready = fan_ready(f) || f->next >= f->total || fan_failed(f, NULL) < 0) &&
         (timeout_ms < 0 || clock_now_ns() < until)) {
    fan_check(f);
    fan_wait(f, 20);
  }
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  return ready;
}

/* Add value to the counter called name in out (c->mu held); the stream's
 * shape (samples_per_epoch, ...) is each member's, not a sum. */
static int fan_count(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, const char *name, uint64_t v) {
  int shape = strstr(name, "_per_epoch") != NULL;
  for (size_t i = 0; i < *count; i++)
    if (strcmp(out[i].name, name) == 0) {
      out[i].value = shape ? (v > out[i].value ? v : out[i].value) : out[i].value + v;
      return 0;
    }
  if (*count == max) return 0;
  if (!(out[*count].name = stream_name(s, name))) return BFEED_ENOMEM;
  out[(*count)++].value = v;
  return 0;
}

int fanout_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err) {
  fan *f = s->fan;
  bfeed_client *c = s->c;
  *count = 0;
  int rc = conn_lock_enter(c, err);
  if (rc < 0) return rc;
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    fan_member *m = &f->m[i];
    bfeed_counter got[MSG_MAX_COUNTERS];
    size_t n = 0;
    if (!m->live) continue;
    m->users++;
    bfeed_stream *ms = m->ms;
    pthread_mutex_unlock(&c->mu);
    int r = bfeed_stream_stats(ms, got, MSG_MAX_COUNTERS, &n, NULL);
    pthread_mutex_lock(&c->mu);
    for (size_t j = 0; r == 0 && rc == 0 && j < n; j++) rc = fan_count(s, out, max, count, got[j].name, got[j].value);
    m->users--; /* got's names belong to ms: used before its thread may close it */
    pthread_cond_broadcast(&c->cv);
  }
  for (size_t i = 0; i < f->nm && rc == 0; i++) {
    char name[32];
    snprintf(name, sizeof name, "member%zu_batches", i);
    rc = fan_count(s, out, max, count, name, f->m[i].served);
    snprintf(name, sizeof name, "member%zu_live", i);
    if (rc == 0) rc = fan_count(s, out, max, count, name, (uint64_t)f->m[i].live);
  }
  if (rc < 0) rc = common_err(err, rc, "out of memory for counter names");
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void fanout_free(bfeed_stream *s) {
  fan *f = s->fan;
  bfeed_client *c = s->c;
  pthread_mutex_lock(&c->mu);
  f->closing = 1;
  for (size_t i = 0; i < f->nm; i++) {
    f->m[i].live = 0;
    if (f->m[i].mc) conn_abort(f->m[i].mc);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (size_t i = 0; i < f->nm; i++) {
    fan_member *m = &f->m[i];
    if (m->th_running) pthread_join(m->th, NULL);
    if (m->mc) bfeed_close(m->mc);
    free(m->q);
  }
  for (uint32_t i = 0; f->slot && i < f->window; i++)
    if (f->slot[i].b) bfeed_batch_release(f->slot[i].b);
  free(f->slot);
  free(f->retry);
  free(f->req);
  free(f);
  s->fan = NULL;
}
