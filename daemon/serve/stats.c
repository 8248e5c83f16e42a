/* stats.c -- see stats.h */
#include "stats.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "conn_impl.h"
#include "flow.h"
#include "decode_mem.h"
#include "report.h"
#include "server.h"
#include "skips.h"
#include "storage.h"
#include "stream.h"

ds_stats *stats_for(server *s, const char *name) {
  ds_stats *d;
  for (d = s->stats; d; d = d->next)
    if (strcmp(d->name, name) == 0) return d;
  if (!(d = calloc(1, sizeof *d))) return NULL;
  snprintf(d->name, sizeof d->name, "%s", name);
  hist_init(&d->batch_latency, hist_bounds_batch);
  hist_init(&d->sample_time, hist_bounds_sample);
  d->next = s->stats;
  s->stats = d;
  return d;
}

void stats_served(server *s) {
  for (size_t i = 0; i < s->ndatasets; i++) (void)stats_for(s, s->datasets[i]->name);
}

void stats_free(server *s) {
  while (s->stats) {
    ds_stats *d = s->stats;
    s->stats = d->next;
    free(d);
  }
}

/* The skipped samples each dataset lists (skips.h), as groups of kind
 * "skipped", id "DATASET<TAB>NAME<TAB>MESSAGE" (cut to the id's limit),
 * counters index and reason; as many as the report has room for. */
static void stats_skipped(server *s, report_writer *r) {
  skips_entry *e = malloc(64 * sizeof *e);
  for (size_t i = 0; e && i < s->ndatasets; i++) {
    dataset *ds = s->datasets[i];
    size_t got;
    for (size_t from = 0; r->ngroups < REPORT_MAX_GROUPS && (got = skips_list(ds->skips, from, e, 64)) > 0; from += got)
      for (size_t k = 0; k < got && r->ngroups < REPORT_MAX_GROUPS; k++) {
        char id[REPORT_ID_MAX];
        size_t n = strlen(e[k].name);
        /* The message names the file first: said once. */
        const char *why = strncmp(e[k].why, e[k].name, n) == 0 && strncmp(e[k].why + n, ": ", 2) == 0
                              ? e[k].why + n + 2
                              : e[k].why;
        snprintf(id, sizeof id, "%s\t%s\t%s", ds->name, e[k].name, why);
        report_group_begin(r, "skipped", id);
        report_counter_put(r, "index", e[k].sample);
        report_counter_put(r, "reason", e[k].reason);
      }
  }
  free(e);
}

/* Each job's group (jobs.h): kind "job", id "JOB:DATASET" (the job in
 * hex), as many as the report has room for. */
static void stats_jobs(server *s, report_writer *r) {
  size_t n;
  jobs_view *v = jobs_collect(s, &n);
  for (size_t i = 0; i < n && r->ngroups < REPORT_MAX_GROUPS; i++) {
    report_group_begin(r, "job", v[i].rid);
    for (size_t k = 0; k < v[i].n; k++) report_counter_put(r, jobs_counter_name(k), v[i].v[k]);
  }
  free(v);
}

/* The daemon's CPU time so far, user and system, all threads. */
static uint64_t stats_cpu_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) < 0) return 0;
  return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
         (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

#define R(field, name, type, help) {offsetof(storage_remote_counts, field), name, "bfeed_remote_" name, type, help}
const stats_remote_row stats_remote_rows[] = {
    R(requests, "requests", "counter", "Requests to object stores and HTTP servers (tries)."),
    R(retries, "retries", "counter", "Tries after a failure of the moment (5xx, reset, timeout)."),
    R(failures, "failures", "counter", "Requests that failed after their last try."),
    R(bytes_fetched, "bytes_fetched", "counter", "Body bytes received from remote storage."),
    R(in_flight, "in_flight", "gauge", "Remote requests running now."),
    R(cache_hits, "cache_hits", "counter", "Block reads served from memory."),
    R(cache_disk_hits, "cache_disk_hits", "counter", "Block reads served from the cache folder."),
    R(cache_misses, "cache_misses", "counter", "Block reads that waited for a fetch."),
    R(prefetched, "prefetched", "counter", "Blocks fetched ahead of their reads."),
    R(cache_bytes_memory, "cache_memory_bytes", "gauge", "Remote blocks held in memory."),
    R(cache_bytes_disk, "cache_disk_bytes", "gauge", "Remote blocks kept in the cache folder."),
    R(evictions, "cache_evictions", "counter", "Blocks dropped from memory for newer ones."),
};
#undef R
const size_t stats_remote_nrows = sizeof stats_remote_rows / sizeof stats_remote_rows[0];

/* The remote backends' group, once they have been used. */
static void stats_remote(report_writer *r) {
  storage_remote_counts c;
  storage_remote_counts_get(&c);
  if (c.requests == 0) return;
  report_group_begin(r, "remote", "storage");
  for (size_t i = 0; i < stats_remote_nrows; i++)
    report_counter_put(r, stats_remote_rows[i].name, *(const uint64_t *)((const char *)&c + stats_remote_rows[i].off));
}

void stats_report(server *s, wbuf *w) {
  report_writer r;
  unsigned queued = 0, busy = 0;
  char id[REPORT_ID_MAX];
  if (s->workers) workers_load(s->workers, &queued, &busy);
  report_begin(&r, w);
  report_group_begin(&r, "daemon", "bfeedd");
  report_counter_put(&r, "uptime_s", (uv_hrtime() - s->started_ns) / 1000000000u);
  report_counter_put(&r, "uptime_us", (uv_hrtime() - s->started_ns) / 1000u);
  report_counter_put(&r, "cpu_us", stats_cpu_us());
  report_counter_put(&r, "clients", (uint64_t)s->nconns);
  report_counter_put(&r, "clients_total", s->clients_total);
  report_counter_put(&r, "clients_rejected", s->rejected_total);
  report_counter_put(&r, "protocol_errors", s->protocol_errors);
  report_counter_put(&r, "streams", (uint64_t)server_stream_count(s));
  report_counter_put(&r, "idle_streams", (uint64_t)flow_idle_streams(s->flow));
  report_counter_put(&r, "batches_dropped_idle", flow_dropped_idle_total(s->flow));
  report_counter_put(&r, "workers", s->workers ? (uint64_t)workers_count(s->workers) : 0);
  report_counter_put(&r, "workers_busy", busy);
  report_counter_put(&r, "worker_busy_us", s->workers ? workers_busy_ns(s->workers) / 1000 : 0);
  report_counter_put(&r, "queue_depth", queued);
  report_counter_put(&r, "datasets", s->ndatasets);
  report_counter_put(&r, "memory_held_bytes", flow_held(s->flow));
  report_counter_put(&r, "max_memory_bytes", s->limits.max_memory);
  report_counter_put(&r, "buffer_pool_bytes", s->buffers ? bufcache_idle_bytes(s->buffers) : 0);
  report_counter_put(&r, "decode_memory_bytes", decode_mem_held());
  report_counter_put(&r, "worker_scratch_bytes", batch_scratch_bytes());
  uint64_t shared = 0, saved = 0;
  for (ds_stats *d = s->stats; d; d = d->next) shared += d->shared, saved += d->bytes_saved;
  report_counter_put(&r, "share_builds", share_builds(s->share));
  report_counter_put(&r, "batches_shared", shared);
  report_counter_put(&r, "share_bytes_saved", saved);
  report_counter_put(&r, "share_held_bytes", share_held(s->share));
  report_counter_put(&r, "share_batches_held", share_batches_held(s->share));
  stats_remote(&r);
  stats_served(s);
  for (ds_stats *d = s->stats; d; d = d->next) {
    report_group_begin(&r, "dataset", d->name);
    report_counter_put(&r, "streams_total", d->streams);
    report_counter_put(&r, "samples", d->samples);
    report_counter_put(&r, "batches", d->batches);
    report_counter_put(&r, "raw_bytes", d->raw_bytes);
    report_counter_put(&r, "wire_bytes", d->wire_bytes);
    report_counter_put(&r, "skipped", d->skipped);
    report_counter_put(&r, "worker_busy_us", d->busy_ns / 1000);
    for (int k = 0; k < BATCH_STAGES; k++) {
      char name[REPORT_NAME_MAX];
      snprintf(name, sizeof name, "%s_us", batch_stage_names[k]);
      report_counter_put(&r, name, d->stage_ns[k] / 1000);
    }
    report_counter_put(&r, "batches_shared", d->shared);
    report_counter_put(&r, "bytes_saved", d->bytes_saved);
    dataset *ds = server_find_dataset(s, d->name);
    if (ds && (dataset_has_features(ds) || dataset_has_text(ds))) /* NaN or infinite values, served as they are */
      report_counter_put(&r, "nonfinite_values", ds->nonfinite);
    if (ds && dataset_background(ds)) { /* tfrecord, tar */
      report_counter_put(&r, "indexing", dataset_ready(ds, NULL, 0) == BFEED_EBUSY);
      report_counter_put(&r, "records_skipped", dataset_index_skipped(ds));
    }
    for (int k = 0; ds && ds->skips && k < SKIPS_REASONS; k++) {
      char name[REPORT_NAME_MAX];
      snprintf(name, sizeof name, "skipped_%s", skips_reason_name(k));
      report_counter_put(&r, name, skips_count(ds->skips, k));
    }
  }
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams; i++) {
      msg_counter ctr[MSG_MAX_COUNTERS];
      size_t n = stream_stats(c->streams[i], ctr, MSG_MAX_COUNTERS);
      snprintf(id, sizeof id, "%u/%u:%s", c->id, stream_id(c->streams[i]), stream_dataset(c->streams[i])->name);
      report_group_begin(&r, "stream", id);
      report_counter_put(&r, "client", c->id);
      report_counter_put(&r, "write_queue_bytes", c->write_queue);
      if (stream_job(c->streams[i])) report_counter_put(&r, "job", jobs_id(stream_job(c->streams[i])));
      for (size_t k = 0; k < n; k++) report_counter_put(&r, ctr[k].name, ctr[k].value);
    }
  stats_jobs(s, &r);
  stats_skipped(s, &r);
  report_end(&r);
}
