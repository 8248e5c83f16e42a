/*
 * cmd_bench.c -- `bfeed bench`: how fast does the daemon feed a training loop?
 *
 * Consumes a stream as a trainer would, as fast as batches come, and times
 * the wait for each batch. Shows progress on a terminal, ends with one
 * summary, and with --json prints a JSON object as the whole of stdout (the
 * summary then goes to stderr). Works on every
 * dataset kind: samples are counted from the `index` tensor; batches with
 * a `length` tensor (text) also report tokens/s -- the tokens served, not
 * the padding -- and how much of the tokens tensor padding takes. The CPU
 * both sides spend per 1000 samples: this process's (the library's reader
 * thread and the loop), and the daemon's, from its stats report.
 *
 * --step-ms MS stands in for a trainer: each batch is held for MS
 * milliseconds of CPU work before the next is asked for. The summary then
 * says what share of its time the loop waited (wait_fraction,
 * bfeed_stream_get_timing) and the stream's verdict (verdict.h): is this
 * job input-bound, and by what.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bfeed.h"
#include "codec.h"
#include "opts.h"
#include "cli.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "verdict.h"

typedef struct bench_args {
  cli_stream_cmd c;
  uint64_t batches, epochs, warmup;
  double step_ms; /* the trainer's step stood in for: CPU held per batch */
  int json;
} bench_args;

static int cmd_bench_takes_value(const char *name) {
  return strcmp(name, "batches") == 0 || strcmp(name, "epochs") == 0 || strcmp(name, "warmup") == 0 ||
         strcmp(name, "step-ms") == 0;
}

static int cmd_bench_opt(const char *name, const char *value, void *ctx) {
  bench_args *b = ctx;
  if (strcmp(name, "json") == 0) return b->json = 1, 1;
  if (strcmp(name, "batches") == 0) return cli_u64(name, value, 1, UINT64_MAX, &b->batches) < 0 ? -1 : 1;
  if (strcmp(name, "epochs") == 0) return cli_u64(name, value, 1, 1000000, &b->epochs) < 0 ? -1 : 1;
  if (strcmp(name, "warmup") == 0) return cli_u64(name, value, 0, UINT64_MAX, &b->warmup) < 0 ? -1 : 1;
  if (strcmp(name, "step-ms") == 0) {
    char *end;
    b->step_ms = strtod(value, &end);
    if (*end || !(b->step_ms >= 0 && b->step_ms <= 600000))
      return fprintf(stderr, "bfeed bench: --step-ms %s: expected milliseconds, 0..600000\n", value), -1;
    return 1;
  }
  return 0;
}

static const char bench_usage[] =
    "usage: bfeed bench --connect ADDR --dataset NAME [stream options] [--batches N | --epochs E]\n"
    "                   [--warmup N] [--step-ms MS] [--json]\n"
    "Reads a stream as a trainer would and reports samples/s, MB/s and batch wait times.\n"
    "  --batches N             measure N batches (after the warm-up)\n"
    "  --epochs E              measure E whole epochs (default: 1)\n"
    "  --warmup N              batches read before the clock starts (0)\n"
    "  --step-ms MS            hold each batch for MS ms of CPU work, as a training step would,\n"
    "                          and say whether that job is input-bound, and by what\n"
    "  --json                  print one JSON object on stdout; the summary goes to stderr\n\n";

/* 0 parsed, 1 help or version printed, -1 error printed. */
static int cmd_bench_parse(int argc, char **argv, bench_args *b) {
  memset(b, 0, sizeof *b);
  b->c.cmd = "bench";
  b->c.usage = bench_usage;
  int r = cli_parse_stream_cmd(argc, argv, &b->c, cmd_bench_opt, cmd_bench_takes_value, b);
  if (r != 0) return r;
  if (b->batches && b->epochs) return fprintf(stderr, "bfeed bench: give --batches or --epochs, not both\n"), -1;
  if (!b->batches && !b->epochs) b->epochs = 1;
  return 0;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double cmd_bench_percentile(const double *v, size_t n, double p) {
  if (n == 0) return 0;
  size_t k = (size_t)ceil(p / 100.0 * (double)n);
  return v[k > 0 ? k - 1 : 0];
}

static uint64_t cmd_bench_counter(const bfeed_counter *c, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].name, name) == 0) return c[i].value;
  return 0;
}

typedef struct bench_result {
  uint64_t batches, samples, wire, raw, skipped;
  uint64_t all_samples;               /* warmup included: what the CPU times cover */
  double client_cpu_s, daemon_cpu_s;  /* daemon: < 0 when its report has no cpu_us */
  uint64_t reconnects; /* connections lost and made again (the stream resumed exactly) */
  double kcopy_per_batch; /* batch bytes the daemon wrote to the socket, per batch it sent (0: shared memory) */
  uint64_t shm_batches;   /* batches that came through the shared-memory ring */
  uint64_t tokens, slots; /* text: tokens served, and token slots of the tokens tensors (B x T) */
  int text;
  double seconds, first_ms, p50, p99;
  bfeed_stream_timing timing; /* what the loop waited (libbfeed's measure) */
  char verdict[512];          /* the stream's, "" when its daemon's report was not had */
} bench_result;

/* Count a batch; -1 when it lacks the tensors every kind serves. */
static int cmd_bench_tally(const bfeed_batch *batch, bench_result *r) {
  bfeed_tensor ix, len, tok;
  if (bfeed_batch_find(batch, "index", &ix) < 0 || ix.dtype != BFEED_DTYPE_I64 || ix.ndim != 1) return -1;
  r->samples += (uint64_t)ix.shape[0];
  if (bfeed_batch_find(batch, "length", &len) == 0 && len.dtype == BFEED_DTYPE_I32 && len.ndim == 1) {
    const int32_t *l = len.data;
    r->text = 1;
    for (int64_t i = 0; i < len.shape[0]; i++) r->tokens += (uint64_t)(l[i] > 0 ? l[i] : 0);
    if (bfeed_batch_find(batch, "tokens", &tok) == 0 && tok.ndim == 3) r->slots += (uint64_t)(tok.shape[0] * tok.shape[1]);
  }
  return 0;
}

/* Busy the CPU for ms milliseconds, as a training step would (a sleep
 * would leave the CPU to the daemon on the same host). */
static volatile uint64_t cmd_bench_sink; /* what the step computes, so that it is computed */
static void cmd_bench_step(double ms) {
  if (ms <= 0) return;
  double until = cli_now_s() + ms * 1e-3;
  while (cli_now_s() < until)
    for (int i = 0; i < 1000; i++) cmd_bench_sink += (uint64_t)i;
}

/* The verdict on the stream whose counters are ctr[0..n), with its
 * daemon's group (one daemon only: a fan-out's members each have theirs). */
static void cmd_bench_verdict(bfeed_client *c, const bfeed_counter *ctr, size_t n, char *buf, size_t cap) {
  bfeed_stat_group *g, mine = {.kind = "stream", .id = "", .ncounters = n, .counters = ctr};
  size_t ng;
  bfeed_error err;
  buf[0] = 0;
  if (bfeed_client_endpoints(c) != 1 || bfeed_daemon_stats(c, &g, &ng, &err) < 0) return;
  for (size_t i = 0; i < ng; i++)
    if (strcmp(g[i].kind, "daemon") == 0) verdict_judge(&mine, NULL, &g[i], NULL, buf, cap);
  bfeed_daemon_stats_free(g, ng);
}

/* This process's CPU seconds so far, user and system, all threads. */
static double cmd_bench_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The daemon's CPU seconds so far (its "daemon" group's cpu_us), or -1. */
static double cmd_bench_one_daemon_cpu_s(bfeed_client *c) {
  bfeed_stat_group *g;
  size_t n;
  bfeed_error err;
  double v = -1;
  if (bfeed_daemon_stats(c, &g, &n, &err) < 0) return -1;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; strcmp(g[i].kind, "daemon") == 0 && k < g[i].ncounters; k++)
      if (strcmp(g[i].counters[k].name, "cpu_us") == 0) v = g[i].counters[k].value / 1e6;
  bfeed_daemon_stats_free(g, n);
  return v;
}

/* The same summed over the daemons behind c (several: one connection to
 * each, for the question), or -1 when one does not say. */
static double cmd_bench_daemon_cpu_s(bfeed_client *c) {
  size_t n = bfeed_client_endpoints(c);
  if (n == 1) return cmd_bench_one_daemon_cpu_s(c);
  double sum = 0;
  for (size_t i = 0; i < n && sum >= 0; i++) {
    char ep[256];
    bfeed_client *m;
    bfeed_error err;
    if (bfeed_client_endpoint(c, i, ep, sizeof ep) < 0 || bfeed_connect(ep, &m, &err) < 0) return -1;
    double v = cmd_bench_one_daemon_cpu_s(m);
    bfeed_close(m);
    sum = v < 0 ? -1 : sum + v;
  }
  return sum;
}

static void cmd_bench_report(const bench_args *b, const bench_result *r) {
  const bfeed_stream_opts *o = &b->c.o;
  const char *mode = o->mode == BFEED_MODE_EVAL ? "eval" : "train";
  const codec_info *ci = codec_get(o->codec);
  const char *codec = ci ? ci->name : o->codec == BFEED_CODEC_AUTO ? "auto" : "?";
  double sps = r->seconds > 0 ? r->samples / r->seconds : 0;
  double tps = r->seconds > 0 ? r->tokens / r->seconds : 0;
  FILE *h = b->json ? stderr : stdout; /* with --json, stdout is the JSON document alone */
  char text[160];
  opts_text_describe(o, text, sizeof text);
  if (r->text)
    fprintf(h, "bfeed bench: %s on %s, text, batch %u, %s, codec %s\n", b->c.dataset, b->c.connect, o->batch, text,
            codec);
  else
    fprintf(h, "bfeed bench: %s on %s, %s %ux%u, batch %u, %s, codec %s\n", b->c.dataset, b->c.connect, mode, o->size,
           o->width ? o->width : o->size, o->batch, o->layout == BFEED_LAYOUT_NHWC ? "NHWC" : "NCHW", codec);
  fprintf(h, "  %llu batches, %llu samples in %.3f s: %.1f samples/s (%.1f MB/s of bf16)\n",
         (unsigned long long)r->batches, (unsigned long long)r->samples, r->seconds, sps,
         r->seconds > 0 ? r->raw / r->seconds / 1e6 : 0);
  if (r->text) {
    fprintf(h, "  %llu tokens: %.1f tokens/s", (unsigned long long)r->tokens, tps);
    if (r->slots) fprintf(h, "; tokens fill %.1f%% of the padded [B,T] slots", 100.0 * (double)r->tokens / (double)r->slots);
    fprintf(h, "\n");
  }
  fprintf(h, "  batch wait: p50 %.2f ms, p99 %.2f ms; first batch after %.1f ms\n", r->p50, r->p99, r->first_ms);
  fprintf(h, "  wire %.1f MB for %.1f MB of tensors (ratio %.3f); skipped files: %llu\n", r->wire / 1e6, r->raw / 1e6,
         r->raw ? (double)r->wire / r->raw : 0, (unsigned long long)r->skipped);
  double per_k = r->all_samples ? 1000.0 / (double)r->all_samples : 0;
  fprintf(h, "  CPU per 1000 samples: client %.3f s, daemon ", r->client_cpu_s * per_k);
  fprintf(h, r->daemon_cpu_s < 0 ? "unknown\n" : "%.3f s\n", r->daemon_cpu_s * per_k);
  fprintf(h, "  kernel copy bytes per batch: %.0f (%llu batches from shared memory)\n", r->kcopy_per_batch,
          (unsigned long long)r->shm_batches);
  fprintf(h, "  reconnects: %llu%s\n", (unsigned long long)r->reconnects,
          r->reconnects ? " (the stream resumed where it stood; the waits include the outages)" : "");
  fprintf(h, "  wait_fraction %.3f (waited %.3f s, stepped %.3f s%s)\n", r->timing.wait_fraction,
          (double)r->timing.wait_ns * 1e-9, (double)r->timing.step_ns * 1e-9,
          b->step_ms > 0 ? "" : "; no --step-ms: the loop does nothing but read");
  if (r->verdict[0]) fprintf(h, "  verdict: %s\n", r->verdict);
  if (!b->json) return;
  printf("{\"dataset\":");
  cli_json_str(stdout, b->c.dataset);
  printf(",\"mode\":\"%s\",\"size\":%u,\"width\":%u,\"batch\":%u,\"codec\":\"%s\",\"samples\":%llu,\"batches\":%llu,"
         "\"seconds\":%.4f,\"samples_per_s\":%.2f,\"wire_bytes\":%llu,\"raw_bytes\":%llu,\"p50_batch_ms\":%.3f,"
         "\"p99_batch_ms\":%.3f,\"first_batch_ms\":%.2f,\"skipped\":%llu,\"reconnects\":%llu",
         mode, o->size, o->width ? o->width : o->size, o->batch, codec, (unsigned long long)r->samples, (unsigned long long)r->batches, r->seconds,
         sps, (unsigned long long)r->wire, (unsigned long long)r->raw, r->p50, r->p99, r->first_ms,
         (unsigned long long)r->skipped, (unsigned long long)r->reconnects);
  printf(",\"client_cpu_s_per_1k\":%.4f", r->client_cpu_s * per_k);
  printf(",\"wait_fraction\":%.4f,\"step_ms\":%.3f,\"verdict\":", r->timing.wait_fraction, b->step_ms);
  cli_json_str(stdout, r->verdict);
  printf(",\"kernel_copy_bytes_per_batch\":%.0f,\"shm_batches\":%llu", r->kcopy_per_batch,
         (unsigned long long)r->shm_batches);
  if (r->daemon_cpu_s >= 0) printf(",\"daemon_cpu_s_per_1k\":%.4f", r->daemon_cpu_s * per_k);
  if (r->text)
    printf(",\"tokens\":%llu,\"tokens_per_s\":%.2f,\"token_slots\":%llu", (unsigned long long)r->tokens, tps,
           (unsigned long long)r->slots);
  printf("}\n");
}

int cmd_bench(int argc, char **argv) {
  bench_args b;
  int pr = cmd_bench_parse(argc, argv, &b);
  if (pr != 0) return pr > 0 ? 0 : 2;
  bfeed_error err;
  bfeed_client *c;
  bfeed_stream *s;
  if (b.epochs) b.c.o.epochs = b.epochs;
  double t_open = cli_now_s();
  if (cli_open_stream(&b.c, &c, &s) < 0) return 1;
  bfeed_stream_info info;
  bfeed_stream_get_info(s, &info);
  uint64_t total = b.batches ? b.batches + b.warmup : b.epochs * info.batches_per_epoch;
  double *lat = total > b.warmup ? malloc((total - b.warmup) * sizeof *lat) : NULL;
  if (!lat) {
    fprintf(stderr, "bfeed bench: %s\n", total > b.warmup ? "out of memory" : "--warmup leaves no batch to measure");
    bfeed_stream_close(s);
    bfeed_close(c);
    return 2;
  }
  int tty = isatty(STDERR_FILENO) && !b.json, rc = 0;
  bench_result r = {0};
  double cpu0 = cmd_bench_cpu_s(), dcpu0 = cmd_bench_daemon_cpu_s(c);
  double t0 = cli_now_s(), last_print = 0, prev = t0;
  for (uint64_t n = 0; n < total; n++) {
    bfeed_batch *batch;
    double asked = cli_now_s();
    int got = bfeed_stream_next(s, &batch, &err);
    double t = cli_now_s();
    if (got == BFEED_EEOF) break;
    if (got < 0) {
      fprintf(stderr, "%sbfeed bench: batch %llu: %s\n", tty ? "\n" : "", (unsigned long long)n, err.message);
      rc = 1;
      break;
    }
    if (n == 0) r.first_ms = (t - t_open) * 1e3;
    bfeed_tensor ix;
    if (bfeed_batch_find(batch, "index", &ix) == 0 && ix.ndim == 1) r.all_samples += (uint64_t)ix.shape[0];
    if (n == b.warmup) t0 = prev; /* the clock starts when the first measured wait begins */
    if (n >= b.warmup) {
      if (cmd_bench_tally(batch, &r) < 0) {
        fprintf(stderr, "bfeed bench: batch %llu has no i64 [B] index tensor\n", (unsigned long long)n);
        bfeed_batch_release(batch);
        rc = 1;
        break;
      }
      lat[r.batches++] = (t - (b.step_ms > 0 ? asked : prev)) * 1e3;
      r.wire += bfeed_batch_wire_bytes(batch);
      r.raw += bfeed_batch_raw_bytes(batch);
    }
    cmd_bench_step(b.step_ms);
    bfeed_batch_release(batch);
    prev = t;
    if (tty && t - last_print > 0.25) {
      double el = t - t0;
      fprintf(stderr, "\r  batch %llu/%llu  epoch %llu  %.0f samples/s   ", (unsigned long long)n + 1,
              (unsigned long long)total,
              (unsigned long long)(b.c.o.epoch + (b.c.o.batch_index + n) / info.batches_per_epoch),
              el > 0 && r.batches ? r.samples / el : 0.0);
      last_print = t;
    }
  }
  r.seconds = prev - t0;
  r.client_cpu_s = cmd_bench_cpu_s() - cpu0;
  double dcpu1 = dcpu0 >= 0 && rc == 0 ? cmd_bench_daemon_cpu_s(c) : -1;
  r.daemon_cpu_s = dcpu1 >= 0 ? dcpu1 - dcpu0 : -1;
  if (tty) fprintf(stderr, "\r%60s\r", "");
  bfeed_counter ctr[64];
  size_t nctr = 0;
  bfeed_stream_get_timing(s, &r.timing);
  if (rc == 0 && bfeed_stream_stats(s, ctr, 64, &nctr, &err) < 0)
    fprintf(stderr, "bfeed bench: cannot read the stream's counters: %s\n", err.message);
  else if (rc == 0) cmd_bench_verdict(c, ctr, nctr, r.verdict, sizeof r.verdict);
  r.skipped = cmd_bench_counter(ctr, nctr, "skipped");
  uint64_t sent = cmd_bench_counter(ctr, nctr, "batches");
  r.kcopy_per_batch = sent ? (double)cmd_bench_counter(ctr, nctr, "kernel_copy_bytes") / (double)sent : 0;
  r.shm_batches = cmd_bench_counter(ctr, nctr, "shm_batches");
  r.reconnects = bfeed_client_reconnects(c);
  if (r.reconnects) r.daemon_cpu_s = -1; /* the daemon's counter started again with it */
  bfeed_stream_close(s);
  bfeed_close(c);
  qsort(lat, r.batches, sizeof *lat, cli_cmp_double);
  r.p50 = cmd_bench_percentile(lat, r.batches, 50);
  r.p99 = cmd_bench_percentile(lat, r.batches, 99);
  free(lat);
  if (rc == 0) cmd_bench_report(&b, &r);
  return rc;
}
