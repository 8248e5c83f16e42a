/* tokenize.c -- see tokenize.h */
#include "tokenize.h"

#include <string.h>

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int is_punct(unsigned char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

void tokenize_init(tokenize_iter *it, const char *text, size_t len, const tokenize_opts *o) {
  it->p = text;
  it->end = text + len;
  it->o = *o;
}

int tokenize_next(tokenize_iter *it, const char **tok, size_t *len) {
  const unsigned char *p = (const unsigned char *)it->p, *end = (const unsigned char *)it->end;
  while (p < end && is_space(*p)) p++;
  if (p == end) {
    it->p = it->end;
    return 0;
  }
  const unsigned char *s = p;
  if (it->o.split_punct && is_punct(*p)) {
    p++;
  } else {
    while (p < end && !is_space(*p) && !(it->o.split_punct && is_punct(*p))) p++;
  }
  *tok = (const char *)s;
  *len = (size_t)(p - s);
  it->p = (const char *)p;
  return 1;
}

/* Small letter of a capital code point in the documented ranges, or the
 * code point itself. */
static unsigned lower_cp(unsigned cp) {
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 0x20;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
  return cp;
}

void tokenize_lower(char *dst, const char *src, size_t len) {
  const unsigned char *s = (const unsigned char *)src;
  unsigned char *d = (unsigned char *)dst;
  size_t i = 0;
  while (i < len) {
    unsigned char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      d[i++] = (unsigned char)(c + 32);
    } else if (c >= 0xC2 && c <= 0xDF && i + 1 < len && (s[i + 1] & 0xC0) == 0x80) {
      /* Every mapped letter is a two-byte sequence and stays one. */
      unsigned cp = lower_cp(((unsigned)(c & 0x1F) << 6) | (s[i + 1] & 0x3F));
      d[i] = (unsigned char)(0xC0 | (cp >> 6));
      d[i + 1] = (unsigned char)(0x80 | (cp & 0x3F));
      i += 2;
    } else {
      d[i++] = c;
    }
  }
}
