/*
 * api_batch.c -- the public bfeed_batch_* calls: what a batch holds, and
 * releasing it. Batches are made by single/ (single_batch.c) from a frame;
 * a fan-out stream hands out its members' batches as they are.
 */
#include <string.h>

#include "api.h"

BFEED_API uint64_t bfeed_batch_epoch(const bfeed_batch *b) { return b->epoch; }
BFEED_API uint64_t bfeed_batch_index(const bfeed_batch *b) { return b->index; }
BFEED_API int bfeed_batch_ntensors(const bfeed_batch *b) { return b->ntensors; }
BFEED_API size_t bfeed_batch_wire_bytes(const bfeed_batch *b) { return b->wire_bytes; }
BFEED_API size_t bfeed_batch_raw_bytes(const bfeed_batch *b) { return b->raw_size; }

BFEED_API int bfeed_batch_tensor(const bfeed_batch *b, int i, bfeed_tensor *out) {
  if (i < 0 || i >= b->ntensors) return BFEED_EINVAL;
  const msg_tensor *t = &b->t[i];
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->dtype = (bfeed_dtype)t->dtype;
  out->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) out->shape[d] = (int64_t)t->shape[d];
  out->data = b->raw + t->offset;
  out->nbytes = t->nbytes;
  return 0;
}

BFEED_API int bfeed_batch_find(const bfeed_batch *b, const char *name, bfeed_tensor *out) {
  for (int i = 0; i < b->ntensors; i++)
    if (strcmp(b->t[i].name, name) == 0) return bfeed_batch_tensor(b, i, out);
  return BFEED_EINVAL;
}

/* A batch made before this process forked: the slot and buffer cache are
 * the parent's (api.h "After fork"). */
BFEED_API void bfeed_batch_release(bfeed_batch *b) {
  if (b && b->forks != api_fork_count()) single_batch_forget(b);
  else single_batch_free(b);
}
