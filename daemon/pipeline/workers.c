/* workers.c -- see workers.h */
#include "workers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct workers {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  batch_job *head, *tail; /* waiting */
  batch_job *done;        /* finished, not yet handed to the loop */
  unsigned queued, busy;
  int stopping;
  int n;
  pthread_t *threads;
  uv_async_t async;
  workers_done_cb cb;
  void *arg;
};

static void *worker_main(void *p) {
  workers *w = p;
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
    pthread_mutex_unlock(&w->mu);

    batch_build(job, &bw);

    pthread_mutex_lock(&w->mu);
    w->busy--;
    job->next = w->done;
    w->done = job;
    uv_async_send(&w->async);
  }
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
  if (w && !(w->threads = calloc((size_t)n, sizeof *w->threads))) free(w), w = NULL;
  if (!w) return snprintf(err, errlen, "cannot start %d workers: out of memory", n), BFEED_ENOMEM;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->cb = done;
  w->arg = arg;
  int rc = uv_async_init(loop, &w->async, on_async);
  if (rc < 0) {
    free(w->threads);
    free(w);
    return snprintf(err, errlen, "cannot start %d workers: %s", n, uv_strerror(rc)), BFEED_EINTERNAL;
  }
  w->async.data = w;
  for (int i = 0; i < n; i++) {
    if ((rc = pthread_create(&w->threads[i], NULL, worker_main, w)) != 0) break;
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

int workers_count(const workers *w) { return w->n; }

static void on_async_closed(uv_handle_t *h) {
  workers *w = h->data;
  free(w->threads);
  free(w);
}

void workers_stop(workers *w) {
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  for (int i = 0; i < w->n; i++) pthread_join(w->threads[i], NULL);
  /* Every job goes back to its owner, run or not, so owners can count
   * what they have outstanding and free themselves. */
  while (w->head) {
    batch_job *j = w->head;
    w->head = j->next;
    j->rc = BFEED_ESHUTDOWN;
    snprintf(j->err, sizeof j->err, "daemon shutting down");
    j->next = w->done;
    w->done = j;
  }
  w->tail = NULL;
  on_async(&w->async);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  uv_close((uv_handle_t *)&w->async, on_async_closed);
}
