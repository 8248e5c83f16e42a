/* fwriter.c -- see fwriter.h */
#include "fwriter.h"

#include "bfeed_types.h"
#include "frame.h"
#include "names.h"

void fwriter_init(fwriter *f, void *mem, size_t cap) {
  wbuf_init_fixed(&f->w, mem, cap);
  wbuf_grow(&f->w, FRAME_HEADER_SIZE);
}

uint8_t *fwriter_append(fwriter *f, size_t n) { return wbuf_grow(&f->w, n); }

uint8_t *fwriter_room(fwriter *f, size_t *room) {
  *room = f->w.failed ? 0 : f->w.cap - f->w.len;
  return f->w.failed ? NULL : f->w.data + f->w.len;
}

void fwriter_commit(fwriter *f, size_t n) { wbuf_grow(&f->w, n); }

size_t fwriter_payload_len(const fwriter *f) {
  return f->w.len > FRAME_HEADER_SIZE ? f->w.len - FRAME_HEADER_SIZE : 0;
}

int fwriter_finish(fwriter *f, int type, uint32_t stream, char *err, size_t errlen) {
  if (f->w.failed) {
    return names_fail(err, errlen, BFEED_ETOOBIG, "frame does not fit the capacity computed for it");
  }
  size_t len = fwriter_payload_len(f);
  if (len > FRAME_MAX_PAYLOAD) {
    return names_fail(err, errlen, BFEED_ETOOBIG, "frame payload exceeds FRAME_MAX_PAYLOAD");
  }
  frame_header h;
  frame_header_init(&h, type, stream, f->w.data + FRAME_HEADER_SIZE, (uint32_t)len);
  frame_header_encode(&h, f->w.data);
  return 0;
}
