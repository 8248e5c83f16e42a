/*
 * bufpool.h -- frame buffers kept for reuse, on both sides of the wire.
 * Called by the daemon's batch jobs and libbfeed's reader thread.
 *
 * A batch frame is tens of megabytes. Allocating each one fresh costs more
 * in page faults (the kernel zeroing new pages) than building or reading
 * the batch, so both the daemon (frames it builds) and the client (frames
 * it receives) give buffers back here and take them again for the next
 * batch. Thread-safe and reference counted: a client's batches may outlive
 * the client, each holds a reference.
 */
#ifndef BFEED_BUFPOOL_H
#define BFEED_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct bufpool bufpool;

/* A pool keeping at most `keep` free buffers. NULL when out of memory. */
bufpool *bufpool_new(int keep);
bufpool *bufpool_ref(bufpool *p);
void bufpool_unref(bufpool *p);

/* A 64-byte aligned buffer of at least need bytes, reused when one of up
 * to twice that size is free; *cap gets its size. NULL when out of memory. */
uint8_t *bufpool_get(bufpool *p, size_t need, size_t *cap);
/* Give a buffer back (freed when the pool is full or NULL). NULL buf: nothing. */
void bufpool_put(bufpool *p, uint8_t *buf, size_t cap);
/* Bytes of the free buffers the pool keeps. */
size_t bufpool_idle_bytes(bufpool *p);
/* Free the buffers nobody has taken since the previous trim (all of them
 * when `all`): called every few seconds, a pool shrinks to what is in use
 * once its users leave. */
void bufpool_trim(bufpool *p, int all);

#endif
