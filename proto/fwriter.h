/*
 * fwriter.h -- builds one frame in caller memory whose capacity is fixed up front.
 * Called by the daemon's batch assembly (daemon/pipeline/batch.c); any sender may use it.
 *
 * The sender computes the frame's size before writing (for a BATCH:
 * FRAME_HEADER_SIZE + msg_batch_head_size() + the data's bound), takes that
 * much memory from wherever it likes (a pooled buffer), and writes the
 * payload through the writer. Nothing is ever reallocated: an append past
 * the capacity latches a failure that fwriter_finish reports, so a wrong
 * size computation is an error, never an overrun or a silent copy.
 *
 *     fwriter f;
 *     fwriter_init(&f, mem, cap);            // reserves the 24-byte header
 *     msg_batch_encode_head(&f.w, &m);       // any msg_*_encode writes to f.w
 *     uint8_t *raw = fwriter_append(&f, n);  // n bytes filled in place
 *     size_t room; uint8_t *dst = fwriter_room(&f, &room);
 *     fwriter_commit(&f, zstd_compress(dst, room, ...));
 *     fwriter_finish(&f, FRAME_BATCH, stream, err, sizeof err);  // header + checksum
 *     // the frame is f.w.data[0 .. f.w.len)
 */
#ifndef BFEED_FWRITER_H
#define BFEED_FWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "tlv.h"

typedef struct fwriter {
  wbuf w; /* fixed over the caller's memory; payload encoders write here */
} fwriter;

/* Start a frame at mem, which holds cap bytes (mem NULL or cap below the
 * header: every later call fails and fwriter_finish says so). */
void fwriter_init(fwriter *f, void *mem, size_t cap);
/* Append n bytes to the payload, left for the caller to fill: a pointer to
 * them, or NULL when they do not fit (the failure is latched). */
uint8_t *fwriter_append(fwriter *f, size_t n);
/* The free space after what was written: a pointer to it and its size in
 * *room (0 once failed), for a producer that learns its size as it writes
 * (a compressor); fwriter_commit(f, n) then appends the n bytes it wrote.
 * Committing more than the room fails. */
uint8_t *fwriter_room(fwriter *f, size_t *room);
void fwriter_commit(fwriter *f, size_t n);
/* Payload bytes written so far. */
size_t fwriter_payload_len(const fwriter *f);
/* Fill in the header (type, stream, length, XXH3 checksum of the payload).
 * 0, or BFEED_ETOOBIG when an append did not fit the capacity or the payload
 * exceeds FRAME_MAX_PAYLOAD; err (may be NULL) gets the reason. */
int fwriter_finish(fwriter *f, int type, uint32_t stream, char *err, size_t errlen);

#endif
