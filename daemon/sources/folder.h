/*
 * folder.h -- listing the files of ImageFolder-like trees, through storage_list.
 * Called by kind_folder.c (image folders), text_source.c and kind_text.c
 * (folders of .txt files).
 *
 * ROOT/CLASS/.../FILE: class folders sorted by name, files below each
 * found depth first in sorted order (as sorted(os.walk) would), dot files
 * skipped, symlinks followed (as torchvision does). A link back to a
 * folder the walk is in (a/up -> ..) is a cycle, told by the folders'
 * device and inode and refused as one; so is any folder reached twice
 * (two links to one folder: a diamond of 24 levels of two links each is
 * 2^24 walks of one tree), naming both paths. A depth limit stops what is
 * no cycle but nests absurdly deep, a file limit what lists without end.
 * Used for image folders and for folders of .txt files.
 */
#ifndef BFEED_FOLDER_H
#define BFEED_FOLDER_H

#include <stddef.h>

#include "log.h"
#include "storage.h"
#include "strlist.h"

/* The files one dataset's walks may find, unless its max_samples says
 * otherwise (ImageNet-21k has 14.2 million). */
#define FOLDER_MAX_FILES_DEFAULT 20000000u

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
/* What one dataset's walks share (its class folders are walked one by
 * one): the folders reached, each once; the files found, against a limit;
 * and the progress of a slow walk, logged every FOLDER_PROGRESS_S seconds.
 * Zeroed, then the caller's fields set; folder_walk_state_free after. */
#define FOLDER_PROGRESS_S 10
typedef struct folder_seen folder_seen;
typedef struct folder_walk_state {
  size_t max_files;  /* 0: FOLDER_MAX_FILES_DEFAULT */
  const char *root;  /* the folder of the class folders walked (NULL: none): a link back to it is a cycle */
  const logger *log; /* NULL: no progress lines */
  const char *name;  /* the dataset, for them */
  /* the walks' own */
  folder_seen *seen;
  size_t files, folders;
  uint64_t started_ns, logged_ns;
} folder_walk_state;
void folder_walk_state_free(folder_walk_state *ws);

/* Every file with one of exts below dir, depth first in sorted order, and
 * when stamps is not NULL each one's stamp as the listing saw it (for
 * storage_open_same); the others tallied in skipped (may be NULL). ws: the
 * dataset's walks so far (NULL: this walk alone, default limit).
 * BFEED_EDATASET for a cycle of links ("folder A/up is A again ..."), a
 * folder reached twice, a tree nested too deep, or more files than the
 * limit. */
int folder_walk(const char *dir, strlist *out, storage_stamps *stamps, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, folder_walk_state *ws, char *err, size_t errlen);

#endif
