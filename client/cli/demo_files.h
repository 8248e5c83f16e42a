/*
 * demo_files.h -- file-system helpers the demo dataset writers share
 * (defined in make_demo.c).
 */
#ifndef BFEED_DEMO_FILES_H
#define BFEED_DEMO_FILES_H

#include <stddef.h>

/* 0 if a dataset may be written to dir: it is missing, empty, or
 * overwrite is set; else BFEED_EINVAL with a message that names --force. */
int demo_dir_check(const char *dir, int overwrite, char *err, size_t errlen);
/* Write buf to path via path.tmp and a rename, so a reader never sees a
 * partial file. */
int demo_write_file(const char *path, const unsigned char *buf, size_t len, char *err, size_t errlen);

#endif
