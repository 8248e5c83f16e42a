/* bufcache.c -- see bufcache.h */
#include "bufcache.h"

#include <pthread.h>
#include <stdlib.h>

#define BUFPOOL_MAX 64

struct bufcache {
  pthread_mutex_t mu;
  int refs, n, keep;
  struct {
    uint8_t *p;
    size_t cap;
    int aged; /* free through a whole trim period: the next trim frees it */
  } v[BUFPOOL_MAX];
};

bufcache *bufcache_new(int keep) {
  bufcache *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->mu, NULL);
  p->refs = 1;
  p->keep = keep < 0 ? 0 : keep > BUFPOOL_MAX ? BUFPOOL_MAX : keep;
  return p;
}

bufcache *bufcache_ref(bufcache *p) {
  pthread_mutex_lock(&p->mu);
  p->refs++;
  pthread_mutex_unlock(&p->mu);
  return p;
}

void bufcache_unref(bufcache *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  int last = --p->refs == 0;
  pthread_mutex_unlock(&p->mu);
  if (!last) return;
  for (int i = 0; i < p->n; i++) free(p->v[i].p);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

uint8_t *bufcache_get(bufcache *p, size_t need, size_t *cap) {
  need = need ? (need + 63) / 64 * 64 : 64;
  pthread_mutex_lock(&p->mu);
  /* Newest first (warm in cache); not one far larger than asked, which a
   * small stream would otherwise hold on to. */
  for (int i = p->n - 1; i >= 0; i--)
    if (p->v[i].cap >= need && p->v[i].cap / 2 <= need) {
      uint8_t *buf = p->v[i].p;
      *cap = p->v[i].cap;
      p->v[i] = p->v[--p->n];
      pthread_mutex_unlock(&p->mu);
      return buf;
    }
  pthread_mutex_unlock(&p->mu);
  *cap = need;
  return aligned_alloc(64, need);
}

void bufcache_put(bufcache *p, uint8_t *buf, size_t cap) {
  if (!buf) return;
  if (!p) return free(buf);
  pthread_mutex_lock(&p->mu);
  if (p->n < p->keep) {
    p->v[p->n].p = buf;
    p->v[p->n].cap = cap;
    p->v[p->n].aged = 0;
    p->n++;
    buf = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  free(buf);
}

size_t bufcache_idle_bytes(bufcache *p) {
  size_t n = 0;
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < p->n; i++) n += p->v[i].cap;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void bufcache_trim(bufcache *p, int all) {
  uint8_t *gone[BUFPOOL_MAX];
  int ngone = 0;
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < p->n;) {
    if (p->v[i].aged || all) {
      gone[ngone++] = p->v[i].p;
      p->v[i] = p->v[--p->n];
    } else {
      p->v[i++].aged = 1;
    }
  }
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < ngone; i++) free(gone[i]); /* outside the lock: workers wait on it */
}
