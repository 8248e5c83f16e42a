/* labelset.c -- see labelset.h */
#include "labelset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "strlist.h"

static int grow_index(labelset *l) {
  size_t nslots = l->nslots ? 2 * l->nslots : 64;
  uint32_t *s = calloc(nslots, sizeof *s);
  if (!s) return BFEED_ENOMEM;
  for (size_t i = 0; i < l->n; i++) {
    size_t h = (size_t)XXH3_64bits(l->names[i], strlen(l->names[i])) & (nslots - 1);
    while (s[h]) h = (h + 1) & (nslots - 1);
    s[h] = (uint32_t)i + 1;
  }
  free(l->slots);
  l->slots = s;
  l->nslots = nslots;
  return 0;
}

int labelset_add(labelset *l, const char *name, size_t len, uint32_t *id) {
  if (2 * (l->n + 1) > l->nslots && grow_index(l) < 0) return BFEED_ENOMEM;
  size_t h = (size_t)XXH3_64bits(name, len) & (l->nslots - 1);
  for (; l->slots[h]; h = (h + 1) & (l->nslots - 1)) {
    const char *s = l->names[l->slots[h] - 1];
    if (strlen(s) == len && memcmp(s, name, len) == 0) return *id = l->slots[h] - 1, 0;
  }
  if ((l->n & (l->n - 1)) == 0) { /* capacity doubles at powers of two */
    char **v = realloc(l->names, (l->n ? 2 * l->n : 1) * sizeof *v);
    if (!v) return BFEED_ENOMEM;
    l->names = v;
  }
  char *s = malloc(len + 1);
  if (!s) return BFEED_ENOMEM;
  memcpy(s, name, len);
  s[len] = 0;
  l->names[l->n] = s;
  l->slots[h] = (uint32_t)++l->n;
  *id = (uint32_t)l->n - 1;
  return 0;
}

/* A plain whole number up to LABELSET_MAX_NUMERIC, or -1. */
static long plain_number(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 5 || strspn(s, "0123456789") != n || (s[0] == '0' && n > 1)) return -1;
  long v = strtol(s, NULL, 10);
  return v <= (long)LABELSET_MAX_NUMERIC ? v : -1;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int labelset_finish(labelset *l, int allow_numeric) {
  long max = -1;
  l->numeric = allow_numeric;
  for (size_t i = 0; i < l->n && l->numeric; i++) {
    long v = plain_number(l->names[i]);
    if (v < 0) l->numeric = 0;
    else if (v > max) max = v;
  }
  l->map = malloc((l->n ? l->n : 1) * sizeof *l->map);
  if (!l->map) return BFEED_ENOMEM;
  if (l->numeric && l->n > 0) {
    l->nclasses = (size_t)max + 1;
    l->classes = calloc(l->nclasses, sizeof *l->classes);
    if (!l->classes) return BFEED_ENOMEM;
    for (size_t c = 0; c < l->nclasses; c++) {
      char buf[24];
      snprintf(buf, sizeof buf, "%zu", c);
      if (!(l->classes[c] = strdup(buf))) return BFEED_ENOMEM;
    }
    for (size_t i = 0; i < l->n; i++) l->map[i] = (uint32_t)plain_number(l->names[i]);
    return 0;
  }
  l->nclasses = l->n;
  l->classes = calloc(l->n ? l->n : 1, sizeof *l->classes);
  if (!l->classes) return BFEED_ENOMEM;
  for (size_t i = 0; i < l->n; i++)
    if (!(l->classes[i] = strdup(l->names[i]))) return BFEED_ENOMEM;
  qsort(l->classes, l->n, sizeof *l->classes, cmp_name);
  for (size_t i = 0; i < l->n; i++) {
    char **hit = bsearch(&l->names[i], l->classes, l->n, sizeof *l->classes, cmp_name);
    l->map[i] = (uint32_t)(hit - l->classes);
  }
  return 0;
}

void labelset_free(labelset *l) {
  strlist_free_array(l->names, l->n);
  strlist_free_array(l->classes, l->nclasses);
  free(l->slots);
  free(l->map);
  memset(l, 0, sizeof *l);
}
