/* tlv.c -- write buffer (growable or fixed), bounded read buffer, TLV items. */
#include "tlv.h"

#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "wire.h"

void wbuf_init(wbuf *w) { memset(w, 0, sizeof *w); }

void wbuf_init_fixed(wbuf *w, void *mem, size_t cap) {
  memset(w, 0, sizeof *w);
  w->data = mem;
  w->cap = mem ? cap : 0;
  w->fixed = 1;
}

void wbuf_free(wbuf *w) {
  if (!w->fixed) free(w->data);
  memset(w, 0, sizeof *w);
}

uint8_t *wbuf_reserve(wbuf *w, size_t n) {
  if (w->failed) return NULL;
  if (n > SIZE_MAX / 2 - w->len) {
    w->failed = 1;
    return NULL;
  }
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    uint8_t *d = w->fixed ? NULL : realloc(w->data, cap);
    if (!d) {
      w->failed = 1;
      return NULL;
    }
    w->data = d;
    w->cap = cap;
  }
  return w->data + w->len;
}

uint8_t *wbuf_grow(wbuf *w, size_t n) {
  uint8_t *p = wbuf_reserve(w, n);
  if (p) w->len += n;
  return p;
}

void wbuf_u8(wbuf *w, uint8_t v) {
  uint8_t *p = wbuf_grow(w, 1);
  if (p) *p = v;
}
void wbuf_u16(wbuf *w, uint16_t v) {
  uint8_t *p = wbuf_grow(w, 2);
  if (p) wire_put16(p, v);
}
void wbuf_u32(wbuf *w, uint32_t v) {
  uint8_t *p = wbuf_grow(w, 4);
  if (p) wire_put32(p, v);
}
void wbuf_u64(wbuf *w, uint64_t v) {
  uint8_t *p = wbuf_grow(w, 8);
  if (p) wire_put64(p, v);
}
void wbuf_bytes(wbuf *w, const void *src, size_t n) {
  uint8_t *p = wbuf_grow(w, n);
  if (p && n) memcpy(p, src, n);
}

uint8_t *wbuf_take(wbuf *w, size_t *len) {
  uint8_t *d = w->data;
  *len = w->len;
  memset(w, 0, sizeof *w);
  return d;
}

void rbuf_init(rbuf *r, const void *p, size_t len) {
  r->p = p;
  r->len = len;
  r->off = 0;
  r->failed = 0;
}

const uint8_t *rbuf_bytes(rbuf *r, size_t n) {
  if (r->failed || n > r->len - r->off) {
    r->failed = 1;
    return NULL;
  }
  const uint8_t *p = r->p + r->off;
  r->off += n;
  return p;
}

uint8_t rbuf_u8(rbuf *r) {
  const uint8_t *p = rbuf_bytes(r, 1);
  return p ? p[0] : 0;
}
uint16_t rbuf_u16(rbuf *r) {
  const uint8_t *p = rbuf_bytes(r, 2);
  return p ? wire_get16(p) : 0;
}
uint32_t rbuf_u32(rbuf *r) {
  const uint8_t *p = rbuf_bytes(r, 4);
  return p ? wire_get32(p) : 0;
}
uint64_t rbuf_u64(rbuf *r) {
  const uint8_t *p = rbuf_bytes(r, 8);
  return p ? wire_get64(p) : 0;
}

void tlv_put(wbuf *w, uint16_t tag, const void *val, uint32_t len) {
  wbuf_u16(w, tag);
  wbuf_u32(w, len);
  wbuf_bytes(w, val, len);
}
void tlv_put_u8(wbuf *w, uint16_t tag, uint8_t v) { tlv_put(w, tag, &v, 1); }
void tlv_put_u32(wbuf *w, uint16_t tag, uint32_t v) {
  uint8_t b[4];
  wire_put32(b, v);
  tlv_put(w, tag, b, 4);
}
void tlv_put_u64(wbuf *w, uint16_t tag, uint64_t v) {
  uint8_t b[8];
  wire_put64(b, v);
  tlv_put(w, tag, b, 8);
}
void tlv_put_f32s(wbuf *w, uint16_t tag, const float *v, int n) {
  wbuf_u16(w, tag);
  wbuf_u32(w, (uint32_t)n * 4);
  for (int i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &v[i], 4);
    wbuf_u32(w, u);
  }
}
void tlv_put_str(wbuf *w, uint16_t tag, const char *s) { tlv_put(w, tag, s, (uint32_t)strlen(s)); }

int tlv_next(rbuf *r, tlv_item *it) {
  if (rbuf_left(r) == 0) return 0;
  it->tag = rbuf_u16(r);
  it->len = rbuf_u32(r);
  it->val = rbuf_bytes(r, it->len);
  return r->failed ? BFEED_EPROTO : 1;
}

int tlv_u8(const tlv_item *it, uint8_t *v) {
  if (it->len != 1) return BFEED_EPROTO;
  *v = it->val[0];
  return 0;
}
int tlv_u32(const tlv_item *it, uint32_t *v) {
  if (it->len != 4) return BFEED_EPROTO;
  *v = wire_get32(it->val);
  return 0;
}
int tlv_u64(const tlv_item *it, uint64_t *v) {
  if (it->len != 8) return BFEED_EPROTO;
  *v = wire_get64(it->val);
  return 0;
}
int tlv_f32s(const tlv_item *it, float *v, int n) {
  if (it->len != (uint32_t)n * 4) return BFEED_EPROTO;
  for (int i = 0; i < n; i++) {
    uint32_t u = wire_get32(it->val + 4 * i);
    memcpy(&v[i], &u, 4);
  }
  return 0;
}
int tlv_str(const tlv_item *it, char *dst, size_t cap) {
  if (it->len >= cap || memchr(it->val, 0, it->len)) return BFEED_EPROTO;
  memcpy(dst, it->val, it->len);
  dst[it->len] = 0;
  return 0;
}
