/*
 * log.h -- the daemon's log lines, on stderr.
 * Called by every daemon module that reports: main.c owns the logger and passes it down.
 *
 * Under journald (JOURNAL_STREAM set) each line starts with a syslog
 * priority prefix such as "<4>" so the journal records the level; elsewhere
 * lines carry a UTC timestamp and a level word. A logger is a plain struct
 * owned by main() and passed to whoever logs; one fprintf per line keeps
 * lines from different threads whole.
 *
 * Log lines carry strings no one vets: file names, URLs, config values,
 * what clients send. Every line goes through log_escape as it is written,
 * so that none can forge a line (a newline in a file name), drive a
 * terminal (ESC, C1 controls) or leave invalid UTF-8 for a reader to trip
 * on; the skipped-samples log escapes each field with it too.
 */
#ifndef BFEED_LOG_H
#define BFEED_LOG_H

#include <stddef.h>

enum log_level { LOG_ERR = 3, LOG_WARN = 4, LOG_NOTICE = 5, LOG_INFO = 6, LOG_DEBUG = 7 };

typedef struct logger {
  int level;   /* lines above this priority number are dropped; workers read it
                  while SIGHUP may change it: only through log_set_level */
  int journal; /* 1: emit "<N>" prefixes for journald */
} logger;

/* level from the environment's JOURNAL_STREAM and the given level. */
void log_init(logger *lg, int level);
/* Change the level while other threads log (a reload). */
void log_set_level(logger *lg, int level);
/* "error", "warning", "notice", "info", "debug" -> level, or -1. */
int log_level_parse(const char *name);
void log_write(const logger *lg, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* in into out (cap bytes, always terminated; cut short at a whole escape):
 * C0 controls, DEL, C1 controls and bytes that are not valid UTF-8 as
 * \xHH, a backslash as \\, and the bytes of `also` (NULL: none; the
 * skipped log's "\t") as \xHH; valid UTF-8 passes as it is. The length
 * written. */
size_t log_escape(const char *in, char *out, size_t cap, const char *also);

#define log_err(lg, ...) log_write((lg), LOG_ERR, __VA_ARGS__)
#define log_warn(lg, ...) log_write((lg), LOG_WARN, __VA_ARGS__)
#define log_info(lg, ...) log_write((lg), LOG_INFO, __VA_ARGS__)
#define log_debug(lg, ...) log_write((lg), LOG_DEBUG, __VA_ARGS__)

#endif
