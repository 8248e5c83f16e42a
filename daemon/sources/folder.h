/*
 * folder.h -- listing the files of ImageFolder-like trees, through storage_list.
 * Called by kind_folder.c (image folders), text_source.c and kind_text.c
 * (folders of .txt files).
 *
 * ROOT/CLASS/.../FILE: class folders sorted by name, files below each
 * found depth first in sorted order (as sorted(os.walk) would), dot files
 * skipped, symlinks followed (as torchvision does). A link back to a
 * folder the walk is in (a/up -> ..) is a cycle, told by the folders'
 * device and inode and refused as one; a depth limit stops what is no
 * cycle but nests absurdly deep. Used for image folders and for folders of
 * .txt files.
 */
#ifndef BFEED_FOLDER_H
#define BFEED_FOLDER_H

#include <stddef.h>

#include "storage.h"
#include "strlist.h"

/* What a listing left out: regular files without one of the extensions
 * asked for (a .gif or notes.txt in an image class folder), counted, with
 * the paths of the first few kept (malloc'd) for the load-time log. */
#define FOLDER_SKIPPED_NAMES 3
typedef struct folder_skipped {
  size_t n;
  char *first[FOLDER_SKIPPED_NAMES];
} folder_skipped;
void folder_skipped_free(folder_skipped *s);

/* 1 if name ends in one of exts (a NULL-terminated list such as
 * {".jpg", ".jpeg", NULL}), ignoring case. */
int folder_has_ext(const char *name, const char *const *exts);
/* The entries of dir, sorted: sub-folders into dirs and files with one of
 * exts into files (either list may be NULL to skip that kind). An entry
 * that cannot be followed (a dangling symlink, a symlink loop) is left out
 * and described ("PATH: why") in dropped, for the caller to log (NULL:
 * quietly); regular files without one of exts are tallied in skipped (when
 * files is given and skipped is not NULL), in sorted order. */
int folder_list(const char *dir, strlist *dirs, strlist *files, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen);
/* Every file with one of exts below dir, depth first in sorted order, and
 * when stamps is not NULL each one's stamp as the listing saw it (for
 * storage_open_same); the others tallied in skipped (may be NULL).
 * BFEED_EDATASET for a cycle of links ("folder A/up is A again ...") or a
 * tree nested too deep. */
int folder_walk(const char *dir, strlist *out, storage_stamps *stamps, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen);

#endif
