/* skips.c -- see skips.h */
#include "skips.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfeed_types.h"
#include "log.h"

static const char *const skips_names[SKIPS_REASONS] = {"corrupt", "too_large", "unreadable"};

/* The log, shared by every dataset: opened at start and on reload (the
 * event loop), written by the workers, each line under the lock. */
static pthread_mutex_t skips_log_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *skips_log;

const char *skips_reason_name(int reason) {
  return reason >= 0 && reason < SKIPS_REASONS ? skips_names[reason] : "unknown";
}

skips *skips_new(void) {
  skips *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (!(s->e = calloc(SKIPS_KEPT, sizeof *s->e))) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->mu, NULL);
  return s;
}

void skips_free(skips *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free(s->e);
  free(s);
}

/* src into dst (cap bytes): one field of a line of the log, escaped as
 * the daemon's log lines are (log.h), tabs too (they separate fields). */
static void skips_field(char *dst, size_t cap, const char *src) { log_escape(src, dst, cap, "\t"); }

static void skips_log_line(const char *dataset, uint32_t sample, int reason, const char *name, const char *why) {
  pthread_mutex_lock(&skips_log_mu);
  if (skips_log) {
    char when[32], d[256], n[4096], w[4096];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    skips_field(d, sizeof d, dataset);
    skips_field(n, sizeof n, name);
    skips_field(w, sizeof w, why);
    fprintf(skips_log, "%s\t%s\t%u\t%s\t%s\t%s\n", when, d, sample, skips_reason_name(reason), n, w);
    fflush(skips_log); /* a line at a time: the file is read while the daemon runs */
  }
  pthread_mutex_unlock(&skips_log_mu);
}

void skips_add(skips *s, const char *dataset, uint32_t sample, int reason, const char *name, const char *why) {
  if (reason < 0 || reason >= SKIPS_REASONS) reason = SKIPS_CORRUPT;
  if (s) {
    pthread_mutex_lock(&s->mu);
    s->count[reason]++;
    /* Kept in index order, the SKIPS_KEPT lowest: a listing users read and
     * diff, the same whatever order the workers met them in. */
    size_t at = s->n;
    while (at > 0 && s->e[at - 1].sample > sample) at--;
    if (at < SKIPS_KEPT) {
      size_t moved = s->n < SKIPS_KEPT ? s->n - at : SKIPS_KEPT - 1 - at;
      memmove(s->e + at + 1, s->e + at, moved * sizeof *s->e);
      if (s->n < SKIPS_KEPT) s->n++;
      skips_entry *e = &s->e[at];
      e->sample = sample;
      e->reason = (uint8_t)reason;
      skips_field(e->name, sizeof e->name, name);
      skips_field(e->why, sizeof e->why, why);
    }
    pthread_mutex_unlock(&s->mu);
  }
  skips_log_line(dataset, sample, reason, name, why);
}

uint64_t skips_count(skips *s, int reason) {
  if (!s || reason < 0 || reason >= SKIPS_REASONS) return 0;
  pthread_mutex_lock(&s->mu);
  uint64_t n = s->count[reason];
  pthread_mutex_unlock(&s->mu);
  return n;
}

size_t skips_list(skips *s, size_t from, skips_entry *out, size_t max) {
  if (!s) return 0;
  pthread_mutex_lock(&s->mu);
  size_t n = from < s->n ? s->n - from : 0;
  if (n > max) n = max;
  memcpy(out, s->e + from, n * sizeof *out);
  pthread_mutex_unlock(&s->mu);
  return n;
}

int skips_log_open(const char *path, char *err, size_t errlen) {
  FILE *f = NULL;
  if (path && path[0] && !(f = fopen(path, "a"))) {
    int e = errno;
    snprintf(err, errlen, "skipped_log %s: %s", path, strerror(e));
    return BFEED_EIO;
  }
  pthread_mutex_lock(&skips_log_mu);
  FILE *old = skips_log;
  skips_log = f;
  pthread_mutex_unlock(&skips_log_mu);
  if (old) fclose(old);
  return 0;
}
