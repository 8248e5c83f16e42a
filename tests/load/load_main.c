/*
 * load_main.c -- the load test: bfeedd on loopback (a Unix socket and TCP)
 * under many well-behaved clients, with non-reading clients, STATS floods
 * and silent sockets beside them, a reload (SIGHUP) a quarter of the way
 * through and a kill -9 and restart half way.
 *
 *   load_test [--clients N] [--seconds S] [--max-memory BYTES]
 *
 * Before the load, one clean client reads every batch the others will ask
 * for and records its hash; under load every batch a client gets is checked
 * against it. The daemon's RSS is sampled from /proc every 100 ms. Prints
 * the figures (clients, batches, errors, reconnects, peak RSS against
 * max_memory); fails when a batch differs from the reference, when a
 * client fails other than across the restart, when no batch was served,
 * when the daemon does not exit 0 on SIGTERM at the end, or when its peak
 * RSS passes max_memory + LOAD_RSS_SLACK (the code, libraries and indexes
 * that max_memory does not count). Under a sanitizer RSS says nothing
 * about the daemon (ASan's quarantine, TSan's shadow memory), so there
 * it is printed only.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "load.h"

#define LOAD_RSS_SLACK (64ull << 20)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOAD_CHECK_RSS 0
#else
#define LOAD_CHECK_RSS 1
#endif

double load_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void load_addr(load *l, int tcp, char *out, size_t cap) {
  pthread_mutex_lock(&l->mu);
  snprintf(out, cap, "%s", tcp ? l->d.tcp_addr : l->d.unix_addr);
  pthread_mutex_unlock(&l->mu);
}

void load_error(load *l, const char *who, const char *what) {
  static _Atomic int printed;
  if (atomic_fetch_add(&printed, 1) < 20)
    fprintf(stderr, "[%.1f s] %s: %s\n", load_now() - l->t0, who, what);
}

void load_config_opts(int c, bfeed_stream_opts *o) {
  itest_opts(o);
  o->seed = 1000 + (uint64_t)c;
  o->codec = c % 2 ? BFEED_CODEC_ZSTD : BFEED_CODEC_NONE;
  o->layout = c >= 2 ? BFEED_LAYOUT_NHWC : BFEED_LAYOUT_NCHW;
}

int load_hash(const bfeed_batch *b, uint64_t *out) {
  itest_rec rec;
  if (itest_rec_from_batch(b, &rec) < 0) return -1;
  *out = XXH3_64bits(rec.blob, rec.blob_len);
  itest_rec_free(&rec);
  return 0;
}

/* One clean client, alone, reads every (config, epoch): the reference. */
static int load_reference(load *l, char *err, size_t errlen) {
  for (int c = 0; c < LOAD_CONFIGS; c++)
    for (int e = 0; e < LOAD_EPOCHS; e++) {
      bfeed_stream_opts o;
      load_config_opts(c, &o);
      o.epoch = (uint64_t)e;
      o.epochs = 1;
      itest_run run = {0};
      bfeed_error berr;
      int rc = itest_fetch(l->d.unix_addr, "load", &o, 0, &run, &berr);
      if (rc != BFEED_EEOF || run.n != LOAD_BATCHES)
        return itest_fail(err, errlen, "reference config %d epoch %d: %zu batches, %s", c, e, run.n,
                          rc == BFEED_EEOF ? "wrong count" : berr.message);
      for (size_t i = 0; i < run.n; i++) l->ref[c][e][i] = XXH3_64bits(run.b[i].blob, run.b[i].blob_len);
      itest_run_free(&run);
    }
  return 0;
}

/* 1 when the daemon's log holds a sanitizer's report (a killed daemon
 * cannot say so by its exit status); the log is kept as PATH.N. */
static int load_log_reported(const itest_daemon *d, int n) {
  char *log = itest_read_file(d->log_path, NULL), kept[300];
  int bad = log && strstr(log, "Sanitizer");
  if (bad) fprintf(stderr, "daemon %d: a sanitizer report in its log:\n%.6000s\n", n, strstr(log, "WARNING: ThreadSanitizer") ? strstr(log, "WARNING: ThreadSanitizer") : strstr(log, "=="));
  free(log);
  snprintf(kept, sizeof kept, "%s.%d", d->log_path, n);
  rename(d->log_path, kept);
  return bad;
}

/* kill -9, and a new daemon on the same addresses' folder. */
static int load_restart(load *l, char *err, size_t errlen) {
  atomic_fetch_add(&l->generation, 1); /* odd: down */
  pthread_mutex_lock(&l->mu);
  itest_daemon_kill(&l->d);
  if (load_log_reported(&l->d, 1)) atomic_fetch_add(&l->errors, 1);
  int rc = itest_daemon_start(&l->d, &l->dopts, err, errlen);
  pthread_mutex_unlock(&l->mu);
  atomic_fetch_add(&l->generation, 1); /* even: up */
  return rc;
}

static long load_arg(int argc, char **argv, const char *name, long dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return atol(argv[i + 1]);
  return dflt;
}

/* Start the actors: n of kind main. */
static void load_spawn(load *l, load_actor *a, int *k, int n, void *(*main)(void *)) {
  for (int i = 0; i < n; i++, (*k)++) {
    a[*k].l = l;
    a[*k].id = i;
    pthread_create(&a[*k].t, NULL, main, &a[*k]);
  }
}

int main(int argc, char **argv) {
  static load l;
  char err[2048], dir[256], data[300], dataset[320], maxc[32], maxm[48];
  l.clients = (int)load_arg(argc, argv, "--clients", 128);
  l.seconds = (int)load_arg(argc, argv, "--seconds", 60);
  l.max_memory = "256M";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-memory") == 0 && i + 1 < argc) l.max_memory = argv[i + 1];
  }
  if (l.clients < 1 || l.seconds < 1) return fprintf(stderr, "usage: %s [--clients N] [--seconds S] [--max-memory BYTES]\n", argv[0]), 2;
  pthread_mutex_init(&l.mu, NULL);

  /* The dataset, with one file that is not a JPEG: workers log it. */
  if (itest_tmpdir(dir, sizeof dir) < 0) return fprintf(stderr, "no temporary folder\n"), 1;
  snprintf(data, sizeof data, "%s/data", dir);
  if (itest_make_dataset(data, LOAD_PER_CLASS, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), 1;
  itest_folder f;
  if (itest_folder_scan(data, &f) < 0 || f.n == 0) return fprintf(stderr, "cannot scan %s\n", data), 1;
  char bad[600];
  snprintf(bad, sizeof bad, "%s/%.*s/zz_bad.jpg", data, (int)strcspn(f.names[0], "/"), f.names[0]);
  itest_folder_free(&f);
  if (itest_write_file(bad, "not a JPEG\n", 11) < 0) return fprintf(stderr, "cannot write %s\n", bad), 1;
  snprintf(dataset, sizeof dataset, "load=%s", data);

  int nonreaders = l.clients / 16 + 1, flooders = l.clients / 32 + 1, silent = l.clients / 32 + 1;
  snprintf(maxc, sizeof maxc, "--max-clients=%d", 2 * l.clients + nonreaders + flooders + 8 * silent + 16);
  snprintf(maxm, sizeof maxm, "--max-memory=%s", l.max_memory);
  static const char *args[3];
  args[0] = maxc;
  args[1] = maxm;
  l.dopts = (itest_daemon_opts){.dir = dir, .name = "load", .datasets = {dataset}, .workers = 2, .tcp = 1,
                                .args = args};
  if (itest_daemon_start(&l.d, &l.dopts, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), 1;
  if (load_reference(&l, err, sizeof err) < 0) {
    itest_daemon_kill(&l.d);
    return fprintf(stderr, "%s\n", err), 1;
  }

  int nactors = l.clients + nonreaders + flooders + silent, k = 0;
  load_actor *actors = calloc((size_t)nactors, sizeof *actors);
  l.t0 = load_now();
  l.deadline = l.t0 + l.seconds;
  load_spawn(&l, actors, &k, l.clients, load_client_main);
  load_spawn(&l, actors, &k, nonreaders, load_nonreader_main);
  load_spawn(&l, actors, &k, flooders, load_flooder_main);
  load_spawn(&l, actors, &k, silent, load_silent_main);

  int reloaded = 0, restarted = 0, failed = 0;
  while (load_now() < l.deadline) {
    double t = load_now() - l.t0;
    pthread_mutex_lock(&l.mu);
    long rss = l.d.pid > 0 ? itest_daemon_rss_kib(&l.d) : 0;
    if (!reloaded && t >= l.seconds / 4.0) {
      kill(l.d.pid, SIGHUP);
      reloaded = 1;
    }
    pthread_mutex_unlock(&l.mu);
    if (rss > atomic_load(&l.rss_peak_kb)) atomic_store(&l.rss_peak_kb, rss);
    if (!restarted && t >= l.seconds / 2.0) {
      restarted = 1;
      if (load_restart(&l, err, sizeof err) < 0) {
        fprintf(stderr, "restart after kill -9: %s\n", err);
        failed = 1;
        l.deadline = load_now(); /* stop everyone */
      }
    }
    itest_sleep_ms(100);
  }
  for (int i = 0; i < nactors; i++) pthread_join(actors[i].t, NULL);
  free(actors);
  int stopped = l.d.pid > 0 && itest_daemon_stop(&l.d, 20000, err, sizeof err) == 0;
  if (!failed && !stopped) fprintf(stderr, "at the end: %s\n", err);

  long peak = atomic_load(&l.rss_peak_kb), batches = atomic_load(&l.batches);
  long mism = atomic_load(&l.mismatches), errors = atomic_load(&l.errors);
  printf("load: %d clients x %d s (+ %d non-reading, %d flooding, %d x 8 silent sockets), a reload and a kill -9 + restart\n",
         l.clients, l.seconds, nonreaders, flooders, silent);
  printf("load: %ld batches verified in %ld streams, %ld mismatches, %ld errors, %ld reconnects across the restart\n",
         batches, atomic_load(&l.opens), mism, errors, atomic_load(&l.reconnects));
  printf("load: %ld hostile connections, %ld non-reading streams, %ld STATS_REQ unread\n",
         atomic_load(&l.hostile_conns), atomic_load(&l.nonreaders), atomic_load(&l.stats_sent));
  uint64_t limit = 0;
  char unit = 0;
  sscanf(l.max_memory, "%lu%c", &limit, &unit);
  limit <<= unit == 'G' ? 30 : unit == 'M' ? 20 : unit == 'K' ? 10 : 0;
  printf("load: daemon peak RSS %.0f MiB, max_memory %s (%.2fx)\n", peak / 1024.0, l.max_memory,
         limit ? peak * 1024.0 / (double)limit : 0.0);
  if (mism || errors || !batches || !stopped) failed = 1;
  if (LOAD_CHECK_RSS && limit && (uint64_t)peak * 1024 > limit + LOAD_RSS_SLACK) {
    fprintf(stderr, "peak RSS over max_memory + %llu MiB\n", LOAD_RSS_SLACK >> 20);
    failed = 1;
  }
  if (l.d.pid > 0) itest_daemon_kill(&l.d);
  if (!failed) itest_rmtree(dir);
  else fprintf(stderr, "daemon log kept: %s\n", l.d.log_path);
  printf("load: %s\n", failed ? "FAILED" : "ok");
  return failed;
}
