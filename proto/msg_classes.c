/* msg_classes.c -- CLASSES_REQ and CLASSES, a dataset's class names page
 * by page (see msg.h, PROTOCOL.md "Class names"). */
#include <string.h>

#include "msg.h"
#include "names.h"
#include "wire.h"

void msg_classes_req_encode(wbuf *w, const msg_classes_req *m) { wbuf_u32(w, m->first); }

int msg_classes_req_decode(const void *p, size_t n, msg_classes_req *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->first = rbuf_u32(&r);
  /* A later client may add fields: what follows is not ours to judge. */
  return r.failed ? names_fail(err, errlen, BFEED_EPROTO, "CLASSES_REQ truncated (4 bytes: u32 first)") : 0;
}

uint32_t msg_classes_encode(wbuf *w, uint32_t total, uint32_t first, const char *const *names, uint32_t avail,
                            size_t max) {
  wbuf_u32(w, total);
  wbuf_u32(w, first);
  size_t at = w->len;
  wbuf_u32(w, 0); /* count, once known */
  uint32_t count = 0;
  size_t room = max > MSG_CLASSES_HEAD ? max - MSG_CLASSES_HEAD : 0;
  for (; count < avail; count++) {
    size_t len = strlen(names[count]);
    if (count == 0 && room >= 2 && len > room - 2) len = room - 2; /* a page holds a name at least: progress */
    if (len > UINT16_MAX) len = UINT16_MAX;
    if (room < 2 + len) break;
    wbuf_u16(w, (uint16_t)len);
    wbuf_bytes(w, names[count], len);
    room -= 2 + len;
  }
  if (!w->failed) wire_put32(w->data + at, count);
  return count;
}

int msg_classes_decode(const void *p, size_t n, msg_classes *m, char *err, size_t errlen) {
  rbuf r;
  rbuf_init(&r, p, n);
  m->total = rbuf_u32(&r);
  m->first = rbuf_u32(&r);
  m->count = rbuf_u32(&r);
  if (r.failed) return names_fail(err, errlen, BFEED_EPROTO, "CLASSES truncated (12 bytes: total, first, count)");
  if (m->first > m->total || m->count > m->total - m->first)
    return names_fail(err, errlen, BFEED_EPROTO, "CLASSES names more classes than its total");
  if (m->count == 0 && m->first < m->total)
    return names_fail(err, errlen, BFEED_EPROTO, "CLASSES holds no name although names remain");
  m->names = (const uint8_t *)p + MSG_CLASSES_HEAD;
  for (uint32_t i = 0; i < m->count; i++) {
    uint16_t len = rbuf_u16(&r);
    const uint8_t *s = rbuf_bytes(&r, len);
    if (!s) return names_fail(err, errlen, BFEED_EPROTO, "CLASSES truncated in its names");
    if (memchr(s, 0, len)) return names_fail(err, errlen, BFEED_EPROTO, "CLASSES has a name holding a NUL byte");
  }
  if (rbuf_left(&r) != 0) return names_fail(err, errlen, BFEED_EPROTO, "CLASSES has bytes after its names");
  m->names_len = n - MSG_CLASSES_HEAD;
  return 0;
}

const char *msg_classes_name(const msg_classes *m, size_t *off, size_t *len) {
  *len = wire_get16(m->names + *off);
  const char *s = (const char *)m->names + *off + 2;
  *off += 2 + *len;
  return s;
}
