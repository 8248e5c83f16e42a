/*
 * report.h -- the daemon-wide statistics report (STATS on stream 0).
 * Called by the daemon's server (encode) and libbfeed's stats.c (decode).
 *
 * A list of groups, each a kind ("daemon", "dataset", "stream"), an id
 * (the dataset name, "client/stream" for a stream) and named counters:
 *
 *   u32 ngroups (<= REPORT_MAX_GROUPS)
 *   per group: u8 kind length, kind; u16 id length, id;
 *              u32 ncounters (<= REPORT_MAX_COUNTERS);
 *              per counter: u8 name length (1..63), name, u64 value
 */
#ifndef BFEED_REPORT_H
#define BFEED_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tlv.h"

#define REPORT_MAX_GROUPS 4096
#define REPORT_MAX_COUNTERS 64
#define REPORT_NAME_MAX 64 /* with NUL */
#define REPORT_ID_MAX 256  /* with NUL */

typedef struct report_counter {
  char name[REPORT_NAME_MAX];
  uint64_t value;
} report_counter;

typedef struct report_group {
  char kind[REPORT_NAME_MAX];
  char id[REPORT_ID_MAX];
  size_t ncounters;
  report_counter counters[REPORT_MAX_COUNTERS];
} report_group;

/* Writing: begin, then per group a header and its counters, then end.
 * The group count is patched in at the end. */
typedef struct report_writer {
  wbuf *w;
  size_t count_at, group_count_at;
  uint32_t ngroups, ncounters;
} report_writer;
void report_begin(report_writer *r, wbuf *w);
void report_group_begin(report_writer *r, const char *kind, const char *id);
void report_counter_put(report_writer *r, const char *name, uint64_t value);
void report_end(report_writer *r);

/* Parse a report into *out (malloc'd array of *n groups; free() it).
 * 0, or BFEED_EPROTO/ETOOBIG/ENOMEM with a static reason. */
int report_decode(const void *p, size_t len, report_group **out, size_t *n, char *err, size_t errlen);

#endif
