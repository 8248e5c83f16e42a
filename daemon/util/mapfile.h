/*
 * mapfile.h -- a whole local file, memory-mapped read-only.
 * Called by storage_local.c: the local backend's storage_map, which the
 * loaders of big files (text, manifest, list, .npy, embedding tables) use.
 *
 * The text loaders parse files of hundreds of megabytes; mapping them
 * lets the kernel page them in and drop them again, instead of the daemon
 * holding a copy while it builds its own tables. A mapped file must not be
 * truncated while it is mapped (reads past the new end fault): bfeed only
 * ever replaces its own files by rename, which leaves the mapped inode
 * whole.
 */
#ifndef BFEED_MAPFILE_H
#define BFEED_MAPFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct mapfile {
  const uint8_t *data; /* NULL for an empty file */
  size_t size;
  struct stat st;      /* of the file that was mapped */
} mapfile;

/* Map path. Fails, the message naming the file, if it cannot be opened or
 * is not a regular file (BFEED_EDATASET, or BFEED_EIO for a failure of the
 * moment: errtext_errno_code), or is larger than max_size bytes
 * (BFEED_ETOOBIG). */
int mapfile_open(mapfile *m, const char *path, uint64_t max_size, char *err, size_t errlen);
void mapfile_close(mapfile *m);

#endif
