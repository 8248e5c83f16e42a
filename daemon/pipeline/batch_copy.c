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

/* The raw tensors into the job's ring slot, and its own BATCH_SHM frame. */
static void batch_copy_shm(batch_job *job, const msg_batch *m) {
  const batch_job *src = job->src;
  if (m->raw_size > job->shm_slot_size || !codec_is_plain(m->codec) || src->data_off + m->raw_size > src->frame.len) {
    job->rc = BFEED_EINTERNAL;
    snprintf(job->err, sizeof job->err, "shared batch of %llu bytes in codec %u does not fit a %llu-byte shared-memory slot",
             (unsigned long long)m->raw_size, m->codec, (unsigned long long)job->shm_slot_size);
    return;
  }
  size_t cap = FRAME_HEADER_SIZE + msg_batch_shm_size(m);
  if (batch_copy_buffer(job, cap) < 0) return;
  memcpy(job->shm_slot, src->frame.data + src->data_off, m->raw_size);
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
  int same = m->seq == src->head.seq;
  size_t own = same ? FRAME_HEADER_SIZE : src->data_off;
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
    job->tail = src->frame.data + src->data_off;
    job->tail_len = src->frame.len - src->data_off;
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
