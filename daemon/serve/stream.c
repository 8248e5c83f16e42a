/* stream.c -- see stream.h */
#include "stream.h"
#include "stream_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "batch_text.h"
#include "shm_ring.h"
#include "select.h"
#include "share.h"
#include "fingerprint.h"
#include "opts.h"

uint32_t stream_id(const stream *st) { return st->id; }

void stream_set_max_pixels(stream *st, uint64_t max_pixels) { st->spec.sample.max_pixels = max_pixels; }

static const flow_ops stream_flow_ops; /* below, beside what it calls */

/* Every stream may always have one batch scheduled, beyond max_memory if
 * need be: a stream whose largest batch is over its share of max_memory
 * at OPEN (flow_open_share) is refused, saying what fits, so that no
 * client takes many times the limit with a few streams of huge batches.
 * A text stream served under the default length cap is logged with it. */
static int stream_check_memory(stream *st, flow *f, char *err, size_t errlen) {
  char whose[160];
  uint64_t share = flow_open_share(f, whose, sizeof whose);
  int rc = share == UINT64_MAX ? 0 : batch_spec_check_memory(&st->spec, share, whose, err, errlen);
  uint32_t cap = batch_text_default_cap(&st->spec.opts, st->spec.ds);
  if (rc == 0 && cap && cap == st->spec.len_cap)
    log_info(st->log, "stream %u: the longest sample of %s has %u tokens: serving at most %u (%u MiB of vectors; "
             "set max_len to choose)", st->id, st->spec.ds->name, st->spec.ds->text.longest, cap,
             BATCH_TEXT_DEFAULT_BYTES >> 20);
  return rc;
}

static void stream_free(stream *st) {
  select_free(&st->sel);
  for (int i = 0; i < READY_SLOTS; i++) batch_job_free(st->ready[i]);
  epoch_cache_free(&st->orders);
  dataset_unref(st->spec.ds);
  stream_ring_free(st);
  free(st);
}

int stream_open(stream **out, conn *c, flow *f, uint32_t id, dataset *ds, const bfeed_stream_opts *opts,
                workers *wk, bufcache *buffers, share *sh, ds_stats *stats, const logger *log, msg_open_ok *info,
                char *err, size_t errlen) {
  bfeed_stream_opts shm_opts = *opts, *o = &shm_opts;
  int shm = o->transport == BFEED_TRANSPORT_SHM && !conn_is_tcp(c);
  if (shm) o->codec = BFEED_CODEC_NONE;
  o->transport = shm ? BFEED_TRANSPORT_SHM : BFEED_TRANSPORT_SOCKET;
  int rc = msg_opts_check(o, err, errlen);
  if (rc == 0) rc = batch_spec_check(ds, o, err, errlen);
  if (rc == 0) rc = epoch_check(o, ds->name, ds->nsamples, dataset_has_text(ds), err, errlen);
  if (rc < 0) return rc;
  uint64_t n = epoch_shard_size(o, ds->nsamples);
  uint64_t bpe = o->keep_partial ? (n + o->batch - 1) / o->batch : n / o->batch;
  if (bpe == 0)
    return snprintf(err, errlen, "dataset %s has %zu samples, %llu per shard of %u: not enough for one batch of %u%s",
                    ds->name, ds->nsamples, (unsigned long long)n, o->shard_count, o->batch,
                    o->keep_partial ? "" : ": lower the batch, or serve the short batch with keep_partial (bfeed "
                                           "--keep-partial)"),
           BFEED_EDATASET;
  /* Resuming at the position after an epoch's last batch (what a trainer
   * saves after finishing an epoch) is where the next epoch begins: the same
   * batches as asking for (epoch + 1, 0). */
  uint64_t start_epoch = o->epoch, start_batch = o->batch_index;
  if (start_batch == bpe && start_epoch < UINT64_MAX) start_epoch++, start_batch = 0;
  if (start_batch >= bpe)
    return snprintf(err, errlen, "start batch %llu is past the epoch's %llu batches (%llu, the end of the epoch, "
                    "means the next epoch's batch 0)",
                    (unsigned long long)o->batch_index, (unsigned long long)bpe, (unsigned long long)bpe),
           BFEED_EINVAL;
  stream *st = calloc(1, sizeof *st);
  if (!st || select_init(&st->sel, o, bpe, start_epoch, start_batch, &st->end_seq) < 0) {
    if (st) select_free(&st->sel), free(st);
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  }
  st->conn = c;
  st->id = id;
  batch_spec_init(&st->spec, dataset_ref(ds), o, id, log, buffers);
  uint64_t frame_bytes = batch_frame_estimate(&st->spec);
  st->workers = wk;
  st->log = log;
  st->stats = stats;
  st->shuffle = opts_shuffled(o);
  epoch_cache_init(&st->orders, &st->spec, st->shuffle);
  if ((rc = stream_check_memory(st, f, err, errlen)) < 0) {
    stream_free(st);
    return rc;
  }
  st->shard_samples = n;
  st->bpe = bpe;
  st->fl = f;
  /* Sharing, a batch's own buffer is its header and head: the data is the shared batch's. */
  if ((st->sh = o->share == BFEED_SHARE_OFF ? NULL : sh)) frame_bytes = STREAM_HEAD_BYTES;
  st->shm = shm;
  if (shm) stream_ring_open(st, &frame_bytes);
  st->flow = flow_open(f, o->window, frame_bytes, st->ring ? shm_ring_slots(st->ring) : 0, &stream_flow_ops, st);
  if (!st->flow) {
    stream_free(st);
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  }
  stats->streams++;
  st->opened_ns = uv_hrtime();
  st->workers_busy_open = workers_busy_ns(wk);
  info->features = MSG_FEATURE_TIMING;
  info->samples = n;
  info->batches_per_epoch = bpe;
  info->classes = (uint32_t)ds->nclasses;
  info->fingerprint = 0; /* dispatch.c fills it in: it knows the daemon's limits */
  *out = st;
  return 0;
}

static void fail(stream *st, int code, const char *msg) {
  if (st->failed) return;
  st->failed = 1;
  log_warn(st->log, "stream %u on %s failed: %s", st->id, st->spec.ds->name, msg);
  if (st->conn) conn_send_error(st->conn, st->id, code, "%s", msg);
}

void stream_fail(stream *st, int code, const char *msg) { fail(st, code, msg); }

/* Schedule what flow allows. A shared-memory stream's batch is made in the
 * slot flow picks; when the caller still holds every slot's batch (it may
 * keep batches as long as it likes), the batch travels over the socket
 * instead, so holding batches never stalls the stream. */
static uint64_t stream_extra(const stream *st);
static void pump(stream *st) {
  if (st->ring_wanted && st->conn && !st->failed && flow_may_schedule(st->flow, st->end_seq, stream_extra(st)))
    stream_ring_late(st);
  if (stream_ring_move(st)) return; /* until the batches of the ring it leaves are sent */
  while (st->conn && !st->failed && flow_may_schedule(st->flow, st->end_seq, stream_extra(st))) {
    batch_job *job = calloc(1, sizeof *job);
    if (!job) {
      fail(st, BFEED_ENOMEM, "out of memory scheduling a batch");
      return;
    }
    int slot;
    uint64_t seq = flow_schedule(st->flow, &slot);
    job->spec = &st->spec;
    job->orders = &st->orders;
    job->buffers = st->spec.buffers;
    select_at(&st->sel, seq, &job->epoch, &job->index);
    job->seq = seq;
    job->first = (uint32_t)(job->index * st->spec.opts.batch);
    uint64_t left = st->shard_samples - job->first;
    job->count = left < st->spec.opts.batch ? (uint32_t)left : st->spec.opts.batch;
    job->owner = st;
    job->done = stream_job_done;
    if ((slot = stream_ring_seat(st, slot, seq, job->epoch, job->index)) >= 0) {
      job->shm_index = (uint32_t)slot;
      job->shm_slot = shm_ring_slot(st->ring, (uint32_t)slot);
      job->shm_slot_size = shm_ring_slot_size(st->ring);
    }
    st->inflight++;
    st->submitted_ns[seq % READY_SLOTS] = uv_hrtime();
    if (st->member) share_submit(st->member, job, st->ring_class ? st->ring : NULL);
    else workers_submit(st->workers, job);
  }
}

/* What scheduling the next batch adds beside its own buffer: the build of
 * a shared batch that does not exist yet. */
static uint64_t stream_extra(const stream *st) {
  uint64_t seq = flow_scheduled(st->flow), epoch, index;
  if (!st->member || seq >= st->end_seq) return 0;
  select_at(&st->sel, seq, &epoch, &index);
  return share_cost(st->member, epoch, index);
}

/* Send the finished batches in order while flow says the client keeps
 * up; the others wait in ready[], where flow may shed them. */
static void deliver(stream *st) {
  batch_job *job;
  while (st->conn && !st->failed && flow_may_send(st->flow) &&
         (job = st->ready[flow_sent(st->flow) % READY_SLOTS]) != NULL) {
    uint64_t seq = flow_sent(st->flow);
    st->ready[seq % READY_SLOTS] = NULL;
    if (job->rc < 0) {
      fail(st, job->rc, job->err);
      batch_job_free(job);
      return;
    }
    st->samples += job->count;
    st->batches++;
    st->raw_bytes += job->raw_bytes;
    st->wire_bytes += job->frame.len + job->tail_len;
    if (job->shared) st->shared++, st->bytes_saved += job->raw_bytes;
    else st->built++;
    if (job->shm_slot) st->shm_batches++;
    if (job->shm_slot && job->src && job->src->shm_slot != job->shm_slot) st->shm_copy_bytes += job->raw_bytes;
    else st->kernel_copy_bytes += job->frame.len + job->tail_len;
    ds_stats *d = st->stats;
    d->samples += job->count;
    d->batches++;
    d->raw_bytes += job->raw_bytes;
    d->wire_bytes += job->frame.len + job->tail_len;
    d->shared += job->shared;
    d->bytes_saved += job->shared ? job->raw_bytes : 0;
    hist_observe(&d->batch_latency, (double)(uv_hrtime() - st->submitted_ns[seq % READY_SLOTS]) * 1e-9);
    flow_send(st->flow);
    conn_send_batch(st->conn, job, st->flow);
  }
  /* An on-demand stream has served all it was asked for so far, not all it will be. */
  if (st->conn && !st->failed && flow_sent(st->flow) == st->end_seq && !st->end_sent &&
      st->sel.kind != BFEED_SELECT_ON_DEMAND) {
    wbuf w;
    wbuf_init(&w);
    size_t at = msg_begin(&w);
    msg_u64_encode(&w, flow_sent(st->flow));
    msg_finish(&w, at, FRAME_END, st->id);
    st->end_sent = 1;
    conn_send_frame(st->conn, &w);
  }
}

/* deliver() too: a stream with nothing to serve (resumed at the end of its
 * last epoch) ends at once. */
void stream_start(stream *st) {
  /* Joined here, not at open: max_pixels, which changes bytes, is set in between. */
  if (st->sh)
    st->member = share_join(st->sh, &st->spec, fingerprint_stream(st->spec.ds->fingerprint, &st->spec.opts,
                                                                  st->spec.sample.max_pixels),
                            st->bpe, st->spec.opts.window, st->sel.mod, st);
  stream_ring_join(st);
  stream_ring_move(st); /* to its class's ring at once, if there is one to share */
  stream_ring_send(st); /* right after OPEN_OK, before any batch */
  pump(st);
  deliver(st);
}

/* flow_ops.resume: memory was freed, or the socket took our bytes. */
static void stream_on_resume(void *owner) {
  stream *st = owner;
  deliver(st);
  pump(st);
}

/* flow_ops.drop: free batch seq if it is made (it is made again, byte for
 * byte, when flow lets its turn come again). */
static int stream_on_drop(void *owner, uint64_t seq) {
  stream *st = owner;
  batch_job *job = st->ready[seq % READY_SLOTS];
  if (!job || job->seq != seq) return 0;
  st->ready[seq % READY_SLOTS] = NULL;
  batch_job_free(job);
  stream_ring_shed(st, seq);
  return 1;
}

static uint64_t stream_on_charged(void *owner) {
  stream *st = owner;
  return st->member ? share_charged(st->member) : 0;
}

static const flow_ops stream_flow_ops = {.resume = stream_on_resume,
                                         .drop = stream_on_drop,
                                         .slot_cool = stream_ring_cool,
                                         .slot_warm = stream_ring_warm,
                                         .charged = stream_on_charged};

/* The window moves: the ring batches made and waiting to be announced
 * go out, and what the window lets in is scheduled, before the releases
 * free their slots: the order the daemon has always taken them in, which
 * decides which batches go through the ring and which over the socket. */
int stream_ack(stream *st, const msg_ack *a, char *err, size_t errlen) {
  int rc = flow_ack(st->flow, a->consumed, err, errlen);
  if (rc < 0) return rc;
  deliver(st);
  pump(st);
  for (uint32_t k = 0; k < a->nreleased; k++)
    if ((rc = stream_ring_release(st, a->released[k], err, errlen)) < 0) return rc;
  return 0;
}

void stream_request(stream *st, const msg_request *m) {
  char err[MSG_ERROR_MAX];
  if (st->failed) return; /* the client has been told; what it asked after does not matter */
  int rc = select_request(&st->sel, m, flow_acked(st->flow), st->spec.opts.window, err, sizeof err);
  if (rc < 0) return fail(st, rc, err);
  st->end_seq = st->sel.requested;
  pump(st);
}

/* A copy of a shared batch counts the build's time for the stream that
 * asked first, and nothing of it for the others. */
static void stream_count_job(stream *st, const batch_job *job) {
  uint64_t busy = job->busy_ns + (job->src && !job->shared ? job->src->busy_ns : 0);
  st->skipped += job->skipped;
  st->busy_ns += busy;
  st->stats->skipped += job->skipped;
  st->stats->busy_ns += busy;
  for (int k = 0; k < BATCH_STAGES; k++) {
    uint64_t t = job->stage_ns[k] + (job->src && !job->shared ? job->src->stage_ns[k] : 0);
    st->stage_ns[k] += t;
    st->stats->stage_ns[k] += t;
  }
  if (job->rc == 0 && job->count && !job->shared)
    hist_observe(&st->stats->sample_time, (double)busy * 1e-9 / job->count);
}

void stream_job_done(batch_job *job) {
  stream *st = job->owner;
  st->inflight--;
  stream_count_job(st, job);
  if (!st->conn || st->failed) {
    batch_job_free(job);
  } else {
    /* A failed batch waits its turn too: the batches before it reach the
     * client first, whichever finished first (a shared batch's copy comes
     * after its build, and a later build may fail before it). */
    if (job->rc == 0) flow_built(st->flow, job->buf_cap, job->tail_len);
    st->ready[job->seq % READY_SLOTS] = job;
    deliver(st);
    pump(st);
  }
  if (!st->conn && st->inflight == 0) stream_free(st);
}

static void stream_free_jobs(stream *st, batch_job *j) {
  while (j) {
    batch_job *next = j->next;
    st->inflight--;
    batch_job_free(j);
    j = next;
  }
}

void stream_close(stream *st) {
  jobs_leave(st->job, st); /* while its counters can still be read */
  st->job = NULL;
  st->conn = NULL;
  stream_ring_close(st);
  flow_close(st->flow); /* its batches still queued on the socket are counted until written */
  st->flow = NULL;
  stream_free_jobs(st, share_leave(st->member)); /* those waiting for a shared batch's build */
  st->member = NULL;
  stream_free_jobs(st, workers_cancel(st->workers, st));
  if (st->inflight == 0) stream_free(st);
}

const dataset *stream_dataset(const stream *st) { return st->spec.ds; }

void stream_timing(stream *st, const msg_timing *t) { st->timing = *t; }

void stream_set_job(stream *st, jobs_entry *job) { st->job = job; }
jobs_entry *stream_job(const stream *st) { return st->job; }

/* wait / (wait + step) in millionths: the share of the client's time spent
 * waiting for batches (its wait_fraction). */
static uint64_t stream_wait_ppm(const msg_timing *t) {
  uint64_t all = t->wait_us + t->step_us;
  return all ? (uint64_t)((double)t->wait_us * 1e6 / (double)all + 0.5) : 0;
}

size_t stream_stats(const stream *st, msg_counter *out, size_t max) {
  const msg_timing *t = &st->timing;
  const struct {
    const char *name;
    uint64_t value;
  } v[] = {
      {"samples", st->samples},
      {"batches", st->batches},
      {"raw_bytes", st->raw_bytes},
      {"wire_bytes", st->wire_bytes},
      {"skipped", st->skipped},
      {"worker_busy_us", st->busy_ns / 1000},
      {"in_flight", flow_scheduled(st->flow) - flow_sent(st->flow)},
      {"unacked", flow_sent(st->flow) - flow_acked(st->flow)},
      {"samples_per_epoch", st->shard_samples},
      {"batches_per_epoch", st->bpe},
      {"kernel_copy_bytes", st->kernel_copy_bytes},
      {"shm_batches", st->shm_batches},
      {"shm_copy_bytes", st->shm_copy_bytes},
      {"idle", (uint64_t)flow_is_idle(st->flow)},
      {"batches_dropped_idle", flow_dropped_idle(st->flow)},
      {"batches_built", st->built},
      {"batches_shared", st->shared},
      {"bytes_saved", st->bytes_saved},
      {"share", st->member != NULL},
      {"window", st->spec.opts.window},
      /* what the verdict of bfeed stats weighs (PROTOCOL.md "Is the job input-bound?") */
      {"age_us", (uv_hrtime() - st->opened_ns) / 1000},
      {"workers_busy_us", (workers_busy_ns(st->workers) - st->workers_busy_open) / 1000},
      {"read_us", st->stage_ns[BATCH_STAGE_READ] / 1000},
      {"decode_us", st->stage_ns[BATCH_STAGE_DECODE] / 1000},
      {"resize_us", st->stage_ns[BATCH_STAGE_RESIZE] / 1000},
      {"augment_us", st->stage_ns[BATCH_STAGE_AUGMENT] / 1000},
      {"batch_us", st->stage_ns[BATCH_STAGE_BATCH] / 1000},
      {"memory_wait_us", flow_memory_wait(st->flow) / 1000},
      {"client_batches", t->batches},
      {"client_wait_us", t->wait_us},
      {"client_step_us", t->step_us},
      {"client_wait_p50_us", t->wait_p50_us},
      {"client_wait_p99_us", t->wait_p99_us},
      {"client_first_wait_us", t->first_wait_us},
      {"client_expand_us", t->expand_us},
      {"wait_fraction_ppm", stream_wait_ppm(t)},
      {"requested", st->sel.requested}, /* on-demand streams only: the last entry */
  };
  size_t n = 0, count = sizeof v / sizeof v[0] - (st->sel.kind != BFEED_SELECT_ON_DEMAND);
  for (; n < count && n < max; n++) {
    snprintf(out[n].name, sizeof out[n].name, "%s", v[n].name);
    out[n].value = v[n].value;
  }
  return n;
}
