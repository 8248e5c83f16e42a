/*
 * decode_mem.h -- the memory image decodes take: one limit (max_decode_memory), one count.
 * Called by the decoders (jpeg_decode.c, image_decode.c), sample.c (its resize buffers), and
 * read by flow.c and stats.c (the count is part of what max_memory holds).
 *
 * A small file can describe a huge image: a 0.5 MB PNG of 13000 x 13000
 * zeros, a progressive JPEG whose coefficients fill gigabytes. What a
 * decode will need is known from the header (image_decode.c works it out
 * per format, for the worst crop), so an image over the limit is refused
 * before anything its size is allocated, and the sample is skipped as a
 * file the daemon will not decode, naming the limit.
 *
 * max_memory bounds decodes too: one decode may take no more than it (the
 * smaller of the two limits is the one that refuses), and decodes run at
 * once only while the memory counted here and the next one's need fit it
 * together; a decode that does not fit waits for the others to finish (it
 * never waits for none: alone, a decode always runs). 8 PNGs of 250 MB
 * each on 8 workers under a max_memory of 256M took 796 MB at once.
 *
 * Counted, in every thread together: the decoders' pixel buffers and the
 * resampler's (decode_mem_buf, by capacity, as long as they are kept), the
 * libraries' own working memory while a decode runs (an estimate each
 * library's caller takes with decode_mem_take and gives back with
 * decode_mem_put). A buffer above DECODE_MEM_KEEP is mapped on its own and
 * unmapped after its image (decode_mem_trim), so that one large image does
 * not leave its memory behind in a worker: the pages go back to the system
 * at once, which malloc does not promise.
 */
#ifndef BFEED_DECODE_MEM_H
#define BFEED_DECODE_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Buffers up to this size are kept from one image to the next (a worker
 * stops allocating once it has seen its largest ordinary image); larger
 * ones are given back after each image. 16 MiB: a 2048 x 2048 RGBX
 * rectangle. */
#define DECODE_MEM_KEEP (16u << 20)

/* The most one decode may take (max_decode_memory), and what all decodes
 * at once may take (max_memory); 0 = no limit. Process-wide, set before
 * workers decode and at a reload. */
void decode_mem_set_limit(uint64_t bytes);
void decode_mem_set_budget(uint64_t bytes);
uint64_t decode_mem_limit(void);
/* Bytes counted now, all threads: the daemon's decode_memory_bytes. */
uint64_t decode_mem_held(void);

/* 0 if a decode of `need` bytes fits the limits; else BFEED_ELIMIT with
 * "WHAT of WxH needs N bytes to decode, over max_decode_memory (L)" (or
 * max_memory, when that is the smaller). */
int decode_mem_check(const char *what, int width, int height, uint64_t need, char *err, size_t errlen);

/* Around a decode that will take `need` bytes more (its buffers and the
 * library's): enter waits while other decodes run and the count, the needs
 * of those not yet counted and this need are over max_memory; settle once
 * the decode's buffers are counted (its need is no longer a promise), and
 * leave after they are given back or kept. Enter, settle, leave: each once. */
void decode_mem_enter(uint64_t need);
void decode_mem_settle(uint64_t need);
void decode_mem_leave(void);

/* A library's working memory for the decode in progress: *held (the
 * decoder's own record, 0 when none) grows by bytes, and so does the count,
 * until decode_mem_put gives all of *held back. */
void decode_mem_take(uint64_t *held, uint64_t bytes);
void decode_mem_put(uint64_t *held);

/* A grow-only buffer of one worker, counted by its capacity. Zero-initialise. */
typedef struct decode_mem_buf {
  uint8_t *p;   /* NULL, or cap bytes: malloc's up to DECODE_MEM_KEEP, mapped above */
  size_t cap;
} decode_mem_buf;

/* At least n bytes (the old contents are not kept), or NULL when out of
 * memory (the buffer is then empty). */
void *decode_mem_reserve(decode_mem_buf *b, size_t n);
/* After an image: a buffer over DECODE_MEM_KEEP goes back. */
void decode_mem_trim(decode_mem_buf *b);

/* Give it back whatever its size. */
void decode_mem_release(decode_mem_buf *b);

#endif
