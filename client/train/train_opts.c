/* train_opts.c -- see train_opts.h */
#include "train_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"

const char train_usage[] =
    "usage: bfeed-train --connect ADDR --dataset NAME [--eval-dataset NAME] --epochs E [options]\n"
    "\n"
    "Trains a multilayer perceptron on the bf16 batches a bfeedd daemon streams, in bf16 mixed\n"
    "precision (bf16 activations and working weights, float32 accumulation, float32 master\n"
    "weights and optimizer state) or in float32, and prints what it costs in memory and time.\n"
    "\n"
    "training options:\n"
    "  --epochs E              epochs of the training stream (required)\n"
    "  --eval-dataset NAME     measure accuracy on NAME after each epoch (eval mode, every sample)\n"
    "  --backend NAME          auto, ref, avx512bf16 or onednn (auto: avx512bf16 where the CPU has it)\n"
    "  --precision bf16|f32    bf16 mixed precision, or float32 throughout (bf16)\n"
    "  --optimizer NAME        sgd (with momentum), adam or adafactor (adam)\n"
    "  --hidden N[,N...]       hidden layer widths, repeatable, up to 8 layers (256)\n"
    "  --accumulate K          micro-batches per optimizer step: an effective batch K times --batch (1)\n"
    "  --memory-budget BYTES   also print the largest batch that fits, e.g. 512M or 2G\n"
    "  --lr X                  learning rate (sgd 0.01, adam 0.001; adafactor: the cap on its\n"
    "                          relative step size, 0.01)\n"
    "  --momentum X            sgd momentum (0.9)\n"
    "  --json                  end with one line of JSON\n"
    "  --help, --version\n"
    "\n";

int train_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (!*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  static const char units[] = "KMGT";
  const char *u = *end ? strchr(units, *end) : NULL;
  int shift = u ? 10 * (int)(u - units + 1) : 0;
  if (*end && (!u || (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B")))) return -1;
  if (v > (UINT64_MAX >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

static int parse_float(const char *opt, const char *value, double lo, double hi, float *out) {
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (!*value || *end || errno || !(v >= lo && v <= hi)) {
    fprintf(stderr, "bfeed-train: --%s %s: expected a number from %g to %g\n", opt, value, lo, hi);
    return -1;
  }
  *out = (float)v;
  return 0;
}

int train_parse_widths(const char *value, size_t *widths, int *n) {
  const char *p = value;
  for (;;) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || *p == '-' || errno || v < 1 || v > (1u << 20) || (*end && *end != ',')) {
      fprintf(stderr, "bfeed-train: --hidden %s: expected widths from 1 to %u, separated by commas\n", value,
              1u << 20);
      return -1;
    }
    if (*n == TRAIN_MAX_HIDDEN) {
      fprintf(stderr, "bfeed-train: --hidden: at most %d hidden layers\n", TRAIN_MAX_HIDDEN);
      return -1;
    }
    widths[(*n)++] = (size_t)v;
    if (!*end) return 0;
    p = end + 1;
  }
}

static const char *const own_valued[] = {"connect",   "dataset", "eval-dataset",  "epochs", "backend",
                                         "precision", "optimizer", "hidden",      "accumulate",
                                         "memory-budget", "lr",  "momentum",      NULL};

static int takes_value(const char *name, void *ctx) {
  for (int i = 0; own_valued[i]; i++)
    if (strcmp(name, own_valued[i]) == 0) return 1;
  return cli_stream_opt_takes_value(name) || cli_connect_opt_takes_value(name);
}

/* Options of bfeed-train itself: 1 handled, 0 unknown, -1 bad value. */
static int own_opt(train_opts *o, const char *name, const char *value, int *lr_set, float *lr, int *mom_set,
                   float *mom) {
  if (strcmp(name, "connect") == 0) return o->connect = value, 1;
  if (strcmp(name, "dataset") == 0) return o->dataset = value, 1;
  if (strcmp(name, "eval-dataset") == 0) return o->eval_dataset = value, 1;
  if (strcmp(name, "backend") == 0) return o->backend = value, 1;
  if (strcmp(name, "json") == 0) return o->json = 1, 1;
  if (strcmp(name, "epochs") == 0) return cli_u64(name, value, 1, 1000000, &o->epochs) < 0 ? -1 : 1;
  if (strcmp(name, "accumulate") == 0) return cli_u64(name, value, 1, 65536, &o->accumulate) < 0 ? -1 : 1;
  if (strcmp(name, "hidden") == 0) return train_parse_widths(value, o->hidden, &o->nhidden) < 0 ? -1 : 1;
  if (strcmp(name, "lr") == 0) return parse_float(name, value, 1e-12, 10, lr) < 0 ? -1 : (*lr_set = 1);
  if (strcmp(name, "momentum") == 0) return parse_float(name, value, 0, 0.9999, mom) < 0 ? -1 : (*mom_set = 1);
  if (strcmp(name, "precision") == 0) {
    if (strcmp(value, "bf16") == 0) return o->precision = OPS_BF16, 1;
    if (strcmp(value, "f32") == 0) return o->precision = OPS_F32, 1;
    return fprintf(stderr, "bfeed-train: --precision %s: expected bf16 or f32\n", value), -1;
  }
  if (strcmp(name, "optimizer") == 0) {
    if (optim_parse(value, &o->optimizer) == 0) return 1;
    return fprintf(stderr, "bfeed-train: --optimizer %s: expected sgd, adam or adafactor\n", value), -1;
  }
  if (strcmp(name, "memory-budget") == 0) {
    if (train_parse_bytes(value, &o->memory_budget) == 0 && o->memory_budget > 0) return 1;
    return fprintf(stderr, "bfeed-train: --memory-budget %s: expected bytes, e.g. 1500000, 512M or 2G\n", value),
           -1;
  }
  return 0;
}

int train_opts_parse(int argc, char **argv, train_opts *o) {
  memset(o, 0, sizeof *o);
  bfeed_stream_opts_init(&o->stream);
  bfeed_connect_opts_init(&o->conn);
  o->backend = "auto";
  o->precision = OPS_BF16;
  o->optimizer = OPTIM_ADAM;
  o->accumulate = 1;
  int lr_set = 0, mom_set = 0, r;
  float lr = 0, mom = 0;
  cli_args a = {.argc = argc, .argv = argv};
  cli_set_prog("bfeed-train"); /* stream-option errors name this program */
  while ((r = cli_next(&a, takes_value, NULL)) == 1) {
    if (cli_help_or_version(a.name, train_usage, cli_stream_opts_help())) {
      if (strcmp(a.name, "help") == 0) fputs(cli_connect_opts_help, stdout);
      return 1;
    }
    int s = cli_stream_opt(a.name, a.value, &o->stream);
    if (s == 0) s = cli_connect_opt(a.name, a.value, &o->conn);
    if (s == 0) s = own_opt(o, a.name, a.value, &lr_set, &lr, &mom_set, &mom);
    if (s < 0) return -1;
    if (s == 0) return fprintf(stderr, "bfeed-train: unknown option --%s (see bfeed-train --help)\n", a.name), -1;
  }
  if (r < 0) return -1;
  if (!o->connect || !o->dataset || !o->epochs) {
    fprintf(stderr, "bfeed-train: --connect ADDR, --dataset NAME and --epochs E are required (see --help)\n");
    return -1;
  }
  if (o->nhidden == 0) o->hidden[o->nhidden++] = 256;
  optim_hparams_default(&o->hp, o->optimizer);
  if (lr_set) o->hp.lr = lr;
  if (mom_set) o->hp.momentum = mom;
  return 0;
}
