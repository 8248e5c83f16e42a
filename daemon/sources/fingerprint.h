/*
 * fingerprint.h -- what decides the bytes of a stream's batches, as one
 * XXH3-64 (PROTOCOL.md "Subsets of the batches", "Fingerprint"): two
 * daemons that give a stream the same fingerprint serve it the same bytes,
 * so a client may spread one stream over them.
 * Called by dataset.c (once per load), the kinds (their files, through
 * their fingerprint operation) and dispatch.c (per OPEN, for OPEN_OK).
 *
 * The dataset's part covers its kind, the settings that change what it
 * serves (dataset_kind.h's key roles say which), and the relative path and
 * storage version (for local files, the size) of each of its files or
 * shards (never their times: copies on two hosts agree). The stream's part
 * adds the options that change the bytes and the daemon's max_pixels.
 */
#ifndef BFEED_FINGERPRINT_H
#define BFEED_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "dataset.h"
#include "dataset_kind.h"

/* A dataset's description being hashed. */
typedef struct fingerprint fingerprint;

/* The dataset's part, from its settings and its kind's files. 0 only if
 * out of memory, which a client reads as unknown. */
uint64_t fingerprint_dataset(const dataset *d, const dataset_keys *k);
/* "file NAME VERSION" for the file at path: NAME relative to dir when the
 * file lies below it, "." when dir is NULL (the dataset's one file). */
void fingerprint_file(fingerprint *fp, const char *path, const char *dir);
/* The same line with the caller's NAME (shards go by their file name). */
void fingerprint_file_as(fingerprint *fp, const char *name, const char *path);
/* Any other line of the description ("files unknown\n"). */
void fingerprint_line(fingerprint *fp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The stream's fingerprint, as OPEN_OK carries it. */
uint64_t fingerprint_stream(uint64_t dataset_fp, const bfeed_stream_opts *o, uint64_t max_pixels);

#endif
