/*
 * bufcache.h -- frame buffers kept for reuse, on both sides of the wire.
 * Called by the daemon's batch jobs and libbfeed's reader thread.
 *
 * A batch frame is tens of megabytes. Allocating each one fresh costs more
 * in page faults (the kernel zeroing new pages) than building or reading
 * the batch, so both the daemon (frames it builds) and the client (frames
 * it receives) give buffers back here and take them again for the next
 * batch. Thread-safe and reference counted: a client's batches may outlive
 * the client, each holds a reference.
 */
#ifndef BFEED_BUFCACHE_H
#define BFEED_BUFCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bufcache bufcache;

/* A cache keeping at most `keep` free buffers. NULL when out of memory. */
bufcache *bufcache_new(int keep);
bufcache *bufcache_ref(bufcache *p);
void bufcache_unref(bufcache *p);

/* A 64-byte aligned buffer of at least need bytes, reused when one of up
 * to twice that size is free; *cap gets its size. NULL when out of memory. */
uint8_t *bufcache_get(bufcache *p, size_t need, size_t *cap);
/* Give a buffer back (freed when the cache is full or NULL). NULL buf: nothing. */
void bufcache_put(bufcache *p, uint8_t *buf, size_t cap);
/* Bytes of the free buffers the cache keeps. */
size_t bufcache_idle_bytes(bufcache *p);
/* Free the buffers nobody has taken since the previous trim (all of them
 * when `all`): called every few seconds, a cache shrinks to what is in use
 * once its users leave. */
void bufcache_trim(bufcache *p, int all);

#endif
