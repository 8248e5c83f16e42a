/* metrics.c -- see metrics.h */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "net.h"
#include "skips.h"
#include "stats.h"
#include "storage.h"
#include "stream.h"
#include "conn_impl.h"

#define HTTP_MAX_REQUEST 8192
#define HTTP_TIMEOUT_MS 5000
#define HTTP_MAX_CONNS 16 /* scrapers at once; more are hung up on at once */

struct metrics {
  uv_tcp_t tcp;
  server *s;
};

typedef struct http_conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  server *s;
  char req[HTTP_MAX_REQUEST];
  size_t len;
  int closing, pending;
  uv_write_t wr;
  uv_shutdown_t sd;
  wbuf out;
} http_conn;

static void printfw(wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printfw(wbuf *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  uint8_t *p = n >= 0 ? wbuf_reserve(w, (size_t)n + 1) : NULL;
  if (!p) return;
  va_start(ap, fmt);
  vsnprintf((char *)p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  w->len += (size_t)n;
}

/* Label values are dataset names: escape as the exposition format says. */
static void label(wbuf *w, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"') printfw(w, "\\%c", *v);
    else if (*v == '\n') printfw(w, "\\n");
    else printfw(w, "%c", *v);
  }
}

static void help(wbuf *w, const char *name, const char *type, const char *text) {
  printfw(w, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

typedef uint64_t (*ds_field)(const ds_stats *d);
static uint64_t f_streams(const ds_stats *d) { return d->streams; }
static uint64_t f_samples(const ds_stats *d) { return d->samples; }
static uint64_t f_batches(const ds_stats *d) { return d->batches; }
static uint64_t f_raw(const ds_stats *d) { return d->raw_bytes; }
static uint64_t f_wire(const ds_stats *d) { return d->wire_bytes; }
static uint64_t f_skipped(const ds_stats *d) { return d->skipped; }
static uint64_t f_shared(const ds_stats *d) { return d->shared; }
static uint64_t f_saved(const ds_stats *d) { return d->bytes_saved; }

static void ds_counter(wbuf *w, server *s, const char *name, const char *text, ds_field f) {
  help(w, name, "counter", text);
  for (ds_stats *d = s->stats; d; d = d->next) {
    printfw(w, "%s{dataset=\"", name);
    label(w, d->name);
    printfw(w, "\"} %llu\n", (unsigned long long)f(d));
  }
}

static void ds_hist(wbuf *w, server *s, const char *name, const char *text, size_t offset) {
  help(w, name, "histogram", text);
  for (ds_stats *d = s->stats; d; d = d->next) {
    const hist *h = (const hist *)((const char *)d + offset);
    uint64_t cum = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
      cum += h->counts[i];
      printfw(w, "%s_bucket{dataset=\"", name);
      label(w, d->name);
      printfw(w, "\",le=\"%g\"} %llu\n", h->bounds[i], (unsigned long long)cum);
    }
    printfw(w, "%s_bucket{dataset=\"", name);
    label(w, d->name);
    printfw(w, "\",le=\"+Inf\"} %llu\n%s_sum{dataset=\"", (unsigned long long)h->count, name);
    label(w, d->name);
    printfw(w, "\"} %.9f\n%s_count{dataset=\"", h->sum, name);
    label(w, d->name);
    printfw(w, "\"} %llu\n", (unsigned long long)h->count);
  }
}

/* The remote backends' counters (storage.h), daemon-wide, by stats.c's table. */
static void metrics_remote(wbuf *w) {
  storage_remote_counts c;
  storage_remote_counts_get(&c);
  for (size_t i = 0; i < stats_remote_nrows; i++) {
    const stats_remote_row *row = &stats_remote_rows[i];
    const char *suffix = strcmp(row->type, "counter") == 0 ? "_total" : "";
    printfw(w, "# HELP %s%s %s\n# TYPE %s%s %s\n", row->metric, suffix, row->help, row->metric, suffix, row->type);
    printfw(w, "%s%s %llu\n", row->metric, suffix, (unsigned long long)*(const uint64_t *)((const char *)&c + row->off));
  }
}

/* The client's timing and the memory waits, per open stream (labels
 * stream "client/stream" and dataset) and per job (job, its id in hex, and
 * dataset): the families bfeed_stream_* and bfeed_job_*, from counters
 * of the same names (a job's timing is its loop's, jobs.h). */
static const struct {
  const char *suffix, *counter, *type, *help;
  double scale;
} metrics_timing_rows[] = {
    {"wait_fraction", "wait_fraction_ppm", "gauge",
     "Share of the client's time (a job's: its loop's) spent waiting for batches since it began: wait / (wait + "
     "step).", 1e-6},
    {"client_wait_seconds_total", "client_wait_us", "counter",
     "Time the client's caller (a job's: its loop) waited for batches (the first batch apart).", 1e-6},
    {"client_step_seconds_total", "client_step_us", "counter",
     "Time between the client's next calls: the training step.", 1e-6},
    {"client_batches_total", "client_batches", "counter", "Batches the client's caller took.", 1},
    {"memory_wait_seconds_total", "memory_wait_us", "counter",
     "Time the window had room while max_memory kept it from making a batch (a job's: summed over its streams).",
     1e-6},
};
#define METRICS_NTIMING (sizeof metrics_timing_rows / sizeof metrics_timing_rows[0])

/* One series of each family: its labels' values and its counters. */
typedef struct metrics_series {
  char id[64];
  const char *dataset;
  uint64_t v[METRICS_NTIMING];
} metrics_series;

static void metrics_take(metrics_series *se, const char *counter, uint64_t value) {
  for (size_t k = 0; k < METRICS_NTIMING; k++)
    if (strcmp(metrics_timing_rows[k].counter, counter) == 0) se->v[k] = value;
}

/* Family by family, as the format wants: bfeed_KIND_SUFFIX{KIND="id",dataset="..."}. */
static void metrics_timing(wbuf *w, const char *kind, const metrics_series *se, size_t n) {
  for (size_t k = 0; k < METRICS_NTIMING; k++) {
    char name[96];
    snprintf(name, sizeof name, "bfeed_%s_%s", kind, metrics_timing_rows[k].suffix);
    help(w, name, metrics_timing_rows[k].type, metrics_timing_rows[k].help);
    for (size_t i = 0; i < n; i++) {
      printfw(w, "%s{%s=\"%s\",dataset=\"", name, kind, se[i].id);
      label(w, se[i].dataset);
      printfw(w, "\"} %.6f\n", (double)se[i].v[k] * metrics_timing_rows[k].scale);
    }
  }
}

/* Each stream's counters read once (stream_stats asks the workers for
 * their busy time). */
static void metrics_streams(wbuf *w, server *s) {
  size_t n = (size_t)server_stream_count(s), at = 0;
  metrics_series *se = n ? calloc(n, sizeof *se) : NULL;
  if (n && !se) return;
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams && at < n; i++, at++) {
      msg_counter ctr[MSG_MAX_COUNTERS];
      size_t got = stream_stats(c->streams[i], ctr, MSG_MAX_COUNTERS);
      snprintf(se[at].id, sizeof se[at].id, "%u/%u", c->id, stream_id(c->streams[i]));
      se[at].dataset = stream_dataset(c->streams[i])->name;
      for (size_t j = 0; j < got; j++) metrics_take(&se[at], ctr[j].name, ctr[j].value);
    }
  metrics_timing(w, "stream", se, at);
  free(se);
}

static void metrics_jobs(wbuf *w, server *s) {
  size_t n;
  jobs_view *v = jobs_collect(s, &n);
  metrics_series *se = n ? calloc(n, sizeof *se) : NULL;
  if (n && !se) n = 0;
  for (size_t i = 0; i < n; i++) {
    snprintf(se[i].id, sizeof se[i].id, "%016llx", (unsigned long long)v[i].id);
    se[i].dataset = v[i].dataset;
    for (size_t k = 0; k < v[i].n; k++) metrics_take(&se[i], jobs_counter_name(k), v[i].v[k]);
  }
  metrics_timing(w, "job", se, n);
  free(se);
  free(v);
}

void metrics_render(server *s, wbuf *w) {
  unsigned queued = 0, busy = 0;
  stats_served(s);
  if (s->workers) workers_load(s->workers, &queued, &busy);
  help(w, "bfeed_up", "gauge", "1 while bfeedd is serving.");
  printfw(w, "bfeed_up 1\n");
  help(w, "bfeed_uptime_seconds", "gauge", "Seconds since bfeedd started.");
  printfw(w, "bfeed_uptime_seconds %.3f\n", (double)(uv_hrtime() - s->started_ns) * 1e-9);
  help(w, "bfeed_clients", "gauge", "Clients connected now.");
  printfw(w, "bfeed_clients %d\n", s->nconns);
  help(w, "bfeed_clients_total", "counter", "Client connections accepted.");
  printfw(w, "bfeed_clients_total %llu\n", (unsigned long long)s->clients_total);
  help(w, "bfeed_protocol_errors_total", "counter", "Clients disconnected for breaking the protocol.");
  printfw(w, "bfeed_protocol_errors_total %llu\n", (unsigned long long)s->protocol_errors);
  help(w, "bfeed_streams", "gauge", "Streams open now.");
  printfw(w, "bfeed_streams %d\n", server_stream_count(s));
  help(w, "bfeed_idle_streams", "gauge", "Open streams whose client has stopped taking batches (PROTOCOL.md).");
  printfw(w, "bfeed_idle_streams %d\n", flow_idle_streams(s->flow));
  help(w, "bfeed_batches_dropped_idle_total", "counter", "Finished batches freed from idle streams, made again later.");
  printfw(w, "bfeed_batches_dropped_idle_total %llu\n", (unsigned long long)flow_dropped_idle_total(s->flow));
  help(w, "bfeed_workers", "gauge", "Worker threads.");
  printfw(w, "bfeed_workers %d\n", s->workers ? workers_count(s->workers) : 0);
  help(w, "bfeed_workers_busy", "gauge", "Worker threads building a batch now.");
  printfw(w, "bfeed_workers_busy %u\n", busy);
  help(w, "bfeed_queue_depth", "gauge", "Batches waiting for a worker.");
  printfw(w, "bfeed_queue_depth %u\n", queued);
  ds_counter(w, s, "bfeed_streams_opened_total", "Streams opened, per dataset.", f_streams);
  ds_counter(w, s, "bfeed_samples_total", "Samples sent, per dataset.", f_samples);
  ds_counter(w, s, "bfeed_batches_total", "Batches sent, per dataset.", f_batches);
  ds_counter(w, s, "bfeed_raw_bytes_total", "Tensor bytes sent before compression.", f_raw);
  ds_counter(w, s, "bfeed_wire_bytes_total", "Bytes of batch frames sent.", f_wire);
  ds_counter(w, s, "bfeed_skipped_files_total", "Samples replaced because their file did not decode.", f_skipped);
  help(w, "bfeed_skipped_samples_total", "counter",
       "Samples found bad, once each, by reason (corrupt, too_large, unreadable): bfeed stats --skipped lists them.");
  for (size_t i = 0; i < s->ndatasets; i++)
    for (int k = 0; s->datasets[i]->skips && k < SKIPS_REASONS; k++) {
      printfw(w, "bfeed_skipped_samples_total{dataset=\"");
      label(w, s->datasets[i]->name);
      printfw(w, "\",reason=\"%s\"} %llu\n", skips_reason_name(k),
              (unsigned long long)skips_count(s->datasets[i]->skips, k));
    }
  ds_counter(w, s, "bfeed_batches_shared_total", "Batches sent that were built for another stream first (share.h).",
             f_shared);
  ds_counter(w, s, "bfeed_share_bytes_saved_total", "Tensor bytes of those batches: building not done again.", f_saved);
  help(w, "bfeed_share_builds_total", "counter", "Batches built once for every stream that wants the same bytes.");
  printfw(w, "bfeed_share_builds_total %llu\n", (unsigned long long)share_builds(s->share));
  help(w, "bfeed_share_held_bytes", "gauge", "Bytes of shared batches alive now, each counted once.");
  printfw(w, "bfeed_share_held_bytes %llu\n", (unsigned long long)share_held(s->share));
  help(w, "bfeed_worker_busy_seconds_total", "counter", "Worker time spent building batches, per dataset.");
  for (ds_stats *d = s->stats; d; d = d->next) {
    printfw(w, "bfeed_worker_busy_seconds_total{dataset=\"");
    label(w, d->name);
    printfw(w, "\"} %.6f\n", (double)d->busy_ns * 1e-9);
  }
  help(w, "bfeed_stage_seconds_total", "counter",
       "Worker time by stage (read, decode, resize, batch: cast, assemble, compress), per dataset.");
  for (ds_stats *d = s->stats; d; d = d->next)
    for (int k = 0; k < BATCH_STAGES; k++) {
      printfw(w, "bfeed_stage_seconds_total{dataset=\"");
      label(w, d->name);
      printfw(w, "\",stage=\"%s\"} %.6f\n", batch_stage_names[k], (double)d->stage_ns[k] * 1e-9);
    }
  metrics_streams(w, s);
  metrics_jobs(w, s);
  ds_hist(w, s, "bfeed_batch_latency_seconds", "From scheduling a batch to queueing it on the socket.",
          offsetof(ds_stats, batch_latency));
  ds_hist(w, s, "bfeed_sample_seconds", "Worker time per sample: read, decode, transform, cast.",
          offsetof(ds_stats, sample_time));
  metrics_remote(w);
}

/* ------------------------------------------------------------------ */
/* HTTP                                                                */

static void on_http_closed(uv_handle_t *h) {
  http_conn *hc = h->data;
  if (--hc->pending == 0) {
    hc->s->http_conns--;
    wbuf_free(&hc->out);
    free(hc);
  }
}

static void http_close(http_conn *hc) {
  if (hc->closing) return;
  hc->closing = 1;
  uv_close((uv_handle_t *)&hc->tcp, on_http_closed);
  uv_close((uv_handle_t *)&hc->timer, on_http_closed);
}

static void on_http_shutdown(uv_shutdown_t *req, int status) {
  (void)status;
  http_close(req->data);
}

static void on_http_written(uv_write_t *req, int status) {
  http_conn *hc = req->data;
  if (status < 0 || uv_shutdown(&hc->sd, (uv_stream_t *)&hc->tcp, on_http_shutdown) < 0) http_close(hc);
}

static void respond(http_conn *hc, const char *status, const char *ctype, const char *body, size_t blen) {
  wbuf *w = &hc->out;
  wbuf h;
  wbuf_init(&h);
  printfw(&h, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status, ctype,
          blen);
  wbuf_bytes(&h, body, blen);
  wbuf_free(w);
  *w = h;
  uv_read_stop((uv_stream_t *)&hc->tcp);
  if (w->failed) return http_close(hc);
  uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
  hc->wr.data = hc->sd.data = hc;
  if (uv_write(&hc->wr, (uv_stream_t *)&hc->tcp, &b, 1, on_http_written) < 0) http_close(hc);
}

/* /readyz: 0 when every dataset can serve and the daemon is not stopping,
 * else BFEED_ESHUTDOWN or the first dataset's code, the reason in err as
 * the response's one line. */
static int metrics_ready(server *s, char *err, size_t errlen) {
  if (s->stopping) return snprintf(err, errlen, "shutting down\n"), BFEED_ESHUTDOWN;
  for (size_t i = 0; i < s->ndatasets; i++) {
    char msg[MSG_ERROR_MAX];
    int rc = dataset_ready(s->datasets[i], msg, sizeof msg);
    if (rc < 0) {
      for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
      return snprintf(err, errlen, "%s\n", msg), rc;
    }
  }
  return 0;
}

static void handle_request(http_conn *hc) {
  static const char text[] = "text/plain; charset=utf-8";
  char method[16], path[256], err[MSG_ERROR_MAX + 2];
  if (sscanf(hc->req, "%15s %255s", method, path) != 2) return respond(hc, "400 Bad Request", text, "bad request\n", 12);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return respond(hc, "405 Method Not Allowed", text, "only GET\n", 9);
  int head = strcmp(method, "HEAD") == 0;
  /* Liveness: the loop answered, so the daemon is not wedged. */
  if (strcmp(path, "/healthz") == 0) return respond(hc, "200 OK", text, "ok\n", head ? 0 : 3);
  if (strcmp(path, "/readyz") == 0) {
    if (metrics_ready(hc->s, err, sizeof err) == 0) return respond(hc, "200 OK", text, "ready\n", head ? 0 : 6);
    return respond(hc, "503 Service Unavailable", text, err, head ? 0 : strlen(err));
  }
  if (strcmp(path, "/metrics") != 0)
    return respond(hc, "404 Not Found", text, "try /metrics, /healthz or /readyz\n", 34);
  wbuf body;
  wbuf_init(&body);
  metrics_render(hc->s, &body);
  if (body.failed) {
    wbuf_free(&body);
    return respond(hc, "500 Internal Server Error", text, "out of memory\n", 14);
  }
  respond(hc, "200 OK", "text/plain; version=0.0.4; charset=utf-8", strcmp(method, "HEAD") ? (char *)body.data : "",
          strcmp(method, "HEAD") ? body.len : 0);
  wbuf_free(&body);
}

static void on_http_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  http_conn *hc = h->data;
  (void)suggested;
  *buf = uv_buf_init(hc->req + hc->len, (unsigned)(sizeof hc->req - 1 - hc->len));
}

static void on_http_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  http_conn *hc = st->data;
  (void)buf;
  if (n < 0) return http_close(hc);
  hc->len += (size_t)n;
  hc->req[hc->len] = 0;
  if (strstr(hc->req, "\r\n\r\n") || strstr(hc->req, "\n\n")) return handle_request(hc);
  if (hc->len >= sizeof hc->req - 1) {
    static const char msg[] = "request too large\n";
    respond(hc, "431 Request Header Fields Too Large", "text/plain", msg, sizeof msg - 1);
  }
}

static void on_http_timeout(uv_timer_t *t) { http_close(t->data); }

static void on_http_connection(uv_stream_t *ls, int status) {
  metrics *m = ls->data;
  if (status < 0) return;
  http_conn *hc = calloc(1, sizeof *hc);
  if (!hc) return;
  hc->s = m->s;
  if (uv_tcp_init(ls->loop, &hc->tcp) < 0) return free(hc);
  uv_timer_init(ls->loop, &hc->timer);
  hc->tcp.data = hc->timer.data = hc;
  hc->pending = 2;
  m->s->http_conns++;
  if (uv_accept(ls, (uv_stream_t *)&hc->tcp) < 0 || m->s->http_conns > HTTP_MAX_CONNS) return http_close(hc);
  uv_timer_start(&hc->timer, on_http_timeout, HTTP_TIMEOUT_MS, 0);
  if (uv_read_start((uv_stream_t *)&hc->tcp, on_http_alloc, on_http_read) < 0) http_close(hc);
}

int metrics_start(metrics **out, server *s, const char *addr, char *err, size_t errlen) {
  addr_spec a;
  *out = NULL;
  if (addr_parse(addr, &a, err, errlen) < 0) return BFEED_EINVAL;
  if (a.kind != ADDR_TCP) return snprintf(err, errlen, "metrics_listen %s: expected HOST:PORT", addr), BFEED_EINVAL;
  metrics *m = calloc(1, sizeof *m);
  if (!m) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  m->s = s;
  char what[300], name[300];
  int inited;
  snprintf(what, sizeof what, "metrics_listen %s", addr);
  m->tcp.data = m;
  int rc = net_tcp_listen(s->loop, &m->tcp, a.host, a.port, 16, on_http_connection, what, name, sizeof name, &inited,
                          err, errlen);
  if (rc < 0) {
    if (inited) uv_close((uv_handle_t *)&m->tcp, (uv_close_cb)free);
    else free(m);
    return rc;
  }
  log_info(s->log, "metrics on http://%s/metrics", name);
  *out = m;
  return 0;
}

void metrics_stop(metrics *m) {
  if (m) uv_close((uv_handle_t *)&m->tcp, (uv_close_cb)free);
}
