/*
 * storage_brace.c -- brace expansion of shard patterns (see
 * storage_brace.h).
 *
 * Two passes: the pattern is cut into groups (the text before each brace,
 * and the brace: a list of items or a range), checked whole, and its
 * names counted and measured before any is made, so that a refused
 * pattern costs nothing and a pattern over the limits is refused before
 * it takes the memory; then the names are made by an odometer over the
 * groups, the last group turning fastest.
 */
#include "storage_brace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "errtext.h"

#define STORAGE_BRACE_DIGITS 18 /* a range's ends: any 18 digits fit in a uint64_t, with room to count */

typedef struct storage_brace_span {
  size_t off, len; /* pattern[off, off + len) */
} storage_brace_span;

typedef struct storage_brace_group {
  storage_brace_span before; /* the text from the previous group's '}' to this '{' */
  size_t open;               /* the '{', for messages */
  int range;
  uint64_t lo, hi; /* a range's ends, as written (lo may be the larger: counting down) */
  int width;       /* a range's zero-padded width; 0: none */
  size_t item0;    /* a list's first item in the items array */
  uint64_t count;  /* names it stands for */
  uint64_t bytes;  /* all of its items' bytes together */
} storage_brace_group;

typedef struct storage_brace_parse {
  const char *p;
  storage_brace_group *g;
  size_t ng;
  storage_brace_span *items;
  size_t nitems;
  storage_brace_span tail; /* the text after the last '}' */
} storage_brace_parse;

/* Where the glob's bracket expression opened at p[i] == '[' ends (its
 * ']'), or 0 when it has none and the '[' is text, as fnmatch(3) reads it:
 * a leading '!' or '^', then a leading ']', is part of the set, and so is
 * a class like [:alpha:] (its ']' does not close the set). */
static size_t storage_brace_bracket(const char *p, size_t i) {
  size_t j = i + 1;
  if (p[j] == '!' || p[j] == '^') j++;
  if (p[j] == ']') j++;
  while (p[j] && p[j] != ']') {
    if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '=' || p[j + 1] == '.')) {
      const char *end = p + j + 2;
      while (*end && !(end[0] == p[j + 1] && end[1] == ']')) end++;
      if (*end) {
        j = (size_t)(end - p) + 2;
        continue;
      }
    }
    j++;
  }
  return p[j] == ']' ? j : 0;
}

/* p[off, off + len) as a range's end: 1 to STORAGE_BRACE_DIGITS digits; 0 or -1. */
static int storage_brace_number(const char *p, size_t len, uint64_t *v) {
  if (len == 0 || len > STORAGE_BRACE_DIGITS) return -1;
  *v = 0;
  for (size_t i = 0; i < len; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    *v = *v * 10 + (uint64_t)(p[i] - '0');
  }
  return 0;
}

/* The bytes of the numbers lo..hi, each printed at least `width` wide: by
 * bands of equal digit counts, not number by number (a pattern of many
 * large ranges is refused by count without a walk over any). */
static uint64_t storage_brace_range_bytes(uint64_t lo, uint64_t hi, int width) {
  uint64_t bytes = 0, band_lo = 0, band_hi = 9;
  for (int d = 1; d <= STORAGE_BRACE_DIGITS && band_lo <= hi; d++) {
    uint64_t a = lo > band_lo ? lo : band_lo, b = hi < band_hi ? hi : band_hi;
    if (a <= b) bytes += (b - a + 1) * (uint64_t)(d > width ? d : width);
    band_lo = band_hi + 1;
    band_hi = band_hi * 10 + 9;
  }
  return bytes;
}

/* The brace g whose text, between its braces, is pattern[off, off + len) and
 * holds no comma: a range, or refused. */
static int storage_brace_range(storage_brace_parse *ps, storage_brace_group *g, size_t off, size_t len, char *err,
                               size_t errlen) {
  const char *t = ps->p + off;
  if (len == 0)
    return errtext_set(err, errlen, BFEED_EDATASET, ps->p, ": empty braces at offset %zu (a list is {a,b}, a range "
                       "{1..9})", g->open);
  const char *dots = NULL;
  for (size_t i = 0; !dots && i + 1 < len; i++)
    if (t[i] == '.' && t[i + 1] == '.') dots = t + i;
  size_t la = dots ? (size_t)(dots - t) : 0, lb = dots ? len - la - 2 : 0;
  if (!dots || storage_brace_number(t, la, &g->lo) < 0 || storage_brace_number(dots + 2, lb, &g->hi) < 0)
    return errtext_set(err, errlen, BFEED_EDATASET, ps->p, ": {%.*s} at offset %zu is neither a list {a,b} nor a "
                       "range of numbers {0..9} (at most %d digits each)", (int)(len < 64 ? len : 64), t, g->open,
                       STORAGE_BRACE_DIGITS);
  g->range = 1;
  /* bash's rule: an end written with a leading zero pads every number to
   * the width of the wider end. */
  if ((la > 1 && t[0] == '0') || (lb > 1 && dots[2] == '0')) g->width = (int)(la > lb ? la : lb);
  uint64_t span = g->lo > g->hi ? g->lo - g->hi : g->hi - g->lo;
  g->count = span + 1;
  /* Over the name limit, storage_brace_fits refuses it by count alone. */
  if (g->count <= STORAGE_BRACE_MAX)
    g->bytes = storage_brace_range_bytes(g->lo < g->hi ? g->lo : g->hi, g->lo < g->hi ? g->hi : g->lo, g->width);
  return 0;
}

/* Cut ps->p into groups; 0, or the message of what is wrong. */
static int storage_brace_cut(storage_brace_parse *ps, char *err, size_t errlen) {
  const char *p = ps->p;
  size_t n = strlen(p), text = 0, item = 0;
  storage_brace_group *g = NULL;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '[') {
      size_t e = storage_brace_bracket(p, i);
      if (e) i = e; /* the glob's: braces and commas in it are text */
    } else if (p[i] == '{') {
      if (g)
        return errtext_set(err, errlen, BFEED_EDATASET, p, ": '{' at offset %zu is inside the braces opened at "
                           "offset %zu (braces do not nest)", i, g->open);
      g = &ps->g[ps->ng++];
      memset(g, 0, sizeof *g);
      g->before = (storage_brace_span){text, i - text};
      g->open = i;
      g->item0 = ps->nitems;
      item = i + 1;
    } else if (p[i] == ',' && g) {
      ps->items[ps->nitems++] = (storage_brace_span){item, i - item};
      item = i + 1;
    } else if (p[i] == '}') {
      if (!g) return errtext_set(err, errlen, BFEED_EDATASET, p, ": '}' at offset %zu closes no '{'", i);
      if (ps->nitems > g->item0) { /* a list: its last item */
        ps->items[ps->nitems++] = (storage_brace_span){item, i - item};
        g->count = ps->nitems - g->item0;
        for (size_t k = g->item0; k < ps->nitems; k++) g->bytes += ps->items[k].len;
      } else {
        int rc = storage_brace_range(ps, g, g->open + 1, i - g->open - 1, err, errlen);
        if (rc < 0) return rc;
      }
      g = NULL;
      text = i + 1;
    }
  }
  if (g)
    return errtext_set(err, errlen, BFEED_EDATASET, p, ": '{' at offset %zu has no '}' to close it", g->open);
  ps->tail = (storage_brace_span){text, n - text};
  return 0;
}

/* Whether the names fit the limits: their number, then their bytes (each
 * name's text, items and NUL), each step checked before it can overflow. */
static int storage_brace_fits(const storage_brace_parse *ps, char *err, size_t errlen) {
  uint64_t names = 1;
  for (size_t k = 0; k < ps->ng; k++) {
    if (ps->g[k].count > STORAGE_BRACE_MAX / names)
      return errtext_set(err, errlen, BFEED_ETOOBIG, ps->p, ": expands to more than %d names", STORAGE_BRACE_MAX);
    names *= ps->g[k].count;
  }
  uint64_t fixed = ps->tail.len + 1, bytes = 0;
  for (size_t k = 0; k < ps->ng; k++) fixed += ps->g[k].before.len;
  if (fixed > STORAGE_BRACE_MAX_BYTES / names) goto too_big;
  bytes = fixed * names;
  for (size_t k = 0; k < ps->ng; k++) {
    uint64_t each = names / ps->g[k].count; /* how many names hold each of its items */
    if (ps->g[k].bytes > (STORAGE_BRACE_MAX_BYTES - bytes) / each) goto too_big;
    bytes += ps->g[k].bytes * each;
  }
  return 0;
too_big:
  return errtext_set(err, errlen, BFEED_ETOOBIG, ps->p, ": expands to more than %zu MiB of names",
                     STORAGE_BRACE_MAX_BYTES >> 20);
}

/* Item i of group g, appended at w; the end of what was written. */
static char *storage_brace_item(const storage_brace_parse *ps, const storage_brace_group *g, uint64_t i, char *w) {
  if (!g->range) {
    const storage_brace_span *it = &ps->items[g->item0 + i];
    return (char *)memcpy(w, ps->p + it->off, it->len) + it->len;
  }
  uint64_t v = g->lo <= g->hi ? g->lo + i : g->lo - i;
  return w + sprintf(w, "%0*llu", g->width, (unsigned long long)v);
}

/* Every name, in order, onto out. */
static int storage_brace_make(const storage_brace_parse *ps, strlist *out, uint64_t *idx, char *err, size_t errlen) {
  /* The longest name: the text, each group's longest item. */
  size_t longest = ps->tail.len + 1;
  for (size_t k = 0; k < ps->ng; k++) {
    const storage_brace_group *g = &ps->g[k];
    size_t most = g->range ? (size_t)(g->width > 20 ? g->width : 20) : 0;
    for (uint64_t i = 0; !g->range && i < g->count; i++)
      if (ps->items[g->item0 + i].len > most) most = ps->items[g->item0 + i].len;
    longest += g->before.len + most;
  }
  char *buf = malloc(longest);
  if (!buf) return errtext_set(err, errlen, BFEED_ENOMEM, ps->p, ": out of memory expanding the braces");
  int rc = 0;
  memset(idx, 0, ps->ng * sizeof *idx);
  for (;;) {
    char *w = buf;
    for (size_t k = 0; k < ps->ng; k++) {
      w = (char *)memcpy(w, ps->p + ps->g[k].before.off, ps->g[k].before.len) + ps->g[k].before.len;
      w = storage_brace_item(ps, &ps->g[k], idx[k], w);
    }
    w = (char *)memcpy(w, ps->p + ps->tail.off, ps->tail.len) + ps->tail.len;
    *w = 0;
    if (strlist_push(out, strndup(buf, (size_t)(w - buf))) < 0) {
      rc = errtext_set(err, errlen, BFEED_ENOMEM, ps->p, ": out of memory expanding the braces");
      break;
    }
    size_t k = ps->ng;
    while (k > 0 && ++idx[k - 1] == ps->g[k - 1].count) idx[--k] = 0;
    if (k == 0) break;
  }
  free(buf);
  return rc;
}

int storage_brace_expand(const char *pattern, strlist *out, char *err, size_t errlen) {
  size_t n = strlen(pattern), braces = 0;
  for (size_t i = 0; i < n; i++) braces += pattern[i] == '{' || pattern[i] == '}';
  if (braces == 0) {
    if (strlist_push(out, strdup(pattern)) < 0)
      return errtext_set(err, errlen, BFEED_ENOMEM, pattern, ": out of memory");
    return 0;
  }
  /* At most one group per brace, one item per ',' or '}'. */
  storage_brace_parse ps = {.p = pattern};
  ps.g = malloc(braces * sizeof *ps.g);
  ps.items = malloc((n + 1) * sizeof *ps.items);
  uint64_t *idx = malloc(braces * sizeof *idx);
  size_t before = out->n;
  int rc = ps.g && ps.items && idx ? 0 : errtext_set(err, errlen, BFEED_ENOMEM, pattern, ": out of memory");
  if (rc == 0) rc = storage_brace_cut(&ps, err, errlen);
  if (rc == 0) rc = storage_brace_fits(&ps, err, errlen);
  if (rc == 0) rc = storage_brace_make(&ps, out, idx, err, errlen);
  if (rc < 0) { /* out as it was */
    for (size_t i = before; i < out->n; i++) free(out->v[i]);
    out->n = before;
  }
  free(ps.g);
  free(ps.items);
  free(idx);
  return rc;
}
