/*
 * bfeedd -- serves datasets as bf16 batches.
 *
 * main() owns everything: settings, logger, datasets, the loop, the server.
 * It reads the config file and flags, loads the datasets (one that cannot
 * be loaded is logged and left out, the others served: an OPEN on it is
 * answered with its load error; none at all is allowed, and said, so that
 * a fresh install starts), listens (on sockets systemd passed, or on the
 * configured addresses), tells systemd it is ready, and runs until SIGINT
 * or SIGTERM. SIGHUP reloads the settings; a dataset whose files changed
 * under it is reloaded by itself (dataset.h). A shutdown waits for the
 * workers and a reload in progress at most shutdown_timeout, then exits
 * without what is stuck (status 1).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "dataset.h"
#include "decode_mem.h"
#include "jpeg_decode.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "server.h"
#include "skips.h"
#include "storage.h"

#define SHUTDOWN_GRACE_MS 2000
#define STATUS_INTERVAL_MS 5000
#define CHANGES_INTERVAL_MS 1000 /* how often the loop looks for datasets whose files changed */

typedef struct daemon_ctx {
  server srv;
  logger log;
  config cfg;
  const char *config_path;
  int argc;
  char **argv;
  metrics *metrics;
  notifier notify;
  uv_signal_t sigint, sigterm, sighup;
  uv_timer_t grace, status, changes, late;
  struct reload_job *reload; /* loading datasets on the thread pool, or NULL */
  int reload_again;          /* a SIGHUP came meanwhile */
  uint64_t status_samples; /* for samples/s in STATUS= */
} daemon_ctx;

static const char no_dataset_note[] =
    "no dataset configured yet: serving none until a reload (SIGHUP) adds one; give --dataset NAME=DIR or add a "
    "[dataset NAME] section";

enum { OPT_DATASET = 256, OPT_CONFIG, OPT_CHECK, OPT_VERSION, OPT_HELP, OPT_KEY };

static void usage(FILE *f) {
  fprintf(f,
          "usage: bfeedd [--config FILE] [options]\n"
          "       bfeedd --check-config FILE [options]\n"
          "  --config FILE          settings file (see bfeedd.conf(5)); flags override it\n"
          "  --check-config FILE    load FILE and the datasets, report problems, exit\n"
          "  --dataset NAME=DIR     serve the ImageFolder at DIR as NAME (repeatable);\n"
          "  --dataset NAME=KIND:PATH[,key=value...]   a dataset of another kind\n");
  for (const config_key *k = config_keys; k->key; k++) {
    char flag[64];
    snprintf(flag, sizeof flag, "--%s %s", k->key, k->arg);
    for (char *p = flag; *p; p++)
      if (*p == '_') *p = '-';
    fprintf(f, "  %-22s %s\n", flag, k->help);
  }
  fprintf(f, "  --version, --help\n\nSIGHUP reloads the settings; SIGINT/SIGTERM stop.\n");
}

/* Long options: the fixed ones, then one per config key. */
static struct option *make_options(void) {
  static const struct option fixed[] = {{"dataset", required_argument, 0, OPT_DATASET},
                                        {"config", required_argument, 0, OPT_CONFIG},
                                        {"check-config", required_argument, 0, OPT_CHECK},
                                        {"version", no_argument, 0, OPT_VERSION},
                                        {"help", no_argument, 0, OPT_HELP}};
  size_t nf = sizeof fixed / sizeof fixed[0], nk = 0;
  while (config_keys[nk].key) nk++;
  struct option *o = calloc(nf + nk + 1, sizeof *o);
  if (!o) return NULL;
  memcpy(o, fixed, sizeof fixed);
  for (size_t i = 0; i < nk; i++) {
    char *name = strdup(config_keys[i].key);
    if (!name) return NULL; /* the process exits on this path */
    for (char *p = name; *p; p++)
      if (*p == '_') *p = '-';
    o[nf + i] = (struct option){name, required_argument, 0, OPT_KEY + (int)i};
  }
  return o;
}

static void free_options(struct option *o) {
  for (struct option *p = o; p && p->name; p++)
    if (p->val >= OPT_KEY) free((char *)p->name);
  free(o);
}

/* Build the settings: defaults, then the file, then the flags. */
static int load_config(config *cfg, const char *path, int argc, char **argv, char *err, size_t errlen) {
  struct option *opts = make_options();
  int opt, cleared_listen = 0, rc = 0;
  config_init(cfg);
  if (!opts) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  if (path) rc = config_load_file(cfg, path, err, errlen);
  optind = 1;
  opterr = 0;
  while (rc == 0 && (opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (opt == OPT_DATASET) {
      rc = config_dataset_flag(cfg, optarg, err, errlen);
    } else if (opt >= OPT_KEY) {
      const char *key = config_keys[opt - OPT_KEY].key;
      char where[64];
      snprintf(where, sizeof where, "flag --%s", key);
      for (char *p = where + 7; *p; p++) /* as the flag is typed: --max-memory */
        if (*p == '_') *p = '-';
      if (strcmp(key, "listen") == 0 && !cleared_listen) config_clear_listen(cfg), cleared_listen = 1;
      rc = config_set(cfg, key, optarg, where, err, errlen);
    } else if (opt == '?') {
      snprintf(err, errlen, "unknown or incomplete option %s (try --help)", argv[optind - 1]);
      rc = BFEED_EINVAL;
    }
  }
  if (rc == 0 && optind < argc) snprintf(err, errlen, "unexpected argument '%s'", argv[optind]), rc = BFEED_EINVAL;
  if (rc == 0 && cfg->nlisten == 0)
    rc = config_set(cfg, "listen", "unix:/run/bfeed/bfeedd.sock", "default", err, errlen);
  free_options(opts);
  return rc;
}

/* The remote backends' cache and requests, from the settings: blocks in
 * cache_dir/remote when cache_dir is set. */
static int setup_remote(const config *cfg, char *err, size_t errlen) {
  char dir[4096];
  if (cfg->cache_dir) snprintf(dir, sizeof dir, "%s/remote", cfg->cache_dir);
  return storage_setup_remote(cfg->cache_dir ? dir : NULL, cfg->cache_max_bytes, cfg->remote_parallel,
                              cfg->remote_timeout * 1000L, cfg->remote_retries, err, errlen);
}

/* A loaded dataset a reload may keep: not one that failed (to load, or to
 * index: its files may have been fixed), nor one whose files changed. One
 * still indexing is kept. */
static int load_keepable(const dataset *d) {
  char why[16];
  return dataset_ready(d, why, sizeof why) != BFEED_EDATASET && !dataset_changed(d, NULL, 0);
}

/* Load every dataset of cfg, reusing those of `old` whose settings are the
 * same in `old_cfg` (a reload, old_cfg not NULL). One that fails is left
 * out, logged, an OPEN on it answered with the reason (dataset_failed): at
 * the start, and in a reload when what it replaces could not serve either
 * (same settings, but failed or changed); any other failure in a reload
 * refuses the reload (NULL, with err), which keeps the datasets served. */
static dataset **load_datasets(const config *cfg, const config *old_cfg, dataset **old, size_t nold,
                               const logger *lg, char *err, size_t errlen) {
  dataset **ds = calloc(cfg->ndatasets ? cfg->ndatasets : 1, sizeof *ds);
  if (!ds) return snprintf(err, errlen, "out of memory"), NULL;
  for (size_t i = 0; i < cfg->ndatasets; i++) {
    const config_dataset *cd = &cfg->datasets[i];
    int replaces_unservable = !old_cfg;
    for (size_t j = 0; old_cfg && j < nold && !ds[i]; j++) {
      if (strcmp(old[j]->name, cd->name) != 0 || !config_dataset_same(cfg, old_cfg, cd->name)) continue;
      if (load_keepable(old[j])) ds[i] = dataset_ref(old[j]);
      else replaces_unservable = 1;
    }
    if (ds[i]) continue;
    dataset_kv kv[65];
    size_t nkv = cd->nkv < 64 ? cd->nkv : 64;
    int has_cache_dir = 0;
    const char *kind = NULL;
    for (size_t k = 0; k < nkv; k++) {
      kv[k] = (dataset_kv){cd->keys[k], cd->values[k], cd->wheres[k]};
      has_cache_dir |= strcmp(cd->keys[k], "cache_dir") == 0;
      if (strcmp(cd->keys[k], "kind") == 0) kind = cd->values[k];
    }
    /* The daemon-wide cache folder, for the kinds that keep caches
     * (word-vector tables, shard indexes), unless a dataset names its own. */
    if (cfg->cache_dir && !has_cache_dir && dataset_kind_takes_key(kind, "cache_dir"))
      kv[nkv++] = (dataset_kv){"cache_dir", cfg->cache_dir, "cache_dir"};
    if (!(ds[i] = dataset_open(cd->name, kv, nkv, lg, err, errlen)) && replaces_unservable) {
      log_err(lg, "%s (dataset %s is left out: an OPEN on it is answered with this)", err, cd->name);
      ds[i] = dataset_failed(cd->name, BFEED_EDATASET, err);
      if (ds[i]) continue;
      snprintf(err, errlen, "out of memory");
    }
    if (!ds[i]) {
      for (size_t j = 0; j < i; j++) dataset_unref(ds[j]);
      free(ds);
      return NULL;
    }
    if (!dataset_background(ds[i])) /* those say so when their index is done */
      log_info(lg, "dataset %s: %zu samples in %zu classes from %s", cd->name, ds[i]->nsamples, ds[i]->nclasses,
               ds[i]->root);
  }
  return ds;
}

static int limits_of(const config *cfg, server_limits *l, char *err, size_t errlen) {
  *l = (server_limits){.max_clients = cfg->max_clients,
                       .max_streams = cfg->max_streams,
                       .max_window = (uint32_t)cfg->max_window,
                       .share_horizon = (uint32_t)cfg->share_horizon,
                       .max_memory = cfg->max_memory,
                       .max_pixels = cfg->max_pixels,
                       .handshake_timeout_ms = (uint64_t)cfg->handshake_timeout * 1000,
                       .idle_timeout_ms = (uint64_t)cfg->idle_timeout * 1000,
                       .shutdown_timeout_ms = (uint64_t)cfg->shutdown_timeout * 1000,
                       .socket_mode = cfg->socket_mode,
                       .socket_group = cfg->socket_group};
  return config_read_token(cfg, l->auth_token, sizeof l->auth_token, err, errlen);
}

/* Each client costs a descriptor (and a dataset some more): take the hard
 * limit, which the unit raises with LimitNOFILE, instead of the soft 1024. */
static void raise_nofile(const logger *lg) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  r.rlim_cur = r.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0) log_warn(lg, "cannot raise the open-file limit: %m");
}

/* A reload: the settings are read on the loop (small files), the datasets
 * loaded on libuv's thread pool -- a big folder or a table conversion may
 * take minutes, and the loop must keep serving (and pinging the watchdog)
 * meanwhile -- then swapped in on the loop. While one runs, the loop
 * changes neither d->cfg nor the server's datasets, which the load reads.
 * A forced reload (datasets whose files changed) loads with the settings
 * in force: cfg is then d->cfg's, borrowed, and only the datasets change. */
typedef struct reload_job {
  uv_work_t req;
  daemon_ctx *d;
  config cfg;
  int forced;
  server_limits limits;
  dataset **ds;
  char err[1024];
} reload_job;

static void reload_work(uv_work_t *req) {
  reload_job *j = req->data;
  daemon_ctx *d = j->d;
  j->ds = load_datasets(&j->cfg, &d->cfg, d->srv.datasets, d->srv.ndatasets, &d->log, j->err, sizeof j->err);
}

/* A forced reload's result: the changed datasets replaced, nothing else. */
static void reload_apply_forced(daemon_ctx *d, reload_job *j) {
  for (size_t i = 0; i < d->srv.ndatasets; i++)
    if (j->ds[i] != d->srv.datasets[i])
      log_info(&d->log, "dataset %s reloaded after its files changed (its open streams have failed)",
               j->ds[i]->name);
  server_set_datasets(&d->srv, j->ds, j->cfg.ndatasets);
}

static void reload_apply(daemon_ctx *d, reload_job *j) {
  config *cfg = &j->cfg;
  dataset **ds = j->ds;
  if (j->forced) return reload_apply_forced(d, j);
  for (size_t i = 0; i < d->srv.ndatasets; i++) {
    const char *name = d->srv.datasets[i]->name;
    int kept = 0;
    for (size_t k = 0; k < cfg->ndatasets; k++) kept |= ds[k] == d->srv.datasets[i];
    int present = 0;
    for (size_t k = 0; k < cfg->ndatasets; k++) present |= strcmp(cfg->datasets[k].name, name) == 0;
    if (!present) log_info(&d->log, "dataset %s removed (its open streams go on until closed)", name);
    else if (!kept) log_info(&d->log, "dataset %s changed (open streams go on with the old settings)", name);
  }
  server_set_datasets(&d->srv, ds, cfg->ndatasets);
  d->srv.limits = j->limits;
  jpeg_decode_set_limit(cfg->max_decode_memory);
  decode_mem_set_budget(cfg->max_memory);
  char why[600];
  if (skips_log_open(cfg->skipped_log, why, sizeof why) < 0) log_warn(&d->log, "%s (the old one is kept)", why);
  log_set_level(&d->log, cfg->log_level);
  int same_listen = cfg->nlisten == d->cfg.nlisten;
  for (size_t i = 0; same_listen && i < cfg->nlisten; i++) same_listen = strcmp(cfg->listen[i], d->cfg.listen[i]) == 0;
  if (!same_listen || cfg->workers != d->cfg.workers ||
      (cfg->metrics_listen ? 1 : 0) != (d->cfg.metrics_listen ? 1 : 0) ||
      (cfg->metrics_listen && strcmp(cfg->metrics_listen, d->cfg.metrics_listen) != 0))
    log_warn(&d->log, "listen, metrics_listen and workers take effect at the next restart");
  if ((cfg->cache_dir ? 1 : 0) != (d->cfg.cache_dir ? 1 : 0) ||
      (cfg->cache_dir && strcmp(cfg->cache_dir, d->cfg.cache_dir) != 0) || cfg->cache_max_bytes != d->cfg.cache_max_bytes ||
      cfg->remote_parallel != d->cfg.remote_parallel || cfg->remote_timeout != d->cfg.remote_timeout ||
      cfg->remote_retries != d->cfg.remote_retries)
    log_warn(&d->log, "cache_max_bytes and the remote_* settings (and cache_dir for remote blocks) take effect at the "
                      "next restart");
  config_free(&d->cfg);
  d->cfg = *cfg;
  log_info(&d->log, "reloaded: %zu dataset(s)", d->srv.ndatasets);
  notify_ready("reloaded");
}

static void reload_refused(daemon_ctx *d, const char *err) {
  log_err(&d->log, "reload refused, the old settings stay in force: %s", err);
  notify_ready("reload failed; old settings in force");
}

static void on_sighup(uv_signal_t *h, int signum);

static void reload_done(uv_work_t *req, int status) {
  reload_job *j = req->data;
  daemon_ctx *d = j->d;
  d->reload = NULL;
  if (status < 0 || d->srv.stopping || !j->ds) {
    if (!d->srv.stopping) reload_refused(d, status < 0 ? uv_strerror(status) : j->err);
    for (size_t i = 0; j->ds && i < j->cfg.ndatasets; i++) dataset_unref(j->ds[i]);
    free(j->ds);
    if (!j->forced) config_free(&j->cfg);
  } else {
    reload_apply(d, j); /* takes cfg and ds */
  }
  free(j);
  if (d->reload_again && !d->srv.stopping) {
    d->reload_again = 0;
    on_sighup(&d->sighup, SIGHUP);
  }
}

static void on_sighup(uv_signal_t *h, int signum) {
  daemon_ctx *d = h->data;
  char err[1024] = "";
  (void)signum;
  if (d->reload) {
    log_info(&d->log, "SIGHUP received while a reload is loading datasets: another reload follows it");
    d->reload_again = 1;
    return;
  }
  notify_reloading();
  log_info(&d->log, "SIGHUP received: reloading %s", d->config_path ? d->config_path : "the flags");
  reload_job *j = calloc(1, sizeof *j);
  if (!j) return reload_refused(d, "out of memory");
  j->d = d;
  j->req.data = j;
  int rc = 0;
  if (load_config(&j->cfg, d->config_path, d->argc, d->argv, err, sizeof err) < 0 ||
      limits_of(&j->cfg, &j->limits, err, sizeof err) < 0 ||
      (rc = uv_queue_work(d->srv.loop, &j->req, reload_work, reload_done)) < 0) {
    if (!err[0]) snprintf(err, sizeof err, "cannot start loading: %s", uv_strerror(rc));
    config_free(&j->cfg);
    free(j);
    return reload_refused(d, err);
  }
  d->reload = j;
}

/* Every second: reload the served datasets whose files changed (dataset.h),
 * with the settings in force. A reload in progress comes first: the next
 * tick after it looks again. */
static void on_changes(uv_timer_t *t) {
  daemon_ctx *d = t->data;
  char why[700];
  int any = 0;
  if (d->reload || d->srv.stopping) return;
  for (size_t i = 0; i < d->srv.ndatasets; i++)
    if (dataset_changed(d->srv.datasets[i], why, sizeof why))
      any = 1, log_warn(&d->log, "%s: reloading the dataset", why);
  if (!any) return;
  reload_job *j = calloc(1, sizeof *j);
  if (!j) return log_err(&d->log, "cannot reload the changed datasets: out of memory");
  j->d = d;
  j->req.data = j;
  j->forced = 1;
  j->cfg = d->cfg; /* borrowed: the loop changes d->cfg only in reload_apply, never while a reload runs */
  int rc = uv_queue_work(d->srv.loop, &j->req, reload_work, reload_done);
  if (rc < 0) return free(j), log_err(&d->log, "cannot reload the changed datasets: %s", uv_strerror(rc));
  d->reload = j;
}

static void on_status(uv_timer_t *t) {
  daemon_ctx *d = t->data;
  uint64_t samples = 0;
  server_tick(&d->srv);
  for (ds_stats *s = d->srv.stats; s; s = s->next) samples += s->samples;
  double rate = (double)(samples - d->status_samples) * 1000.0 / STATUS_INTERVAL_MS;
  d->status_samples = samples;
  notify_status("%d client(s), %d stream(s), %.0f samples/s", d->srv.nconns, server_stream_count(&d->srv), rate);
}

static void on_grace(uv_timer_t *t) {
  daemon_ctx *d = t->data;
  log_warn(&d->log, "clients did not take their last frames in time; closing them");
  server_force_close(&d->srv);
}

static void shutdown_all(daemon_ctx *d) {
  uv_close((uv_handle_t *)&d->sigint, NULL);
  uv_close((uv_handle_t *)&d->sigterm, NULL);
  uv_close((uv_handle_t *)&d->sighup, NULL);
  uv_close((uv_handle_t *)&d->status, NULL);
  uv_close((uv_handle_t *)&d->changes, NULL);
  notify_close(&d->notify);
  metrics_stop(d->metrics);
  d->metrics = NULL;
  server_shutdown(&d->srv);
}

/* A reload still loading when the shutdown's time is up holds the loop
 * (libuv waits for its work): stop the loop, and main exits without it. */
static void on_late(uv_timer_t *t) {
  daemon_ctx *d = t->data;
  if (!d->reload) return;
  log_err(&d->log, "a reload is still loading datasets %d s after the shutdown began (a file that does not open or "
          "read: NFS, FUSE?); exiting without it", d->cfg.shutdown_timeout);
  uv_stop(d->srv.loop);
}

static void on_signal(uv_signal_t *h, int signum) {
  daemon_ctx *d = h->data;
  log_info(&d->log, "%s received: shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
  notify_stopping();
  /* From the signal on (shutdown_all itself may wait that long for the
   * workers): a reload gets no more than the workers. */
  uv_timer_start(&d->late, on_late, (uint64_t)d->cfg.shutdown_timeout * 1000, 0);
  uv_unref((uv_handle_t *)&d->late);
  shutdown_all(d);
  uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
  uv_unref((uv_handle_t *)&d->grace); /* the loop may end before it fires */
}

static int start(daemon_ctx *d, uv_loop_t *loop, char *err, size_t errlen) {
  int nworkers = d->cfg.workers > 0 ? d->cfg.workers : (int)uv_available_parallelism();
  server_limits limits;
  int rc = limits_of(&d->cfg, &limits, err, errlen);
  if (rc < 0) return rc;
  jpeg_decode_set_limit(d->cfg.max_decode_memory);
  decode_mem_set_budget(d->cfg.max_memory);
  if ((rc = skips_log_open(d->cfg.skipped_log, err, errlen)) < 0) return rc;
  rc = server_init(&d->srv, loop, &d->log, nworkers, d->srv.datasets, d->srv.ndatasets, &limits, err, errlen);
  if (rc < 0) return rc;
  int activated = listen_adopt_systemd(&d->srv, err, errlen);
  if (activated < 0) return activated;
  if (activated > 0) log_info(&d->log, "using %d socket(s) from systemd; listen settings ignored", activated);
  for (size_t i = 0; activated == 0 && i < d->cfg.nlisten; i++)
    if ((rc = listen_add(&d->srv, d->cfg.listen[i], err, errlen)) < 0) return rc;
  if (d->cfg.metrics_listen && (rc = metrics_start(&d->metrics, &d->srv, d->cfg.metrics_listen, err, errlen)) < 0)
    return rc;
  if ((rc = uv_signal_start(&d->sigint, on_signal, SIGINT)) < 0 ||
      (rc = uv_signal_start(&d->sigterm, on_signal, SIGTERM)) < 0 ||
      (rc = uv_signal_start(&d->sighup, on_sighup, SIGHUP)) < 0)
    return snprintf(err, errlen, "cannot watch signals: %s", uv_strerror(rc)), BFEED_EIO;
  uv_timer_start(&d->status, on_status, STATUS_INTERVAL_MS, STATUS_INTERVAL_MS);
  uv_unref((uv_handle_t *)&d->status);
  uv_timer_start(&d->changes, on_changes, CHANGES_INTERVAL_MS, CHANGES_INTERVAL_MS);
  uv_unref((uv_handle_t *)&d->changes);
  log_info(&d->log, "ready: %d workers, %zu dataset(s)", nworkers, d->srv.ndatasets);
  notify_ready("serving");
  return 0;
}

/* Run the event loop until shutdown. 0, or 1 when the daemon could not start
 * (uv_default_loop itself allocates, and can fail). */
static int serve(daemon_ctx *d) {
  char err[1024];
  int rc = 0;
  uv_loop_t *loop = uv_default_loop();
  if (!loop) {
    log_err(&d->log, "cannot create the event loop: out of memory");
    return 1;
  }
  uv_signal_init(loop, &d->sigint);
  uv_signal_init(loop, &d->sigterm);
  uv_signal_init(loop, &d->sighup);
  uv_timer_init(loop, &d->grace);
  uv_timer_init(loop, &d->status);
  uv_timer_init(loop, &d->changes);
  uv_timer_init(loop, &d->late);
  d->sigint.data = d->sigterm.data = d->sighup.data = d->grace.data = d->status.data = d;
  d->changes.data = d->late.data = d;
  notify_init(&d->notify, loop);
  if (start(d, loop, err, sizeof err) < 0) {
    log_err(&d->log, "%s", err);
    shutdown_all(d);
    rc = 1;
  } else {
    uv_run(loop, UV_RUN_DEFAULT);
  }
  uv_close((uv_handle_t *)&d->grace, NULL);
  uv_close((uv_handle_t *)&d->late, NULL);
  /* A reload stuck in I/O would hold the loop for ever: on_late stopped it. */
  if (!d->reload) {
    uv_run(loop, UV_RUN_DEFAULT); /* let every handle finish closing */
    if (uv_loop_close(loop) != 0) log_warn(&d->log, "event loop closed with handles still open");
  }
  log_info(&d->log, "stopped");
  return rc;
}

int main(int argc, char **argv) {
  char err[1024];
  const char *check = NULL;
  daemon_ctx *d = calloc(1, sizeof *d);
  struct option *opts = make_options();
  if (!d || !opts) return fprintf(stderr, "bfeedd: out of memory\n"), 1;
  int opt;
  opterr = 0;
  int done = 0;
  while (!done && (opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (opt == OPT_HELP) usage(stdout), done = 1;
    if (opt == OPT_VERSION) printf("bfeedd %s (protocol %d)\n", BFEED_VERSION_STRING, FRAME_VERSION_MAX), done = 1;
    if (opt == OPT_CONFIG) d->config_path = optarg;
    if (opt == OPT_CHECK) d->config_path = check = optarg;
  }
  free_options(opts);
  if (done) return free(d), 0; /* --help, --version */
  d->argc = argc;
  d->argv = argv;
  if (load_config(&d->cfg, d->config_path, argc, argv, err, sizeof err) < 0) {
    fprintf(stderr, "bfeedd: %s\n", err);
    config_free(&d->cfg);
    free(d);
    return 2;
  }
  log_init(&d->log, d->cfg.log_level);
  if (setup_remote(&d->cfg, err, sizeof err) < 0) {
    fprintf(stderr, "bfeedd: %s\n", err);
    config_free(&d->cfg);
    free(d);
    return 2;
  }
  d->srv.datasets = load_datasets(&d->cfg, NULL, NULL, 0, &d->log, err, sizeof err);
  d->srv.ndatasets = d->srv.datasets ? d->cfg.ndatasets : 0;
  int rc = 0;
  if (!d->srv.datasets) {
    log_err(&d->log, "%s", err);
    rc = check ? 2 : 1;
  } else if (check) {
    /* Checking includes indexing the shards of tfrecord and tar datasets;
     * every dataset that cannot serve is named (those that failed to load
     * were, as they were left out). */
    size_t bad = 0;
    for (size_t i = 0; i < d->srv.ndatasets; i++) {
      dataset *ds = d->srv.datasets[i];
      if (dataset_wait(ds, err, sizeof err) < 0) bad++, dataset_is_failed(ds) ? (void)0 : log_err(&d->log, "%s", err);
    }
    if (bad) fprintf(stderr, "bfeedd: %s: %zu of %zu dataset(s) cannot be served\n", check, bad, d->srv.ndatasets), rc = 2;
  }
  if (d->srv.datasets && check && rc == 0) {
    if (d->cfg.ndatasets == 0) fprintf(stderr, "bfeedd: warning: %s\n", no_dataset_note);
    printf("%s: ok: %zu dataset(s), %zu listener(s)\n", check, d->cfg.ndatasets, d->cfg.nlisten);
  } else if (d->srv.datasets && !check) {
    /* A fresh install has no dataset yet: start anyway, so that the
     * service runs and a reload adds what the operator configures. */
    if (d->cfg.ndatasets == 0) log_warn(&d->log, "%s", no_dataset_note);
    signal(SIGPIPE, SIG_IGN);
    raise_nofile(&d->log);
    rc = serve(d);
    /* A worker or a reload left stuck in I/O still uses what a tidy exit
     * frees (and libuv's exit would wait for its thread): leave now. */
    if (d->srv.workers_stuck || d->reload) {
      log_err(&d->log, "exiting with status 1: %s stuck in I/O was left behind",
              d->srv.workers_stuck ? "a worker" : "a reload");
      fflush(stdout);
      _exit(1);
    }
  }
  server_free(&d->srv); /* drops the datasets too */
  storage_remote_shutdown();
  config_free(&d->cfg);
  free(d);
  return rc;
}
