/*
 * fanout_member.c -- one member of a fan-out stream (fanout_stream.c
 * starts them): a single client to its daemon with an on-demand sub-stream
 * of the stream's shape, and its thread, which takes the batches asked of
 * it (bfeed_stream_next ACKs them) and hands them to fanout_stream_arrive;
 * after a failure it is dropped, and with reconnect on it connects again
 * with backoff, names resolved afresh (new addresses join the stream as
 * members of their own), and rejoins when it answers. Locking: fanout.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "fanout.h"

int fanout_member_join(fanout_stream *f, fanout_member *m, const bfeed_stream_info *want, uint64_t want_fp,
                       const char *want_addr, bfeed_client **mc, bfeed_stream **ms, char *err, size_t errlen) {
  bfeed_stream_opts o = f->base.open.opts;
  o.select = BFEED_SELECT_ON_DEMAND;
  int rc = fanout_client_member(f->fc, m->addr, mc, err, errlen);
  if (rc == 0 && (rc = api_stream_open(*mc, f->base.open.dataset, &o, ms, err, errlen)) == 0 && want_addr) {
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
      rc = api_err(err, errlen, BFEED_EDATASET,
                   "dataset %s on %s differs from %s: %s; daemons behind one stream must serve the same bytes",
                   f->base.open.dataset, m->addr, want_addr, what);
  }
  if (rc < 0 && *mc) bfeed_close(*mc);
  if (rc < 0) *mc = NULL, *ms = NULL;
  return rc;
}

int fanout_member_init(fanout_stream *f, const char *addr) {
  fanout_member *m = &f->m[f->nm];
  memset(m, 0, sizeof *m);
  if (!(m->q = malloc(FANOUT_QUEUE_MAX * sizeof *m->q))) return -1;
  m->f = f;
  m->i = (int)f->nm++;
  snprintf(m->addr, sizeof m->addr, "%s", addr);
  return 0;
}

static void fanout_member_start(fanout_stream *f, const char *addr) {
  if (fanout_member_init(f, addr) < 0) return;
  fanout_member *m = &f->m[f->nm - 1];
  m->th_running = pthread_create(&m->th, NULL, fanout_member_main, m) == 0;
}

/* Names resolve afresh (c->base.mu held): new addresses join; members
 * whose address is gone leave once they have failed (their thread sees
 * gone). */
static void fanout_member_refresh(fanout_stream *f) {
  fanout_endpoints *e = &f->fc->ends;
  if (f->closing || fanout_endpoints_refresh(e, &f->base.c->mu) < 0 || f->closing) return;
  for (size_t i = 0; i < f->nm; i++)
    if (!f->m[i].live && !fanout_endpoints_has(e, f->m[i].addr)) f->m[i].gone = 1;
  for (size_t j = 0; j < e->n; j++) {
    size_t i = 0;
    while (i < f->nm && (f->m[i].gone || strcmp(f->m[i].addr, e->ep[j]) != 0)) i++;
    if (i == f->nm && f->nm < FANOUT_MEMBERS_MAX) fanout_member_start(f, e->ep[j]);
  }
}

/* Sleep ms unless the stream closes (c->base.mu held, c->base.cv on
 * clock.h's clock). */
static void fanout_member_sleep(fanout_stream *f, uint64_t ms) {
  uint64_t until = clock_now_ns() + ms * 1000000u;
  struct timespec ts = clock_timespec(until);
  while (!f->closing && clock_now_ns() < until) pthread_cond_timedwait(&f->base.c->cv, &f->base.c->mu, &ts);
}

void *fanout_member_main(void *arg) {
  fanout_member *m = arg;
  fanout_stream *f = m->f;
  bfeed_client *c = f->base.c;
  uint64_t backoff = API_BACKOFF_FIRST_MS;
  unsigned seed = (unsigned)(clock_now_ns() ^ (uintptr_t)m); /* jitter: members do not retry in step */
  int lost = 0; /* it served, then was dropped: its return counts as a reconnect */
  char e[API_ERRLEN] = "";
  pthread_mutex_lock(&c->mu);
  while (!f->closing && !m->gone) {
    if (!m->mc) {
      bfeed_client *mc;
      bfeed_stream *ms;
      bfeed_stream_info want = f->base.info;
      pthread_mutex_unlock(&c->mu);
      int rc = fanout_member_join(f, m, &want, f->base.fingerprint, f->fc->ends.addr, &mc, &ms, e, sizeof e);
      pthread_mutex_lock(&c->mu);
      if (rc == 0 && !f->closing) {
        m->mc = mc, m->ms = ms, m->live = 1, m->qlen = m->unsent = 0, m->avg_ns = 0;
        c->reconnects += (uint64_t)lost;
        lost = 0;
        f->down_ns = 0;
        backoff = API_BACKOFF_FIRST_MS;
        fanout_stream_pump(f);
        pthread_cond_broadcast(&c->cv);
        continue;
      }
      if (rc == 0) {
        pthread_mutex_unlock(&c->mu);
        bfeed_close(mc);
        pthread_mutex_lock(&c->mu);
        break;
      }
      snprintf(m->why, sizeof m->why, "%s", e);
      if (!f->fc->reconnect) break;
      fanout_member_sleep(f, backoff / 2 + (uint64_t)rand_r(&seed) % (backoff / 2 + 1));
      backoff = backoff * 2 < API_BACKOFF_CAP_MS ? backoff * 2 : API_BACKOFF_CAP_MS;
      fanout_member_refresh(f);
      continue;
    }
    bfeed_stream *ms = m->ms;
    bfeed_batch *b;
    pthread_mutex_unlock(&c->mu);
    int rc = api_stream_next(ms, &b, e, sizeof e);
    pthread_mutex_lock(&c->mu);
    if (rc == 0) {
      b = fanout_stream_arrive(f, m, b);
      if (b) {
        pthread_mutex_unlock(&c->mu);
        bfeed_batch_release(b);
        pthread_mutex_lock(&c->mu);
      }
      continue;
    }
    fanout_stream_drop(f, m, e);
    while (m->users > 0) pthread_cond_wait(&c->cv, &c->mu);
    bfeed_client *mc = m->mc;
    m->mc = NULL, m->ms = NULL;
    lost = 1;
    pthread_mutex_unlock(&c->mu);
    bfeed_close(mc);
    pthread_mutex_lock(&c->mu);
    if (!f->fc->reconnect) break;
    fanout_member_refresh(f);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}
