/* workers.c -- see workers.h */
#include "workers.h"
#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One thread: what it is building since when, for a shutdown that has to
 * say which worker it gave up on. */
typedef struct workers_slot {
  struct workers *w;
  pthread_t thread;
  batch_job *job;    /* being built, or NULL (under w->mu) */
  uint64_t since_ns; /* when it took job */
  int exited;        /* its thread has returned (under w->mu) */
} workers_slot;

struct workers {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_cond_t exited_cv; /* a thread returned (workers_stop waits on it, on the monotonic clock) */
  batch_job *head, *tail;   /* waiting */
  batch_job *done;          /* finished, not yet handed to the loop */
  unsigned queued, busy;
  uint64_t busy_ns; /* builds finished, in all */
  int stopping;
  int abandoned; /* workers_stop gave up on a thread: nothing but mu may be touched by one that comes back */
  int n, running;
  workers_slot *slots;
  uv_async_t async;
  workers_done_cb cb;
  void *arg;
};

static void *worker_main(void *p) {
  workers_slot *slot = p;
  workers *w = slot->w;
  batch_worker bw;
  memset(&bw, 0, sizeof bw);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->stopping) pthread_cond_wait(&w->cv, &w->mu);
    if (w->stopping) break;
    batch_job *job = w->head;
    w->head = job->next;
    if (!w->head) w->tail = NULL;
    w->queued--;
    w->busy++;
    slot->job = job;
    slot->since_ns = clock_now_ns();
    pthread_mutex_unlock(&w->mu);

    batch_build(job, &bw);

    pthread_mutex_lock(&w->mu);
    slot->job = NULL;
    w->busy--;
    w->busy_ns += clock_now_ns() - slot->since_ns;
    /* Back from a read the shutdown gave up waiting for: the loop and the
     * job's stream are gone (or going), and the process is exiting. */
    if (w->abandoned) break;
    job->next = w->done;
    w->done = job;
    uv_async_send(&w->async);
  }
  slot->exited = 1;
  w->running--;
  pthread_cond_broadcast(&w->exited_cv);
  pthread_mutex_unlock(&w->mu);
  batch_worker_free(&bw);
  return NULL;
}

/* Loop thread: hand finished jobs to the callback, oldest first. */
static void on_async(uv_async_t *a) {
  workers *w = a->data;
  pthread_mutex_lock(&w->mu);
  batch_job *list = w->done;
  w->done = NULL;
  pthread_mutex_unlock(&w->mu);
  batch_job *rev = NULL;
  while (list) {
    batch_job *next = list->next;
    list->next = rev;
    rev = list;
    list = next;
  }
  while (rev) {
    batch_job *next = rev->next;
    rev->next = NULL;
    w->cb(rev, w->arg);
    rev = next;
  }
}

int workers_start(workers **out, int n, uv_loop_t *loop, workers_done_cb done, void *arg, char *err,
                  size_t errlen) {
  workers *w = calloc(1, sizeof *w);
  if (w && !(w->slots = calloc((size_t)n, sizeof *w->slots))) free(w), w = NULL;
  if (!w) return snprintf(err, errlen, "cannot start %d workers: out of memory", n), BFEED_ENOMEM;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  clock_cond_init(&w->exited_cv);
  w->cb = done;
  w->arg = arg;
  int rc = uv_async_init(loop, &w->async, on_async);
  if (rc < 0) {
    free(w->slots);
    free(w);
    return snprintf(err, errlen, "cannot start %d workers: %s", n, uv_strerror(rc)), BFEED_EINTERNAL;
  }
  w->async.data = w;
  for (int i = 0; i < n; i++) {
    w->slots[i].w = w;
    pthread_mutex_lock(&w->mu);
    w->running++; /* before it starts: it may return before the lock is taken again */
    pthread_mutex_unlock(&w->mu);
    if ((rc = pthread_create(&w->slots[i].thread, NULL, worker_main, &w->slots[i])) != 0) {
      pthread_mutex_lock(&w->mu);
      w->running--;
      pthread_mutex_unlock(&w->mu);
      break;
    }
    w->n = i + 1;
  }
  *out = w;
  if (rc != 0) return snprintf(err, errlen, "cannot start %d workers: %s", n, strerror(rc)), BFEED_ENOMEM;
  return 0;
}

void workers_submit(workers *w, batch_job *job) {
  job->next = NULL;
  pthread_mutex_lock(&w->mu);
  if (w->tail) w->tail->next = job;
  else w->head = job;
  w->tail = job;
  w->queued++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void workers_submit_first(workers *w, batch_job *job) {
  pthread_mutex_lock(&w->mu);
  job->next = w->head;
  w->head = job;
  if (!w->tail) w->tail = job;
  w->queued++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

batch_job *workers_cancel(workers *w, void *owner) {
  batch_job *out = NULL, **pp;
  pthread_mutex_lock(&w->mu);
  w->tail = NULL;
  for (pp = &w->head; *pp;) {
    batch_job *j = *pp;
    if (j->owner == owner) {
      *pp = j->next;
      j->next = out;
      out = j;
      w->queued--;
    } else {
      w->tail = j;
      pp = &j->next;
    }
  }
  pthread_mutex_unlock(&w->mu);
  return out;
}

void workers_load(workers *w, unsigned *queued, unsigned *busy) {
  pthread_mutex_lock(&w->mu);
  *queued = w->queued;
  *busy = w->busy;
  pthread_mutex_unlock(&w->mu);
}

uint64_t workers_busy_ns(workers *w) {
  pthread_mutex_lock(&w->mu);
  uint64_t now = clock_now_ns(), t = w->busy_ns; /* under mu: no build starts after now */
  for (int i = 0; i < w->n; i++)
    if (w->slots[i].job) t += now - w->slots[i].since_ns;
  pthread_mutex_unlock(&w->mu);
  return t;
}

int workers_count(const workers *w) { return w->n; }

static void on_async_closed(uv_handle_t *h) {
  workers *w = h->data;
  if (w->abandoned) return; /* a stuck thread may still take w->mu: w stays, the process exits */
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  pthread_cond_destroy(&w->exited_cv);
  free(w->slots);
  free(w);
}

/* Under w->mu: say which worker is stuck in what. The job and its dataset
 * stay valid while the worker holds them (the stream waits for its jobs). */
static void workers_log_stuck(const workers *w, const workers_slot *slot, int i, const logger *log) {
  const batch_job *job = slot->job;
  double secs = (double)(clock_now_ns() - slot->since_ns) * 1e-9;
  if (!job) {
    log_err(log, "worker %d did not stop in time (idle?); exiting without it", i);
    return;
  }
  const dataset *ds = job->spec->ds;
  char what[700] = "";
  uint64_t reading = __atomic_load_n(&job->reading, __ATOMIC_RELAXED);
  if (reading) {
    char name[600];
    dataset_sample_name(ds, (size_t)(reading - 1), name, sizeof name);
    snprintf(what, sizeof what, ", at %s", name);
  }
  log_err(log,
          "worker %d is stuck (for %.1f s) in batch %llu of stream %u on dataset %s%s (a read that does not return: "
          "NFS, FUSE, a device?); exiting without it",
          i, secs, (unsigned long long)job->seq, job->spec->stream_id, ds->name, what);
}

int workers_stop(workers *w, uint64_t timeout_ms, const logger *log) {
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_broadcast(&w->cv);
  uint64_t deadline = clock_now_ns() + timeout_ms * 1000000u;
  while (w->running > 0 && clock_now_ns() < deadline) {
    struct timespec ts = clock_timespec(deadline);
    pthread_cond_timedwait(&w->exited_cv, &w->mu, &ts);
  }
  int stuck = w->running;
  if (stuck) {
    w->abandoned = 1;
    for (int i = 0; i < w->n; i++)
      if (!w->slots[i].exited) workers_log_stuck(w, &w->slots[i], i, log);
  }
  pthread_mutex_unlock(&w->mu);
  /* The threads that returned are joined; a stuck one is left to the
   * process's exit (detached: it holds nothing the exit needs). */
  for (int i = 0; i < w->n; i++) {
    pthread_mutex_lock(&w->mu);
    int exited = w->slots[i].exited;
    pthread_mutex_unlock(&w->mu);
    if (exited || !stuck) pthread_join(w->slots[i].thread, NULL);
    else pthread_detach(w->slots[i].thread);
  }
  /* Every job goes back to its owner, run or not, so owners can count
   * what they have outstanding and free themselves (a stuck one's job
   * never does: its stream is never freed, and the process exits). */
  pthread_mutex_lock(&w->mu);
  while (w->head) {
    batch_job *j = w->head;
    w->head = j->next;
    j->rc = BFEED_ESHUTDOWN;
    snprintf(j->err, sizeof j->err, "daemon shutting down");
    j->next = w->done;
    w->done = j;
  }
  w->tail = NULL;
  pthread_mutex_unlock(&w->mu);
  on_async(&w->async);
  uv_close((uv_handle_t *)&w->async, on_async_closed);
  return stuck;
}
