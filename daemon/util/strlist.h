/*
 * strlist.h -- a growable list of malloc'd strings.
 * Called by storage (glob results), folder.c (listings), the kinds (image paths), text_source.c.
 */
#ifndef BFEED_STRLIST_H
#define BFEED_STRLIST_H

#include <stddef.h>

typedef struct strlist {
  char **v;
  size_t n, cap;
} strlist;

/* Append s (taking it); BFEED_ENOMEM, s freed, when out of memory or s is NULL. */
int strlist_push(strlist *l, char *s);
void strlist_free(strlist *l);
/* Free v[0..n) and v itself (v may be NULL; so may its entries). */
void strlist_free_array(char **v, size_t n);

#endif
