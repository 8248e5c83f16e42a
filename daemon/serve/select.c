/* select.c -- see select.h */
#include "select.h"

#include <stdio.h>
#include <stdlib.h>

int select_init(select_plan *p, const bfeed_stream_opts *o, uint64_t bpe, uint64_t start_epoch,
                uint64_t start_batch, uint64_t *end_seq) {
  *p = (select_plan){.kind = o->select, .bpe = bpe, .first_epoch = o->epoch, .epochs = o->epochs, .mod = 1};
  if (o->select == BFEED_SELECT_ON_DEMAND) {
    *end_seq = 0;
    p->ring = calloc(SELECT_RING, sizeof *p->ring);
    return p->ring ? 0 : BFEED_ENOMEM;
  }
  uint64_t rem = 0;
  if (o->select == BFEED_SELECT_RESIDUE || o->select == BFEED_SELECT_STRIDE) p->mod = o->select_mod;
  if (o->select == BFEED_SELECT_RESIDUE) rem = o->select_rem;
  select_u128 start = (select_u128)start_epoch * bpe + start_batch;
  /* The first g >= start with g mod `mod` == rem; a stride starts at start. */
  p->g0 = o->select == BFEED_SELECT_STRIDE ? start : start + ((select_u128)rem + p->mod - start % p->mod) % p->mod;
  *end_seq = UINT64_MAX;
  /* The range ends where epoch (OPEN's epoch + epochs) begins; a start
   * past an epoch's last batch counts from OPEN's epoch (stream.c). A
   * stream of every epoch (0) ends after epoch 2^64 - 1, the last there
   * is, rather than wrap to epoch 0. */
  select_u128 end = ((select_u128)o->epoch + (o->epochs ? o->epochs : ((select_u128)1 << 64) - o->epoch)) * bpe;
  select_u128 n = p->g0 >= end ? 0 : (end - 1 - p->g0) / p->mod + 1;
  if (n < UINT64_MAX) *end_seq = (uint64_t)n;
  return 0;
}

void select_free(select_plan *p) {
  free(p->ring);
  p->ring = NULL;
}

void select_at(const select_plan *p, uint64_t seq, uint64_t *epoch, uint64_t *index) {
  if (p->kind == BFEED_SELECT_ON_DEMAND) {
    *epoch = p->ring[seq % SELECT_RING].epoch;
    *index = p->ring[seq % SELECT_RING].index;
    return;
  }
  select_u128 g = p->g0 + (select_u128)seq * p->mod;
  *epoch = (uint64_t)(g / p->bpe);
  *index = (uint64_t)(g % p->bpe);
}

int select_request(select_plan *p, const msg_request *m, uint64_t consumed, uint32_t window, char *err,
                   size_t errlen) {
  if (p->kind != BFEED_SELECT_ON_DEMAND)
    return snprintf(err, errlen, "REQUEST on a stream that was not opened on demand (select=on-demand)"), BFEED_EINVAL;
  for (uint32_t i = 0; i < m->count; i++) {
    uint64_t e = m->b[i].epoch, b = m->b[i].index;
    const char *why = b >= p->bpe                                  ? "the batch is past the epoch's last"
                      : e < p->first_epoch                         ? "the epoch is before the stream's first"
                      : p->epochs && e - p->first_epoch >= p->epochs ? "the epoch is past the stream's last"
                                                                     : NULL;
    if (why)
      return snprintf(err, errlen,
                      "REQUEST entry %u (epoch %llu, batch %llu): %s (the stream serves %llu epochs from epoch %llu, "
                      "0 = all, of %llu batches each)", i, (unsigned long long)e, (unsigned long long)b, why,
                      (unsigned long long)p->epochs, (unsigned long long)p->first_epoch, (unsigned long long)p->bpe),
             BFEED_EINVAL;
  }
  uint64_t limit = MSG_MAX_REQUEST + (uint64_t)window;
  if (p->requested - consumed + m->count > limit)
    return snprintf(err, errlen,
                    "REQUEST: %llu batches asked for and not consumed, more than %llu (%d + window %u): read and "
                    "acknowledge batches before asking for more",
                    (unsigned long long)(p->requested - consumed + m->count), (unsigned long long)limit,
                    MSG_MAX_REQUEST, window),
           BFEED_ELIMIT;
  for (uint32_t i = 0; i < m->count; i++) {
    p->ring[p->requested % SELECT_RING].epoch = m->b[i].epoch;
    p->ring[p->requested % SELECT_RING].index = m->b[i].index;
    p->requested++;
  }
  return 0;
}
