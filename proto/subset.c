/* subset.c -- see subset.h */
#include "subset.h"

__extension__ typedef unsigned __int128 subset_u128;

uint64_t subset_step(const bfeed_stream_opts *o) {
  return (o->select == BFEED_SELECT_RESIDUE || o->select == BFEED_SELECT_STRIDE) && o->select_mod ? o->select_mod : 1;
}

/* p moved on by d batches, across epochs of bpe. */
static subset_pos subset_add(subset_pos p, uint64_t bpe, subset_u128 d) {
  subset_u128 i = (subset_u128)p.index + d;
  return (subset_pos){p.epoch + (uint64_t)(i / bpe), (uint64_t)(i % bpe)};
}

subset_pos subset_first(const bfeed_stream_opts *o, uint64_t bpe, subset_pos p) {
  p = subset_add(p, bpe, 0);
  if (o->select != BFEED_SELECT_RESIDUE) return p;
  uint64_t mod = subset_step(o);
  subset_u128 g = (subset_u128)p.epoch * bpe + p.index;
  return subset_add(p, bpe, ((subset_u128)o->select_rem % mod + mod - g % mod) % mod);
}

subset_pos subset_after(const bfeed_stream_opts *o, uint64_t bpe, subset_pos p) {
  return subset_add(p, bpe, subset_step(o));
}

subset_pos subset_nth(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, uint64_t k) {
  return subset_add(first, bpe, (subset_u128)k * subset_step(o));
}

uint64_t subset_index_of(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, subset_pos p) {
  if (p.index >= bpe || p.epoch < first.epoch || (p.epoch == first.epoch && p.index < first.index))
    return UINT64_MAX;
  subset_u128 d = (subset_u128)(p.epoch - first.epoch) * bpe + p.index - first.index, step = subset_step(o);
  return d % step || d / step >= UINT64_MAX ? UINT64_MAX : (uint64_t)(d / step);
}

uint64_t subset_count(const bfeed_stream_opts *o, uint64_t bpe, subset_pos first, uint64_t end_epoch) {
  if (end_epoch <= first.epoch) return 0;
  subset_u128 span = (subset_u128)(end_epoch - first.epoch) * bpe - first.index, n = (span - 1) / subset_step(o) + 1;
  return span == 0 ? 0 : n >= UINT64_MAX ? UINT64_MAX - 1 : (uint64_t)n;
}
