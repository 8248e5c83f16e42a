/* batch_copy.c -- see batch_copy.h */
#include "batch_copy.h"

#include <stdio.h>
#include <string.h>

#include "bfeed_types.h"
#include "codec.h"
#include "frame.h"
#include "fwriter.h"
#include "wire.h"

static int batch_copy_buffer(batch_job *job, size_t cap) {
  job->buf = bufcache_get(job->buffers, cap, &job->buf_cap);
  if (job->buf) return 0;
  job->rc = BFEED_ENOMEM;
  snprintf(job->err, sizeof job->err, "out of memory");
  return -1;
}

/* src's data: after its head in its frame, or, built in a slot of a ring
 * its class shares, the slot's raw tensors. */
static const uint8_t *batch_copy_data(const batch_job *src, size_t *len) {
  if (src->shm_slot) return *len = (size_t)src->head.raw_size, src->shm_slot;
  *len = src->frame.len - src->data_off;
  return src->frame.data + src->data_off;
}

/* The raw tensors into the job's ring slot (nothing to copy when it is
 * the slot src was built in: the class's ring), and its own BATCH_SHM frame. */
static void batch_copy_shm(batch_job *job, const msg_batch *m) {
  const batch_job *src = job->src;
  size_t len;
  const uint8_t *data = batch_copy_data(src, &len);
  if (m->raw_size > job->shm_slot_size || !codec_is_plain(m->codec) || m->raw_size > len) {
    job->rc = BFEED_EINTERNAL;
    snprintf(job->err, sizeof job->err, "shared batch of %llu bytes in codec %u does not fit a %llu-byte shared-memory slot",
             (unsigned long long)m->raw_size, m->codec, (unsigned long long)job->shm_slot_size);
    return;
  }
  size_t cap = FRAME_HEADER_SIZE + msg_batch_shm_size(m);
  if (batch_copy_buffer(job, cap) < 0) return;
  if (job->shm_slot != data) memcpy(job->shm_slot, data, m->raw_size);
  fwriter fw;
  fwriter_init(&fw, job->buf, cap);
  msg_batch_shm_encode(&fw.w, m, job->shm_index);
  char why[96];
  if ((job->rc = fwriter_finish(&fw, FRAME_BATCH_SHM, job->spec->stream_id, why, sizeof why)) < 0) {
    snprintf(job->err, sizeof job->err, "BATCH_SHM of a shared batch: %s", why);
    return;
  }
  job->frame = fw.w;
}

/* Over the socket: a header of the job's own (and a head, for another
 * seq) before src's bytes, which are sent from src's buffer. */
static void batch_copy_socket(batch_job *job, const msg_batch *m) {
  const batch_job *src = job->src;
  int same = m->seq == src->head.seq && !src->shm_slot; /* a slot's batch has a BATCH_SHM head: made anew */
  size_t own = same ? FRAME_HEADER_SIZE : FRAME_HEADER_SIZE + msg_batch_head_size(m);
  if (batch_copy_buffer(job, own) < 0) return;
  wbuf_init_fixed(&job->frame, job->buf, own);
  if (same) {
    memcpy(job->buf, src->frame.data, FRAME_HEADER_SIZE); /* checksum and length hold: only the stream differs */
    wire_put32(job->buf + 8, job->spec->stream_id);
    job->tail = src->frame.data + FRAME_HEADER_SIZE;
    job->tail_len = src->frame.len - FRAME_HEADER_SIZE;
  } else {
    wbuf *w = &job->frame;
    w->len = FRAME_HEADER_SIZE;
    msg_batch_encode_head(w, m);
    job->tail = batch_copy_data(src, &job->tail_len);
    size_t payload = w->len - FRAME_HEADER_SIZE + job->tail_len;
    if (w->failed || w->len != own || payload > FRAME_MAX_PAYLOAD) {
      job->rc = BFEED_EINTERNAL;
      snprintf(job->err, sizeof job->err, "a shared batch's head did not fit its %zu bytes", own);
      return;
    }
    frame_header h;
    frame_header_init(&h, FRAME_BATCH, job->spec->stream_id, NULL, 0);
    h.length = (uint32_t)payload;
    h.checksum = frame_checksum2(job->buf + FRAME_HEADER_SIZE, own - FRAME_HEADER_SIZE, job->tail, job->tail_len);
    frame_header_encode(&h, job->buf);
  }
  job->frame.len = own;
}

void batch_copy_build(batch_job *job) {
  const batch_job *src = job->src;
  msg_batch m = src->head;
  m.seq = job->seq;
  job->raw_bytes = src->raw_bytes;
  job->skipped = src->skipped;
  job->count = src->count;
  job->head = m;
  if (job->shm_slot) batch_copy_shm(job, &m);
  else batch_copy_socket(job, &m);
}
