/*
 * bfeedd -- serves image datasets as bf16 batches.
 *
 * main() owns everything: settings, logger, datasets, the loop, the server.
 * It reads the config file and flags, loads the datasets (a dataset that
 * cannot be loaded stops the start, with the reason), listens, and runs
 * until SIGINT or SIGTERM, then shuts down cleanly.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "config.h"
#include "dataset.h"
#include "log.h"
#include "server.h"

#define SHUTDOWN_GRACE_MS 2000

typedef struct daemon_ctx {
  server srv;
  logger log;
  uv_signal_t sigint, sigterm;
  uv_timer_t grace;
} daemon_ctx;

static void usage(FILE *f) {
  fprintf(f,
          "usage: bfeedd [options]\n"
          "  --listen ADDR          unix:PATH or HOST:PORT (repeatable; default unix:/run/bfeed/bfeedd.sock)\n"
          "  --dataset NAME=DIR     serve the ImageFolder at DIR as NAME (repeatable)\n"
          "  --config FILE          read settings from FILE (flags override it); see bfeedd.conf(5)\n"
          "  --check-config         validate the settings and datasets, then exit\n"
          "  --workers N            decoding threads (default: one per core)\n"
          "  --max-clients N        connections at once (64)\n"
          "  --max-streams N        streams per connection (16)\n"
          "  --log-level LEVEL      error, warning, notice, info (default) or debug\n"
          "  --version, --help\n");
}

static void on_grace(uv_timer_t *t) {
  daemon_ctx *d = t->data;
  log_warn(&d->log, "clients did not take their last frames in time; closing them");
  server_force_close(&d->srv);
}

static void on_signal(uv_signal_t *h, int signum) {
  daemon_ctx *d = h->data;
  log_info(&d->log, "%s received: shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
  uv_close((uv_handle_t *)&d->sigint, NULL);
  uv_close((uv_handle_t *)&d->sigterm, NULL);
  server_shutdown(&d->srv);
  uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
  uv_unref((uv_handle_t *)&d->grace); /* the loop may end before it fires */
}

enum { OPT_LISTEN = 256, OPT_DATASET, OPT_CONFIG, OPT_CHECK, OPT_WORKERS, OPT_MAX_CLIENTS,
       OPT_MAX_STREAMS, OPT_LOG_LEVEL, OPT_VERSION, OPT_HELP };

static const struct option long_opts[] = {
    {"listen", required_argument, 0, OPT_LISTEN},
    {"dataset", required_argument, 0, OPT_DATASET},
    {"config", required_argument, 0, OPT_CONFIG},
    {"check-config", no_argument, 0, OPT_CHECK},
    {"workers", required_argument, 0, OPT_WORKERS},
    {"max-clients", required_argument, 0, OPT_MAX_CLIENTS},
    {"max-streams", required_argument, 0, OPT_MAX_STREAMS},
    {"log-level", required_argument, 0, OPT_LOG_LEVEL},
    {"version", no_argument, 0, OPT_VERSION},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0}};

/* Flags are applied after the config file, so the file is found first. */
static int apply_flags(config *cfg, int argc, char **argv, int *check_only, char *err, size_t errlen) {
  int opt, cleared_listen = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
    const char *key = NULL;
    char where[64];
    switch (opt) {
      case OPT_LISTEN:
        if (!cleared_listen) config_clear_listen(cfg);
        cleared_listen = 1;
        key = "listen";
        break;
      case OPT_DATASET:
        if (config_dataset_flag(cfg, optarg, err, errlen) < 0) return -1;
        continue;
      case OPT_CONFIG: continue;
      case OPT_CHECK: *check_only = 1; continue;
      case OPT_WORKERS: key = "workers"; break;
      case OPT_MAX_CLIENTS: key = "max_clients"; break;
      case OPT_MAX_STREAMS: key = "max_streams"; break;
      case OPT_LOG_LEVEL: key = "log_level"; break;
      default: return snprintf(err, errlen, "unknown option (try --help)"), -1;
    }
    snprintf(where, sizeof where, "--%s", long_opts[opt - OPT_LISTEN].name);
    if (config_set(cfg, key, optarg, where, err, errlen) < 0) return -1;
  }
  if (optind < argc) return snprintf(err, errlen, "unexpected argument '%s'", argv[optind]), -1;
  return 0;
}

int main(int argc, char **argv) {
  config cfg;
  char err[1024];
  int check_only = 0, rc = 1;
  const char *config_path = NULL;
  config_init(&cfg);

  opterr = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
    if (opt == OPT_HELP) return usage(stdout), 0;
    if (opt == OPT_VERSION) return puts("bfeedd 0.1.0 (protocol 1)"), 0;
    if (opt == OPT_CONFIG) config_path = optarg;
    if (opt == '?') return fprintf(stderr, "bfeedd: unknown or incomplete option %s (try --help)\n", argv[optind - 1]), 2;
  }
  if (config_path && config_load_file(&cfg, config_path, err, sizeof err) < 0) goto fail_cfg;
  if (apply_flags(&cfg, argc, argv, &check_only, err, sizeof err) < 0) goto fail_cfg;
  if (cfg.nlisten == 0 && config_set(&cfg, "listen", "unix:/run/bfeed/bfeedd.sock", "default", err, sizeof err) < 0)
    goto fail_cfg;
  if (cfg.ndatasets == 0) {
    snprintf(err, sizeof err, "no dataset to serve: give --dataset NAME=DIR or a [dataset NAME] section");
    goto fail_cfg;
  }

  daemon_ctx *d = calloc(1, sizeof *d);
  dataset **ds = calloc(cfg.ndatasets, sizeof *ds);
  if (!d || !ds) return fprintf(stderr, "bfeedd: out of memory\n"), 1;
  log_init(&d->log, cfg.log_level);
  size_t nds = 0;
  for (; nds < cfg.ndatasets; nds++) {
    config_dataset *cd = &cfg.datasets[nds];
    dataset_kv kv[64];
    size_t nkv = cd->nkv < 64 ? cd->nkv : 64;
    for (size_t k = 0; k < nkv; k++) kv[k] = (dataset_kv){cd->keys[k], cd->values[k], cd->wheres[k]};
    if (!(ds[nds] = dataset_load(cd->name, kv, nkv, err, sizeof err))) {
      log_err(&d->log, "%s", err);
      goto out;
    }
    log_info(&d->log, "dataset %s: %zu samples in %zu classes from %s", cd->name, ds[nds]->nsamples,
             ds[nds]->nclasses, ds[nds]->root);
  }
  if (check_only) {
    printf("configuration ok: %zu dataset(s), %zu listener(s)\n", cfg.ndatasets, cfg.nlisten);
    rc = 0;
    goto out;
  }

  signal(SIGPIPE, SIG_IGN);
  uv_loop_t *loop = uv_default_loop();
  int nworkers = cfg.workers > 0 ? cfg.workers : (int)uv_available_parallelism();
  server_limits limits = {.max_clients = cfg.max_clients, .max_streams = cfg.max_streams};
  if ((rc = server_init(&d->srv, loop, &d->log, nworkers, ds, nds, &limits)) < 0) {
    log_err(&d->log, "cannot start %d workers: %s", nworkers, uv_strerror(rc));
    rc = 1;
    goto out;
  }
  rc = 0;
  for (size_t i = 0; i < cfg.nlisten && rc == 0; i++)
    if ((rc = server_listen(&d->srv, cfg.listen[i], err, sizeof err)) < 0) log_err(&d->log, "%s", err);
  uv_signal_init(loop, &d->sigint);
  uv_signal_init(loop, &d->sigterm);
  uv_timer_init(loop, &d->grace);
  d->sigint.data = d->sigterm.data = d->grace.data = d;
  if (rc == 0) {
    uv_signal_start(&d->sigint, on_signal, SIGINT);
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    log_info(&d->log, "ready: %d workers, %zu dataset(s)", nworkers, nds);
    uv_run(loop, UV_RUN_DEFAULT);
  } else {
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    server_shutdown(&d->srv);
  }
  uv_close((uv_handle_t *)&d->grace, NULL);
  uv_run(loop, UV_RUN_DEFAULT); /* let every handle finish closing */
  if (uv_loop_close(loop) != 0) log_warn(&d->log, "event loop closed with handles still open");
  server_free(&d->srv);
  log_info(&d->log, "stopped");
  rc = rc < 0 ? 1 : 0;
out:
  for (size_t i = 0; i < nds; i++) dataset_unref(ds[i]);
  free(ds);
  free(d);
  config_free(&cfg);
  return rc;
fail_cfg:
  fprintf(stderr, "bfeedd: %s\n", err);
  config_free(&cfg);
  return 2;
}
