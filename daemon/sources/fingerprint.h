/*
 * fingerprint.h -- what decides the bytes of a stream's batches, as one
 * XXH3-64 (PROTOCOL.md "Subsets of the batches", "Fingerprint"): two
 * daemons that give a stream the same fingerprint serve it the same bytes,
 * so a client may spread one stream over them.
 * Called by dataset.c (once per load) and dispatch.c (per OPEN, for OPEN_OK).
 *
 * The dataset's part covers its kind, the settings that change what it
 * serves, and the relative path and size of each of its files or shards
 * (never their times: copies on two hosts agree). The stream's part adds
 * the options that change the bytes and the daemon's max_pixels.
 */
#ifndef BFEED_FINGERPRINT_H
#define BFEED_FINGERPRINT_H

#include <stdint.h>

#include "bfeed_types.h"
#include "dataset.h"
#include "dataset_impl.h"

/* The dataset's part, from its settings and its loaded file list (stat()
 * for the sizes). 0 only if out of memory, which a client reads as unknown. */
uint64_t fingerprint_dataset(const dataset *d, const dataset_keys *k);
/* The stream's fingerprint, as OPEN_OK carries it. */
uint64_t fingerprint_stream(uint64_t dataset_fp, const bfeed_stream_opts *o, uint64_t max_pixels);

#endif
