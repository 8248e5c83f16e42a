/*
 * select.h -- which batches of its range a stream serves, in what order:
 * all of them, one residue class of their global numbers, or those the
 * client REQUESTs (PROTOCOL.md "Subsets of the batches").
 * Called by stream.c: at open, to map seq to (epoch, index), and for REQUEST.
 *
 * A batch's global number is g = epoch x batches_per_epoch + index. "All"
 * is the residue class 0 mod 1, so both are one rule: the stream's k-th
 * batch is g0 + k x mod, where g0 is the first g of the class at or after
 * the open position. The arithmetic is 128-bit: epochs are the client's
 * to choose, and a wrapped product would serve another batch. Loop thread only.
 */
#ifndef BFEED_SELECT_H
#define BFEED_SELECT_H

#include <stdint.h>

#include "msg.h"

/* Requested entries a stream keeps: those not yet consumed, at most
 * MSG_MAX_REQUEST + the largest window (64, msg_opts_check). */
#define SELECT_RING 2048

__extension__ typedef unsigned __int128 select_u128;

typedef struct select_plan {
  int kind;             /* bfeed_select */
  uint64_t bpe;         /* batches per epoch */
  uint64_t first_epoch; /* the epoch OPEN named: where the range starts */
  uint64_t epochs;      /* of the range; 0 = forever */
  select_u128 g0;       /* all, residue: the global number of batch seq 0 */
  uint64_t mod;         /* all, residue: the step between batches (all: 1) */
  struct select_entry {
    uint64_t epoch, index;
  } *ring;              /* on demand: entry j at j % SELECT_RING */
  uint64_t requested;   /* on demand: entries asked for in all */
} select_plan;

/* Set up p for options o (checked by msg_opts_check) on a stream with bpe
 * batches per epoch that starts at (start_epoch, start_batch); *end_seq is
 * the number of batches it serves (UINT64_MAX: forever; on demand: 0 until
 * a REQUEST). 0 or BFEED_ENOMEM. */
int select_init(select_plan *p, const bfeed_stream_opts *o, uint64_t bpe, uint64_t start_epoch,
                uint64_t start_batch, uint64_t *end_seq);
void select_free(select_plan *p);
/* Which batch the stream's seq-th one is (seq < its end_seq). */
void select_at(const select_plan *p, uint64_t seq, uint64_t *epoch, uint64_t *index);
/* Append a REQUEST's entries on an on-demand stream whose client has
 * consumed `consumed` batches. All or none: BFEED_EINVAL (the stream is not
 * on demand, or an entry outside the range, named) or BFEED_ELIMIT (more
 * than MSG_MAX_REQUEST + window asked for and not consumed), with err set. */
int select_request(select_plan *p, const msg_request *m, uint64_t consumed, uint32_t window, char *err,
                   size_t errlen);

#endif
