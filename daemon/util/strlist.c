/* strlist.c -- see strlist.h */
#include "strlist.h"

#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"

int strlist_push(strlist *l, char *s) {
  if (!s) return BFEED_ENOMEM;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    char **v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      free(s);
      return BFEED_ENOMEM;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

void strlist_free(strlist *l) {
  strlist_free_array(l->v, l->n);
  memset(l, 0, sizeof *l);
}

void strlist_free_array(char **v, size_t n) {
  if (v)
    for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}
