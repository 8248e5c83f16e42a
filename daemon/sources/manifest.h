/*
 * manifest.h -- image + text records from a TSV manifest, one record a line.
 * Called by kind_manifest.c (kind manifest).
 *
 * A line is
 *
 *     image_path<TAB>label<TAB>text
 *
 * image paths relative to the manifest's folder (or absolute); the text is
 * the rest of the line (tabs included). Blank lines are skipped, a
 * trailing '\r' dropped; errors name the file and line.
 */
#ifndef BFEED_MANIFEST_H
#define BFEED_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct manifest_record {
  const char *image, *label, *text;
  size_t image_len, label_len, text_len;
  const char *file;
  uint64_t line;
} manifest_record;

typedef int (*manifest_fn)(void *ctx, const manifest_record *r, char *err, size_t errlen);

/* The records of a manifest's bytes, in order. */
int manifest_parse(const char *data, size_t size, const char *name, manifest_fn fn, void *ctx, char *err,
                   size_t errlen);
/* The records of the manifest file at path. */
int manifest_read(const char *path, manifest_fn fn, void *ctx, char *err, size_t errlen);

#endif
