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

/* The length of the valid UTF-8 sequence at p (n bytes left), 0 if none
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t log_utf8_len(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!len || n < len) return 0;
  for (size_t i = 1; i < len; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
      (c == 0xf4 && p[1] > 0x8f))
    return 0;
  if (c == 0xc2 && p[1] <= 0x9f) return 0; /* U+0080..U+009F: C1 controls (CSI is U+009B) */
  return len;
}

size_t log_escape(const char *in, char *out, size_t cap, const char *also) {
  const unsigned char *p = (const unsigned char *)in;
  size_t n = strlen(in), o = 0;
  if (cap == 0) return 0;
  for (size_t i = 0; i < n;) {
    size_t len = p[i] >= 0x80 ? log_utf8_len(p + i, n - i) : 1;
    int plain = len > 1 || (len == 1 && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && !(also && strchr(also, p[i])));
    if (plain) {
      if (o + len >= cap) break;
      memcpy(out + o, p + i, len);
      o += len;
      i += len;
      continue;
    }
    if (o + 4 >= cap) break;
    o += p[i] == '\\' ? (size_t)snprintf(out + o, cap - o, "\\\\") : (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
    i++;
  }
  out[o] = 0;
  return o;
}

void log_write(const logger *lg, int level, const char *fmt, ...) {
  if (level > __atomic_load_n(&lg->level, __ATOMIC_RELAXED)) return;
  char raw[1024], msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  log_escape(raw, msg, sizeof msg, NULL);
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
