/* report.c -- see report.h */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "names.h"
#include "wire.h"

static void put_str(wbuf *w, const char *s, size_t max, int wide) {
  size_t n = strnlen(s, max - 1);
  if (wide) wbuf_u16(w, (uint16_t)n);
  else wbuf_u8(w, (uint8_t)n);
  wbuf_bytes(w, s, n);
}

/* Patch a u32 written earlier at offset at. */
static void patch32(wbuf *w, size_t at, uint32_t v) {
  if (!w->failed) wire_put32(w->data + at, v);
}

void report_begin(report_writer *r, wbuf *w) {
  memset(r, 0, sizeof *r);
  r->w = w;
  r->count_at = w->len;
  wbuf_u32(w, 0);
  r->group_count_at = (size_t)-1;
}

static void close_group(report_writer *r) {
  if (r->group_count_at != (size_t)-1) patch32(r->w, r->group_count_at, r->ncounters);
}

void report_group_begin(report_writer *r, const char *kind, const char *id) {
  close_group(r);
  put_str(r->w, kind, REPORT_NAME_MAX, 0);
  put_str(r->w, id, REPORT_ID_MAX, 1);
  r->group_count_at = r->w->len;
  wbuf_u32(r->w, 0);
  r->ncounters = 0;
  r->ngroups++;
}

void report_counter_put(report_writer *r, const char *name, uint64_t value) {
  if (r->ncounters >= REPORT_MAX_COUNTERS) return;
  put_str(r->w, name, REPORT_NAME_MAX, 0);
  wbuf_u64(r->w, value);
  r->ncounters++;
}

void report_end(report_writer *r) {
  close_group(r);
  patch32(r->w, r->count_at, r->ngroups);
}

static int get_str(rbuf *r, char *dst, size_t cap, int wide, int allow_empty) {
  size_t n = wide ? rbuf_u16(r) : rbuf_u8(r);
  const uint8_t *p = rbuf_bytes(r, n);
  if (!p || n >= cap || (!allow_empty && n == 0) || memchr(p, 0, n)) return -1;
  memcpy(dst, p, n);
  dst[n] = 0;
  return 0;
}

int report_decode(const void *p, size_t len, report_group **out, size_t *n, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, len);
  *out = NULL;
  *n = 0;
  uint32_t ng = rbuf_u32(&r);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "report truncated");
  if (ng > REPORT_MAX_GROUPS) return names_fail(err, errlen, BFEED_ETOOBIG, "report has too many groups");
  /* Each group needs at least 7 bytes: refuse counts the payload can't hold
   * before allocating for them. */
  if ((size_t)ng * 7 > rbuf_left(&r)) return names_fail(err, errlen, BFEED_EPROTO, "report group count exceeds its size");
  report_group *g = calloc(ng ? ng : 1, sizeof *g);
  if (!g) return names_fail(err, errlen, BFEED_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < ng; i++) {
    if (get_str(&r, g[i].kind, sizeof g[i].kind, 0, 0) < 0 || get_str(&r, g[i].id, sizeof g[i].id, 1, 1) < 0)
      goto bad;
    uint32_t nc = rbuf_u32(&r);
    if (r.failed || nc > REPORT_MAX_COUNTERS) goto bad;
    for (uint32_t k = 0; k < nc; k++) {
      if (get_str(&r, g[i].counters[k].name, REPORT_NAME_MAX, 0, 0) < 0) goto bad;
      g[i].counters[k].value = rbuf_u64(&r);
    }
    if (r.failed) goto bad;
    g[i].ncounters = nc;
  }
  if (rbuf_left(&r) != 0) goto bad;
  *out = g;
  *n = ng;
  return 0;
bad:
  free(g);
  return names_fail(err, errlen, BFEED_EPROTO, "malformed report");
}
