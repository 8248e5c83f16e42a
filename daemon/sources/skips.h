/*
 * skips.h -- the samples of a dataset that were skipped (replaced in their
 * batches by the next one that decodes, PROTOCOL.md "What a batch is"),
 * each with its reason, so that a user can fix or remove them: listed in
 * the daemon's report (`bfeed stats --skipped`), counted by reason in
 * /metrics, and appended to the daemon's `skipped_log` file.
 * Called by pipeline/batch.c (on the worker threads) and serve/stats.c,
 * serve/metrics.c (on the event loop); every call is thread-safe.
 */
#ifndef BFEED_SKIPS_H
#define BFEED_SKIPS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Why a sample was skipped. */
typedef enum {
  SKIPS_CORRUPT = 0,    /* its bytes do not decode (a truncated or damaged file, an unknown format) */
  SKIPS_TOO_LARGE = 1,  /* over max_pixels or max_decode_memory, from its header */
  SKIPS_UNREADABLE = 2, /* its file or record could not be read (permissions, a bad record) */
  SKIPS_REASONS = 3
} skips_reason;

/* "corrupt", "too_large", "unreadable" (the metrics' reason label). */
const char *skips_reason_name(int reason);

#define SKIPS_KEPT 1024 /* entries listed per dataset; the counts and the log have them all */
#define SKIPS_NAME_MAX 256
#define SKIPS_WHY_MAX 320

typedef struct skips_entry {
  uint32_t sample; /* dataset index */
  uint8_t reason;  /* skips_reason */
  char name[SKIPS_NAME_MAX], why[SKIPS_WHY_MAX];
} skips_entry;

typedef struct skips {
  pthread_mutex_t mu;
  skips_entry *e; /* the SKIPS_KEPT of lowest index, in index order */
  size_t n;
  uint64_t count[SKIPS_REASONS]; /* every sample skipped, once each */
} skips;

/* A new, empty list (NULL when out of memory); skips_free(NULL) is a no-op. */
skips *skips_new(void);
void skips_free(skips *s);
/* Sample `sample` of dataset `dataset` (name: its file or record) was
 * found bad for `reason` (why: the decoder's message). Called once per
 * sample (dataset_mark_bad's first time). s may be NULL. */
void skips_add(skips *s, const char *dataset, uint32_t sample, int reason, const char *name, const char *why);
/* The count for one reason. */
uint64_t skips_count(skips *s, int reason);
/* Up to max entries from the `from`-th on, copied into out: how many. */
size_t skips_list(skips *s, size_t from, skips_entry *out, size_t max);

/* The daemon's skipped_log: each skipped sample appended as a line
 * "TIME<TAB>DATASET<TAB>INDEX<TAB>REASON<TAB>NAME<TAB>MESSAGE" (TIME in
 * ISO 8601 UTC; tabs and newlines in NAME and MESSAGE written as spaces).
 * NULL or "" closes it. 0, or a negative code with the reason in err. */
int skips_log_open(const char *path, char *err, size_t errlen);

#endif
