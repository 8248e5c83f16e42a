/*
 * single_classes.c -- a single client's bfeed_stream_class_names:
 * CLASSES_REQ from name 0, then from first + count of each answer, until
 * the daemon's total (PROTOCOL.md "Class names"). The reader thread hands
 * each answer over (single_classes_arrived) while a call waits for one. A
 * connection replaced meanwhile starts the list again on the new one, so
 * that the names are one daemon's, never a mix. Locking: single.h.
 */
#include <stdlib.h>
#include <string.h>

#include "single.h"

void single_classes_arrived(single_stream *s, const uint8_t *p, size_t n) {
  if (!s->classes_wanted) return; /* no call waits: nobody would read it */
  free(s->classes);
  s->classes = malloc(n ? n : 1);
  s->classes_len = n;
  if (s->classes) memcpy(s->classes, p, n);
  s->classes_ready = 1; /* also without memory for it: the call says so */
}

static void single_classes_enc(wbuf *w, const void *m) { msg_classes_req_encode(w, m); }

/* The page that came for *first added to out, *first moved past it; the
 * first page says the total, which later ones must repeat. */
static int single_classes_page(single_stream *s, uint32_t *first, uint32_t *total, api_names *out, char *err,
                               size_t errlen) {
  msg_classes m;
  char why[MSG_ERROR_MAX];
  if (!s->classes)
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %zu-byte CLASSES frame", s->classes_len);
  if (msg_classes_decode(s->classes, s->classes_len, &m, why, sizeof why) < 0) /* the reader checked it */
    return api_err(err, errlen, BFEED_EINTERNAL, "a CLASSES frame checked once fails again: %s", why);
  if (m.first != *first)
    return api_err(err, errlen, BFEED_EPROTO, "the daemon sent class names from %u where %u were asked for", m.first,
                   *first);
  if (*first == 0 && m.total != 0 && m.total != s->base.info.classes)
    return api_err(err, errlen, BFEED_EPROTO, "the daemon names %u classes of a dataset it opened with %u", m.total,
                   s->base.info.classes);
  if (*first != 0 && m.total != *total)
    return api_err(err, errlen, BFEED_EPROTO, "the daemon's count of class names went from %u to %u", *total,
                   m.total);
  *total = m.total;
  size_t off = 0, len;
  for (uint32_t i = 0; i < m.count; i++) {
    const char *name = msg_classes_name(&m, &off, &len);
    int rc = api_names_add(out, name, len, err, errlen);
    if (rc < 0) return rc;
  }
  *first += m.count;
  return 0;
}

int single_classes_get(bfeed_stream *bs, api_names *out, char *err, size_t errlen) {
  single_stream *s = single_stream_of(bs);
  msg_classes_req req = {.first = 0};
  uint32_t total = 0;
  uint64_t gen, names_gen = 0; /* the connection out's names came on (0: none yet) */
  int rc;
  s->classes_wanted = 1;
  for (;;) {
    rc = single_stream_ask(s, FRAME_CLASSES_REQ, single_classes_enc, &req, &s->classes_ready, MSG_FEATURE_CLASSES,
                           "class names", &gen, err, errlen);
    if (rc < 0) break;
    if (rc == 0) continue; /* the connection was replaced before the answer: ask the new one */
    if (names_gen && gen != names_gen) { /* pages of two connections: start again on this one */
      api_names_clear(out);
      req.first = 0;
      names_gen = 0;
      continue;
    }
    names_gen = gen;
    if ((rc = single_classes_page(s, &req.first, &total, out, err, errlen)) < 0 || req.first >= total) break;
  }
  s->classes_wanted = 0;
  free(s->classes);
  s->classes = NULL;
  return rc < 0 ? rc : 0;
}
