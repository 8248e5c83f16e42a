/*
 * labelset.h -- class labels given as strings (TSV columns, __label__ tags) made class indices.
 * Called by dataset_text.c (text, manifest) and kind_list.c while they load.
 *
 * The rule (documented in PROTOCOL.md): when every label is a whole number
 * written plainly ("0", "7", "12", not "07") and none exceeds
 * LABELSET_MAX_NUMERIC, the label is that number and there are max + 1
 * classes; otherwise the classes are the distinct labels in byte order
 * (as ImageFolder sorts its folders) and a label is its rank. So "0"/"1"
 * files mean what they say, and names such as "pos"/"neg" get stable
 * indices that do not depend on line order.
 */
#ifndef BFEED_LABELSET_H
#define BFEED_LABELSET_H

#include <stddef.h>
#include <stdint.h>

#define LABELSET_MAX_NUMERIC 65535u
#define LABELSET_MAX_LEN 1024u /* bytes of one label */

typedef struct labelset {
  size_t n;         /* distinct labels seen */
  char **names;     /* in the order first seen: the provisional ids */
  uint32_t *slots;  /* hash index over names: provisional id + 1, 0 empty */
  size_t nslots;
  /* after labelset_finish: */
  uint32_t *map;    /* provisional id -> class index */
  size_t nclasses;
  char **classes;   /* nclasses names; the caller may take them (then set NULL) */
  int numeric;
} labelset;

/* The provisional id of name[0..len), adding it if new. BFEED_ENOMEM out of memory. */
int labelset_add(labelset *l, const char *name, size_t len, uint32_t *id);
/* Decide the classes; allow_numeric 0 always sorts names (folders, as
 * ImageFolder does). BFEED_ENOMEM out of memory. */
int labelset_finish(labelset *l, int allow_numeric);
void labelset_free(labelset *l);

#endif
