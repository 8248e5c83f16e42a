/* jobs.c -- see jobs.h */
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "conn_impl.h"
#include "stream.h"

/* How a job's counter comes from its streams' (stream_stats) counters. */
enum {
  JOBS_SELF,       /* the job's own: computed in jobs_finish */
  JOBS_SUM,        /* summed over every stream, closed or open */
  JOBS_OPEN,       /* summed over the streams open now (a closed one's is gone: in flight, idle) */
  JOBS_OPEN_MAX,   /* the largest of the open streams' */
  JOBS_CLIENT,     /* the client's timing: the loop's, else summed (jobs_finish) */
  JOBS_CLIENT_MAX, /* the loop's, else the largest of the streams' (a percentile does not add up) */
};

/* The job's counters, in the report's order; `from` names the stream's
 * counter where it is not the job's name. The names the verdict reads are
 * the stream's (verdict.h): a job is judged as a stream is. */
static const struct {
  const char *name, *from;
  int how;
} jobs_rows[] = {
    {"job", NULL, JOBS_SELF},
    {"streams", NULL, JOBS_SELF},
    {"streams_total", NULL, JOBS_SELF},
    {"samples", NULL, JOBS_SUM},
    {"batches", NULL, JOBS_SUM},
    {"raw_bytes", NULL, JOBS_SUM},
    {"wire_bytes", NULL, JOBS_SUM},
    {"skipped", NULL, JOBS_SUM},
    {"worker_busy_us", NULL, JOBS_SUM},
    {"in_flight", NULL, JOBS_OPEN},
    {"unacked", NULL, JOBS_OPEN},
    {"kernel_copy_bytes", NULL, JOBS_SUM},
    {"shm_batches", NULL, JOBS_SUM},
    {"idle", NULL, JOBS_OPEN},
    {"batches_dropped_idle", NULL, JOBS_SUM},
    {"batches_built", NULL, JOBS_SUM},
    {"batches_shared", NULL, JOBS_SUM},
    {"bytes_saved", NULL, JOBS_SUM},
    {"window", NULL, JOBS_OPEN_MAX},
    {"age_us", NULL, JOBS_SELF},
    {"workers_busy_us", NULL, JOBS_SELF},
    {"read_us", NULL, JOBS_SUM},
    {"decode_us", NULL, JOBS_SUM},
    {"resize_us", NULL, JOBS_SUM},
    {"augment_us", NULL, JOBS_SUM},
    {"batch_us", NULL, JOBS_SUM},
    {"memory_wait_us", NULL, JOBS_SUM},
    {"stream_time_us", "age_us", JOBS_SUM}, /* memory_wait_us and client_expand_us are shares of this */
    {"client_batches", NULL, JOBS_CLIENT},
    {"client_wait_us", NULL, JOBS_CLIENT},
    {"client_step_us", NULL, JOBS_CLIENT},
    {"client_wait_p50_us", NULL, JOBS_CLIENT_MAX},
    {"client_wait_p99_us", NULL, JOBS_CLIENT_MAX},
    {"client_first_wait_us", NULL, JOBS_CLIENT_MAX},
    {"client_expand_us", NULL, JOBS_SUM}, /* each stream's reader's: the loop has none */
    {"wait_fraction_ppm", NULL, JOBS_SELF},
    {"loop", NULL, JOBS_SELF},
    {"requested", NULL, JOBS_SUM},
};
#define JOBS_NROWS (sizeof jobs_rows / sizeof jobs_rows[0])
_Static_assert(JOBS_NROWS <= JOBS_COUNTERS, "a job's counters exceed JOBS_COUNTERS");

struct jobs_entry {
  uint64_t id;
  char dataset[128];             /* its first stream's */
  uint64_t started_ns, ended_ns; /* its first stream opened; its last closed (0: one is open) */
  uint64_t workers_busy_at;      /* the workers' busy time when it started */
  uint32_t open;                 /* streams open now */
  uint64_t total;                /* streams opened in all */
  uint64_t closed[JOBS_NROWS];   /* its closed streams' counters (jobs_fold) */
  msg_timing loop;               /* the latest loop TIMING, if has_loop */
  int has_loop;
  size_t slot;                   /* its place in jobs_collect's answer */
};

struct jobs {
  jobs_entry *e[JOBS_MAX]; /* oldest first */
  size_t n;
  const uint64_t *forget_ms;
  const logger *log;
  int full_logged; /* the table was found full of open jobs: said once until a join succeeds */
};

jobs *jobs_new(const uint64_t *forget_ms, const logger *log) {
  jobs *t = calloc(1, sizeof *t);
  if (t) t->forget_ms = forget_ms, t->log = log;
  return t;
}

void jobs_free(jobs *t) {
  for (size_t i = 0; t && i < t->n; i++) free(t->e[i]);
  free(t);
}

uint64_t jobs_id(const jobs_entry *e) { return e ? e->id : 0; }

static void jobs_remove(jobs *t, size_t i) {
  free(t->e[i]);
  memmove(&t->e[i], &t->e[i + 1], (t->n - i - 1) * sizeof t->e[0]);
  t->n--;
}

/* Forget the jobs whose last stream closed *forget_ms ago or more. */
static void jobs_expire(jobs *t, uint64_t now) {
  uint64_t forget_ns = *t->forget_ms * 1000000u;
  for (size_t i = 0; forget_ns && i < t->n;)
    if (!t->e[i]->open && now - t->e[i]->ended_ns >= forget_ns) jobs_remove(t, i);
    else i++;
}

/* Room for one more: the job that ended first goes. 0, or -1 when every
 * job has a stream open (their number is bounded by the streams open). */
static int jobs_make_room(jobs *t) {
  if (t->n < JOBS_MAX) return 0;
  size_t best = t->n;
  for (size_t i = 0; i < t->n; i++)
    if (!t->e[i]->open && (best == t->n || t->e[i]->ended_ns < t->e[best]->ended_ns)) best = i;
  if (best == t->n) return -1;
  jobs_remove(t, best);
  return 0;
}

jobs_entry *jobs_join(jobs *t, uint64_t id, const char *dataset, uint64_t workers_busy_ns) {
  if (!id) return NULL;
  uint64_t now = uv_hrtime();
  jobs_expire(t, now);
  jobs_entry *e = NULL;
  for (size_t i = 0; i < t->n && !e; i++)
    if (t->e[i]->id == id) e = t->e[i];
  if (!e) {
    if (jobs_make_room(t) < 0 || !(e = calloc(1, sizeof *e))) {
      if (!t->full_logged)
        log_warn(t->log, "job %016llx: the table of jobs is full (%d, each with a stream open) or memory is out: "
                 "its streams are served and counted on their own", (unsigned long long)id, JOBS_MAX);
      t->full_logged = 1;
      return NULL;
    }
    e->id = id;
    snprintf(e->dataset, sizeof e->dataset, "%s", dataset);
    e->started_ns = now;
    e->workers_busy_at = workers_busy_ns;
    t->e[t->n++] = e;
  }
  t->full_logged = 0;
  e->open++;
  e->total++;
  e->ended_ns = 0;
  return e;
}

/* The row stream counter `name` feeds, or -1. */
static int jobs_row_from(const char *name) {
  for (size_t k = 0; k < JOBS_NROWS; k++)
    if (jobs_rows[k].how != JOBS_SELF && strcmp(jobs_rows[k].from ? jobs_rows[k].from : jobs_rows[k].name, name) == 0)
      return (int)k;
  return -1;
}

/* Stream st's counters into v (a job's rows): those of an open stream,
 * or (open 0) what a closed one leaves behind. */
static void jobs_fold(uint64_t *v, const struct stream *st, int open) {
  msg_counter c[MSG_MAX_COUNTERS];
  size_t n = stream_stats(st, c, MSG_MAX_COUNTERS);
  for (size_t i = 0; i < n; i++) {
    int k = jobs_row_from(c[i].name);
    if (k < 0) continue;
    int how = jobs_rows[k].how;
    if (!open && (how == JOBS_OPEN || how == JOBS_OPEN_MAX)) continue;
    if (how == JOBS_OPEN_MAX || how == JOBS_CLIENT_MAX) v[k] = v[k] > c[i].value ? v[k] : c[i].value;
    else v[k] += c[i].value;
  }
}

void jobs_leave(jobs_entry *e, const struct stream *st) {
  if (!e) return;
  jobs_fold(e->closed, st, 0);
  if (--e->open == 0) e->ended_ns = uv_hrtime();
}

void jobs_loop(jobs_entry *e, const msg_timing *t) {
  if (!e) return;
  e->loop = *t;
  e->has_loop = 1;
}

static void jobs_set(jobs_view *v, const char *name, uint64_t value) {
  for (size_t k = 0; k < JOBS_NROWS; k++)
    if (strcmp(jobs_rows[k].name, name) == 0) v->v[k] = value;
}

static uint64_t jobs_get(const jobs_view *v, const char *name) {
  for (size_t k = 0; k < JOBS_NROWS; k++)
    if (strcmp(jobs_rows[k].name, name) == 0) return v->v[k];
  return 0;
}

/* The job's own counters, and the loop's timing over its streams' sums. */
static void jobs_finish(const jobs_entry *e, jobs_view *v, uint64_t now, uint64_t workers_busy_ns) {
  v->id = e->id;
  v->dataset = e->dataset;
  v->n = JOBS_NROWS;
  snprintf(v->rid, sizeof v->rid, "%016llx:%s", (unsigned long long)e->id, e->dataset);
  jobs_set(v, "job", e->id);
  jobs_set(v, "streams", e->open);
  jobs_set(v, "streams_total", e->total);
  jobs_set(v, "age_us", (now - e->started_ns) / 1000);
  jobs_set(v, "workers_busy_us", workers_busy_ns > e->workers_busy_at ? (workers_busy_ns - e->workers_busy_at) / 1000 : 0);
  jobs_set(v, "loop", (uint64_t)e->has_loop);
  if (e->has_loop) {
    const msg_timing *l = &e->loop;
    jobs_set(v, "client_batches", l->batches);
    jobs_set(v, "client_wait_us", l->wait_us);
    jobs_set(v, "client_step_us", l->step_us);
    jobs_set(v, "client_wait_p50_us", l->wait_p50_us);
    jobs_set(v, "client_wait_p99_us", l->wait_p99_us);
    jobs_set(v, "client_first_wait_us", l->first_wait_us);
  }
  /* wait / (wait + step) in millionths, as a stream's */
  double wait = (double)jobs_get(v, "client_wait_us"), all = wait + (double)jobs_get(v, "client_step_us");
  jobs_set(v, "wait_fraction_ppm", all > 0 ? (uint64_t)(wait * 1e6 / all + 0.5) : 0);
}

const char *jobs_counter_name(size_t k) { return k < JOBS_NROWS ? jobs_rows[k].name : NULL; }

jobs_view *jobs_collect(struct server *s, size_t *n) {
  jobs *t = s->jobs;
  uint64_t now = uv_hrtime();
  *n = 0;
  if (!t) return NULL;
  jobs_expire(t, now);
  jobs_view *v = t->n ? calloc(t->n, sizeof *v) : NULL;
  if (!v) return NULL;
  for (size_t i = 0; i < t->n; i++) {
    t->e[i]->slot = i;
    memcpy(v[i].v, t->e[i]->closed, sizeof t->e[i]->closed);
  }
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams; i++) {
      jobs_entry *e = stream_job(c->streams[i]);
      if (e) jobs_fold(v[e->slot].v, c->streams[i], 1);
    }
  uint64_t busy = s->workers ? workers_busy_ns(s->workers) : 0;
  for (size_t i = 0; i < t->n; i++) jobs_finish(t->e[i], &v[i], now, busy);
  *n = t->n;
  return v;
}
