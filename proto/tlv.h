/*
 * tlv.h -- byte buffers for building and parsing message payloads.
 * Called by msg.c and fwriter.c, and by senders that build frames in a wbuf.
 *
 * wbuf grows as it is written (or, from wbuf_init_fixed, stays in the
 * caller's memory) and remembers an allocation failure, or a full fixed
 * buffer, instead of reporting each one; check wbuf.failed once at the end.
 * rbuf reads from a bounded payload and likewise latches `failed` on any
 * read past its end, so a parser reads all fields and checks once: a short
 * payload can never be read beyond.
 *
 * Extensible messages are lists of TLV items: u16 tag, u32 length, value.
 * A tag with TLV_CRITICAL set must be understood by the receiver (it changes
 * what is served); unknown tags without it are skipped. This is how new
 * stream options land without breaking older peers.
 */
#ifndef BFEED_TLV_H
#define BFEED_TLV_H

#include <stddef.h>
#include <stdint.h>

#define TLV_CRITICAL 0x8000u

typedef struct wbuf {
  uint8_t *data;
  size_t len, cap;
  int failed; /* an allocation failed, or a fixed buffer was full: contents are incomplete */
  int fixed;  /* data is the caller's, cap never grows (wbuf_init_fixed) */
} wbuf;

void wbuf_init(wbuf *w);
/* Write into the caller's mem[cap], which is never reallocated or freed: an
 * append that does not fit latches failed (see fwriter.h). */
void wbuf_init_fixed(wbuf *w, void *mem, size_t cap);
void wbuf_free(wbuf *w);
/* Make room for n more bytes; returns a pointer to them or NULL. */
uint8_t *wbuf_reserve(wbuf *w, size_t n);
/* Append n bytes (uninitialised) and return them, or NULL. */
uint8_t *wbuf_grow(wbuf *w, size_t n);
void wbuf_u8(wbuf *w, uint8_t v);
void wbuf_u16(wbuf *w, uint16_t v);
void wbuf_u32(wbuf *w, uint32_t v);
void wbuf_u64(wbuf *w, uint64_t v);
void wbuf_bytes(wbuf *w, const void *p, size_t n);
/* Hand the buffer to the caller (who frees it) and reset w. */
uint8_t *wbuf_take(wbuf *w, size_t *len);

typedef struct rbuf {
  const uint8_t *p;
  size_t len, off;
  int failed; /* a read went past the end */
} rbuf;

void rbuf_init(rbuf *r, const void *p, size_t len);
uint8_t rbuf_u8(rbuf *r);
uint16_t rbuf_u16(rbuf *r);
uint32_t rbuf_u32(rbuf *r);
uint64_t rbuf_u64(rbuf *r);
/* Pointer to the next n bytes, or NULL (and failed set) if fewer remain. */
const uint8_t *rbuf_bytes(rbuf *r, size_t n);
static inline size_t rbuf_left(const rbuf *r) { return r->len - r->off; }

/* TLV items. */
void tlv_put(wbuf *w, uint16_t tag, const void *val, uint32_t len);
void tlv_put_u8(wbuf *w, uint16_t tag, uint8_t v);
void tlv_put_u32(wbuf *w, uint16_t tag, uint32_t v);
void tlv_put_u64(wbuf *w, uint16_t tag, uint64_t v);
void tlv_put_f32s(wbuf *w, uint16_t tag, const float *v, int n);
void tlv_put_str(wbuf *w, uint16_t tag, const char *s);

typedef struct tlv_item {
  uint16_t tag;
  uint32_t len;
  const uint8_t *val;
} tlv_item;

/* Next item: 1 when one was read, 0 at the end, BFEED_EPROTO when an item
 * claims more bytes than remain. */
int tlv_next(rbuf *r, tlv_item *it);
/* Typed readers: 0, or BFEED_EPROTO when the item has the wrong length. */
int tlv_u8(const tlv_item *it, uint8_t *v);
int tlv_u32(const tlv_item *it, uint32_t *v);
int tlv_u64(const tlv_item *it, uint64_t *v);
int tlv_f32s(const tlv_item *it, float *v, int n);
/* Copy a string item into dst (cap bytes with NUL); EPROTO if it does not
 * fit or holds a NUL byte. */
int tlv_str(const tlv_item *it, char *dst, size_t cap);

#endif
