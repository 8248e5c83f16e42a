/*
 * api_timing.c -- is the job input-bound? What the caller of
 * bfeed_stream_next has waited, per stream: the wait (from the first
 * bfeed_stream_wait or next that asks for a batch until next returns it),
 * the time between a next's return and the following call (the caller's
 * own work: the training step), and a histogram of the waits for
 * their median and 99th percentile. The first call's wait is kept apart:
 * it is the pipeline filling, not the steady state a verdict is about.
 *
 * Both implementations' streams are timed here, around ops->next and
 * ops->wait (api_stream.c); ops->report passes the totals on to the daemon (TIMING),
 * at most every API_TIMING_REPORT_NS. Once the caller has reported its
 * job's loop (bfeed_stream_report_timing: a loader's main process, where
 * the training step runs), the stream sends the loop's totals instead,
 * marked MSG_TIMING_LOOP. Under c->mu, like the stream.
 */
#include <string.h>

#include "api.h"
#include "clock.h"

/* A wait of v microseconds falls in bin v for v < 16, else in one of 8
 * bins per power of two (12.5% wide): quantiles within 1/16 of the truth. */
static unsigned api_timing_bin(uint64_t us) {
  if (us < 16) return (unsigned)us;
  unsigned e = 63u - (unsigned)__builtin_clzll(us); /* 4.. */
  unsigned b = 16 + (e - 4) * 8 + (unsigned)((us >> (e - 3)) & 7);
  return b < API_TIMING_BINS ? b : API_TIMING_BINS - 1;
}

/* The middle of bin b, in microseconds. */
static uint64_t api_timing_mid(unsigned b) {
  if (b < 16) return b;
  unsigned e = (b - 16) / 8 + 4, sub = (b - 16) % 8;
  uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 3));
  return lo + (1ull << (e - 3)) / 2;
}

/* Asking begins at the first bfeed_stream_wait or next after a next
 * returned: a caller that waits with bfeed_stream_wait (the Python
 * package, to stay interruptible) and then takes the batch with next
 * waited all that time. */
void api_timing_enter(api_timing *t, uint64_t now) {
  if (t->asking) return;
  t->asking = 1;
  if (t->last_ns) t->step_ns += now - t->last_ns;
  t->entered_ns = now;
}

void api_timing_leave(api_timing *t, uint64_t now, int got) {
  uint64_t wait = now - t->entered_ns;
  t->asking = 0;
  t->last_ns = now;
  if (!got) return; /* the end of the stream, or an error: no batch to wait for */
  if (!t->started) {
    t->started = 1;
    t->first_wait_ns = wait;
    return;
  }
  t->batches++;
  t->wait_ns += wait;
  t->hist[api_timing_bin(wait / 1000)]++;
}

/* The q-quantile of the waits, in ns (0 before any). */
static uint64_t api_timing_quantile(const api_timing *t, double q) {
  if (!t->batches) return 0;
  uint64_t want = (uint64_t)(q * (double)t->batches + 0.999999), seen = 0;
  if (want < 1) want = 1;
  for (unsigned b = 0; b < API_TIMING_BINS; b++)
    if ((seen += t->hist[b]) >= want) return api_timing_mid(b) * 1000;
  return api_timing_mid(API_TIMING_BINS - 1) * 1000;
}

/* wait_fraction and batches_per_s from the totals. */
static void api_timing_rates(bfeed_stream_timing *out) {
  double all = (double)(out->wait_ns + out->step_ns);
  out->wait_fraction = all > 0 ? (double)out->wait_ns / all : 0;
  out->batches_per_s = all > 0 ? (double)out->batches / (all * 1e-9) : 0;
}

void api_timing_get(const api_timing *t, uint64_t expand_ns, bfeed_stream_timing *out) {
  memset(out, 0, sizeof *out);
  out->batches = t->batches;
  out->wait_ns = t->wait_ns;
  out->step_ns = t->step_ns;
  out->wait_p50_ns = api_timing_quantile(t, 0.50);
  out->wait_p99_ns = api_timing_quantile(t, 0.99);
  out->first_wait_ns = t->first_wait_ns;
  out->expand_ns = expand_ns;
  api_timing_rates(out);
}

/* p's totals as TIMING's microseconds; expand 0: ops->report fills it in
 * (the reader thread's). */
static void api_timing_to_msg(const bfeed_stream_timing *p, uint64_t flags, msg_timing *m) {
  *m = (msg_timing){.batches = p->batches,
                    .wait_us = p->wait_ns / 1000,
                    .step_us = p->step_ns / 1000,
                    .wait_p50_us = p->wait_p50_ns / 1000,
                    .wait_p99_us = p->wait_p99_ns / 1000,
                    .first_wait_us = p->first_wait_ns / 1000,
                    .flags = flags};
}

void api_timing_msg(const bfeed_stream *s, msg_timing *m) {
  if (s->has_loop) {
    *m = s->loop;
    return;
  }
  bfeed_stream_timing p;
  api_timing_get(&s->timing, 0, &p);
  api_timing_to_msg(&p, 0, m);
}

int api_timing_report(bfeed_stream *s, const bfeed_stream_timing *t, char *err, size_t errlen) {
  if (!t) return api_err(err, errlen, BFEED_EINVAL, "bfeed_stream_report_timing: no timing given (t is NULL)");
  int rc = api_client_enter(s->c, err, errlen);
  if (rc < 0) return rc;
  api_timing_to_msg(t, MSG_TIMING_LOOP, &s->loop);
  s->has_loop = 1;
  msg_timing m = s->loop; /* ops->report may let c->mu go: another report may change s->loop meanwhile */
  s->ops->report(s, &m);
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return 0;
}

int api_timing_due(api_timing *t, uint64_t now) {
  if (t->reported_ns && now - t->reported_ns < API_TIMING_REPORT_NS) return 0;
  t->reported_ns = now;
  return 1;
}

/* The client's own counters over the daemon's copies of them (which lag
 * by up to a report; a fan-out stream's members each had the whole): what
 * it sends, the loop's once reported. */
int api_timing_counters(bfeed_stream *s, uint64_t expand_ns, bfeed_counter *out, size_t max, size_t *count) {
  bfeed_stream_timing p;
  api_timing_get(&s->timing, expand_ns, &p);
  if (s->has_loop) { /* what it sends: the loop's */
    const msg_timing *l = &s->loop;
    p.batches = l->batches, p.wait_ns = l->wait_us * 1000, p.step_ns = l->step_us * 1000;
    p.wait_p50_ns = l->wait_p50_us * 1000, p.wait_p99_ns = l->wait_p99_us * 1000;
    p.first_wait_ns = l->first_wait_us * 1000;
    api_timing_rates(&p);
  }
  const struct {
    const char *name;
    uint64_t value;
  } v[] = {
      {"client_batches", p.batches},
      {"client_wait_us", p.wait_ns / 1000},
      {"client_step_us", p.step_ns / 1000},
      {"client_wait_p50_us", p.wait_p50_ns / 1000},
      {"client_wait_p99_us", p.wait_p99_ns / 1000},
      {"client_first_wait_us", p.first_wait_ns / 1000},
      {"client_expand_us", p.expand_ns / 1000},
      {"wait_fraction_ppm", (uint64_t)(p.wait_fraction * 1e6 + 0.5)},
  };
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    size_t i = 0;
    while (i < *count && strcmp(out[i].name, v[k].name) != 0) i++;
    if (i == *count) {
      if (*count == max) continue;
      if (!(out[i].name = api_stream_name(s, v[k].name))) return BFEED_ENOMEM;
      (*count)++;
    }
    out[i].value = v[k].value;
  }
  return 0;
}
