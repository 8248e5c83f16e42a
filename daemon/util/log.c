/* log.c -- see log.h */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void log_init(logger *lg, int level) {
  lg->level = level;
  lg->journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(logger *lg, int level) { __atomic_store_n(&lg->level, level, __ATOMIC_RELAXED); }

static const char *const level_names[] = {"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"};

int log_level_parse(const char *name) {
  for (int i = 0; i < 8; i++)
    if (strcmp(name, level_names[i]) == 0) return i;
  if (strcmp(name, "warn") == 0) return LOG_WARN;
  return -1;
}

void log_write(const logger *lg, int level, const char *fmt, ...) {
  if (level > __atomic_load_n(&lg->level, __ATOMIC_RELAXED)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (lg->journal) {
    fprintf(stderr, "<%d>%s\n", level, msg);
    return;
  }
  struct timespec ts;
  struct tm tm;
  char when[32];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ldZ bfeedd %s: %s\n", when, ts.tv_nsec / 1000000, level_names[level & 7], msg);
}
