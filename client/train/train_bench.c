/*
 * train_bench.c -- bfeed-train-bench: the compute side of bfeed-train's
 * step, without a daemon, on every backend and precision this machine runs.
 *
 *   bfeed-train-bench [--inputs N] [--hidden N[,N...]] [--classes N]
 *                     [--batch N] [--steps N] [--optimizer NAME]
 *                     [--backend NAME]
 *
 * A step is what bfeed-train does per batch: forward, backward, optimizer
 * step, refresh of the bf16 working copies, here on fixed random inputs.
 * Defaults are the make-demo model at --size 32: 3072 inputs, one hidden
 * layer of 256, 8 classes, batch 64, Adam. Prints the median step time and
 * the samples/s it means. On a machine shared with a daemon the end-to-end
 * rate is bfeed-train's own; this is what the backend alone would allow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "mlp.h"
#include "optim.h"
#include "train_opts.h"

typedef struct bench_opts {
  uint64_t inputs, classes, batch, steps;
  size_t hidden[TRAIN_MAX_HIDDEN];
  int nhidden;
  optim_kind optimizer;
  const char *backend; /* NULL: all */
} bench_opts;

static int takes_value(const char *name, void *ctx) { return strcmp(name, "help") != 0 && strcmp(name, "version") != 0; }

static const char bench_usage[] =
    "usage: bfeed-train-bench [--inputs N] [--hidden N[,N...]] [--classes N] [--batch N]\n"
    "                         [--steps N] [--optimizer sgd|adam|adafactor] [--backend NAME]\n"
    "Times bfeed-train's step (forward, backward, optimizer) on each backend and precision,\n"
    "without a daemon. Also --help, --version.\n";

static int parse(int argc, char **argv, bench_opts *o) {
  *o = (bench_opts){.inputs = 3072, .classes = 8, .batch = 64, .steps = 30, .optimizer = OPTIM_ADAM};
  cli_args a = {.argc = argc, .argv = argv};
  int r;
  cli_set_prog("bfeed-train-bench");
  while ((r = cli_next(&a, takes_value, NULL)) == 1) {
    const char *n = a.name, *v = a.value;
    int bad = 0;
    if (cli_help_or_version(n, bench_usage, NULL)) return 1;
    if (strcmp(n, "inputs") == 0) bad = cli_u64(n, v, 1, 1 << 24, &o->inputs);
    else if (strcmp(n, "classes") == 0) bad = cli_u64(n, v, 2, 1 << 20, &o->classes);
    else if (strcmp(n, "batch") == 0) bad = cli_u64(n, v, 1, 65536, &o->batch);
    else if (strcmp(n, "steps") == 0) bad = cli_u64(n, v, 1, 1000000, &o->steps);
    else if (strcmp(n, "hidden") == 0) bad = train_parse_widths(v, o->hidden, &o->nhidden);
    else if (strcmp(n, "backend") == 0) o->backend = v;
    else if (strcmp(n, "optimizer") == 0) {
      if (optim_parse(v, &o->optimizer) < 0) {
        fprintf(stderr, "bfeed-train-bench: --optimizer %s: expected sgd, adam or adafactor\n", v);
        bad = -1;
      }
    } else {
      fprintf(stderr, "bfeed-train-bench: unknown option --%s\n", n);
      return -1;
    }
    if (bad < 0) return -1;
  }
  if (o->nhidden == 0) o->hidden[o->nhidden++] = 256;
  return r < 0 ? -1 : 0;
}

/* Median seconds per step of one backend at one precision; < 0 on error. */
static double bench_one(const bench_opts *o, backend *be, ops_dtype p) {
  memplan_model cfg = {.nlayers = o->nhidden + 1, .precision = p, .batch = o->batch};
  cfg.dims[0] = o->inputs;
  for (int i = 0; i < o->nhidden; i++) cfg.dims[i + 1] = o->hidden[i];
  cfg.dims[cfg.nlayers] = o->classes;
  mlp m;
  optim opt;
  optim_hparams hp;
  char err[256];
  if (mlp_init(&m, &cfg, 1, err, sizeof err) < 0) return fprintf(stderr, "bfeed-train-bench: %s\n", err), -1;
  optim_hparams_default(&hp, o->optimizer);
  optim_init(&opt, o->optimizer, &hp);
  double result = -1;
  int32_t *labels = malloc(o->batch * sizeof *labels);
  float *x = malloc(o->batch * o->inputs * sizeof *x);
  double *t = malloc((o->steps + 3) * sizeof *t);
  for (int l = 0; l < cfg.nlayers; l++)
    if (optim_add(&opt, m.layer[l].w, m.layer[l].gw, m.layer[l].out, m.layer[l].in) < 0 ||
        optim_add(&opt, m.layer[l].b, m.layer[l].gb, 1, m.layer[l].out) < 0)
      goto done;
  if (!labels || !x || !t) goto done;
  uint64_t s = 12345;
  for (size_t i = 0; i < o->batch * o->inputs; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((s >> 40) * (2.0 / 16777216.0) - 1.0);
  }
  for (size_t i = 0; i < o->batch; i++) labels[i] = (int32_t)(i % o->classes);
  ops_convert(mlp_input(&m), p, x, OPS_F32, o->batch * o->inputs);
  /* Three warm-up steps: page faults, oneDNN's JIT, the caches. */
  for (uint64_t i = 0; i < o->steps + 3; i++) {
    double t0 = cli_now_s(), loss;
    if (mlp_forward(&m, be, o->batch) < 0 ||
        mlp_backward(&m, be, labels, o->batch, 1.0f / (float)o->batch, 0, &loss) < 0) {
      fprintf(stderr, "bfeed-train-bench: %s\n", be->err);
      goto done;
    }
    optim_step(&opt);
    mlp_sync_working(&m);
    t[i] = cli_now_s() - t0;
  }
  qsort(t + 3, o->steps, sizeof *t, cli_cmp_double);
  result = t[3 + o->steps / 2];
done:
  free(labels), free(x), free(t);
  optim_free(&opt);
  mlp_free(&m);
  return result;
}

int main(int argc, char **argv) {
  bench_opts o;
  int r = parse(argc - 1, argv + 1, &o);
  if (r) return r > 0 ? 0 : 2;
  printf("step = forward + backward + %s step (+ bf16 working copies): %llu", optim_name(o.optimizer),
         (unsigned long long)o.inputs);
  for (int i = 0; i < o.nhidden; i++) printf(" -> %zu", o.hidden[i]);
  printf(" -> %llu, batch %llu, median of %llu steps\n", (unsigned long long)o.classes, (unsigned long long)o.batch,
         (unsigned long long)o.steps);
  int rc = 0;
  for (int i = 0; backend_names[i]; i++) {
    if (o.backend && strcmp(o.backend, backend_names[i]) != 0) continue;
    for (int p = 1; p >= 0; p--) {
      backend be;
      char why[256];
      const char *pname = p ? "bf16" : "f32";
      if (backend_open(&be, backend_names[i], p, why, sizeof why) < 0) {
        printf("  %-10s %-4s  not available: %s\n", backend_names[i], pname, why);
        continue;
      }
      double sec = bench_one(&o, &be, p ? OPS_BF16 : OPS_F32);
      backend_close(&be);
      if (sec < 0) {
        rc = 1;
        continue;
      }
      printf("  %-10s %-4s  %8.3f ms/step  %9.0f samples/s\n", backend_names[i], pname, sec * 1e3, o.batch / sec);
      fflush(stdout);
    }
  }
  return rc;
}
