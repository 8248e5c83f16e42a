/*
 * subset.h -- the positions (epoch, index) a stream serves when its OPEN
 * selects a subset of its batches (select residue or stride, PROTOCOL.md
 * "Subsets of the batches"), for a client that follows the stream batch by
 * batch: the daemon computes the same in daemon/serve/select.c.
 */
#ifndef BFEED_SUBSET_H
#define BFEED_SUBSET_H

#include <stdint.h>

#include "bfeed_types.h"

typedef struct subset_pos {
  uint64_t epoch, index;
} subset_pos;

/* Batches from one served to the next: select_mod for residue and
 * stride, 1 otherwise (all; on demand serves what is asked). */
uint64_t subset_step(const bfeed_stream_opts *o);
/* The first position served at or after p (bpe batches per epoch, >= 1;
 * p.index == bpe means the next epoch's first): residue's first batch g
 * with g mod select_mod == select_rem, g = epoch * bpe + index. */
subset_pos subset_first(const bfeed_stream_opts *o, uint64_t bpe, subset_pos p);
/* The position served after p. */
subset_pos subset_after(const bfeed_stream_opts *o, uint64_t bpe, subset_pos p);
/* The k-th position served from `first` (a position subset_first gave). */
subset_pos subset_nth(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, uint64_t k);
/* The k with subset_nth(first, k) == p, or UINT64_MAX when the stream
 * does not serve p from first. */
uint64_t subset_index_of(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, subset_pos p);
/* How many positions are served from first up to the start of end_epoch. */
uint64_t subset_count(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, uint64_t end_epoch);

#endif
