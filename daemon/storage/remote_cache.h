/*
 * remote_cache.h -- the bytes of remote objects, read in blocks of 1 MiB
 * through a bounded cache: in memory (least recently used first out), and
 * in a folder when one is set, where blocks outlive the daemon and are
 * shared by every daemon on the host that names the same folder. Called by
 * storage_remote.c's reads; remote_http.c fetches what is missing.
 *
 * A block is named by its object's URL, ETag and size and its number, so a
 * changed object never reads an old block. A block on disk is written to a
 * temporary file and renamed (a reader sees all of it or none), carries a
 * checksum (a torn or damaged file is dropped and fetched again), and
 * the folder is trimmed, oldest use first, when it grows past its bound.
 *
 * Reads fetch with If-Match on the ETag: an object that changed since it
 * was listed fails the read with BFEED_EDATASET and sets its `changed`.
 * Two readers of the same missing block wait on one fetch. Read-ahead:
 * `parallel` threads fetch the blocks a caller announced
 * (remote_cache_prefetch: a batch's samples) and, when an object is read
 * in order, the next blocks.
 */
#ifndef BFEED_REMOTE_CACHE_H
#define BFEED_REMOTE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "remote_http.h"

#define REMOTE_CACHE_BLOCK (1u << 20)
#define REMOTE_CACHE_READAHEAD 4 /* blocks ahead of an object read in order */

typedef struct remote_cache_cfg {
  const char *dir;    /* a folder for blocks, or NULL: memory only */
  uint64_t max_bytes; /* the bound: of memory, or of the folder (then memory holds 64 MiB at most) */
  int parallel;       /* read-ahead threads, 1..64 */
  remote_http_opts http;
} remote_cache_cfg;

#define REMOTE_CACHE_MAX_DEFAULT (256ull << 20)
#define REMOTE_CACHE_PARALLEL_DEFAULT 8

/* One object as listed or stat'ed: what every read of it is checked
 * against. The caller (storage_remote.c) owns it; it must outlive reads. */
typedef struct remote_object {
  const char *url;         /* to fetch (encoded) */
  const char *what;        /* in messages */
  const remote_auth *auth; /* NULL: unsigned */
  uint64_t size;
  char etag[128];
  int64_t mtime_s;
  uint64_t id;             /* the blocks' name: url, etag, size hashed */
  int changed;             /* atomic: a fetch found another ETag */
  int64_t last_block;      /* atomic: the last block read, for read-ahead in order */
} remote_object;

/* Settings for the cache (before any read; later calls change the bound
 * and the threads' count for what follows). 0, or BFEED_EDATASET when the
 * folder cannot be made. */
int remote_cache_setup(const remote_cache_cfg *cfg, char *err, size_t errlen);
/* Stop the read-ahead threads and free every block in memory. */
void remote_cache_shutdown(void);

/* Name o's blocks (o->url, etag, size set). */
void remote_cache_object_init(remote_object *o);
/* Up to n bytes of o at off (fewer only past its end). */
int remote_cache_read(remote_object *o, void *buf, size_t n, uint64_t off, size_t *got, char *err, size_t errlen);
/* Ask for o's bytes [off, off + n) ahead of a read: fetched in the
 * background, as threads are free (a full queue drops the hint). */
void remote_cache_prefetch(remote_object *o, uint64_t off, uint64_t n);

typedef struct remote_cache_counters {
  uint64_t hits, misses, disk_hits, prefetched, bytes_memory, bytes_disk, evictions;
} remote_cache_counters;
/* The request settings remote_cache_setup was given (for HEADs and listings too). */
const remote_http_opts *remote_cache_http(void);
void remote_cache_counters_get(remote_cache_counters *out);

#endif
