/*
 * train_opts.h -- bfeed-train's command line.
 *
 *   bfeed-train --connect ADDR --dataset NAME [--eval-dataset NAME]
 *               [stream options as for bfeed] --epochs E [--backend NAME]
 *               [--precision bf16|f32] [--optimizer sgd|adam|adafactor]
 *               [--hidden N[,N...]]... [--accumulate K]
 *               [--memory-budget BYTES] [--lr X] [--momentum X] [--json]
 */
#ifndef BFEED_TRAIN_OPTS_H
#define BFEED_TRAIN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed.h"
#include "memplan.h"
#include "ops.h"
#include "optim.h"

#define TRAIN_MAX_HIDDEN (MEMPLAN_MAX_LAYERS - 1)

typedef struct train_opts {
  const char *connect, *dataset, *eval_dataset;
  bfeed_stream_opts stream; /* of the training stream; eval derives its own */
  bfeed_connect_opts conn;  /* --token-file, --no-reconnect, --reconnect-deadline */
  uint64_t epochs;
  const char *backend;      /* "auto" (default), "ref", "avx512bf16", "onednn" */
  ops_dtype precision;      /* OPS_BF16 (default) or OPS_F32 */
  optim_kind optimizer;     /* OPTIM_ADAM by default */
  optim_hparams hp;         /* the optimizer's defaults, --lr/--momentum applied */
  size_t hidden[TRAIN_MAX_HIDDEN];
  int nhidden;              /* default: one hidden layer of 256 */
  uint64_t accumulate;      /* micro-batches per optimizer step, default 1 */
  uint64_t memory_budget;   /* bytes, 0 = none given */
  int json;
} train_opts;

/* 0: parsed; 1: --help was printed; -1: usage error (message printed). */
int train_opts_parse(int argc, char **argv, train_opts *o);

/* Append the widths of "256" or "512,128" (--hidden) to widths[*n...],
 * at most TRAIN_MAX_HIDDEN in all; -1 (message printed) if bad. */
int train_parse_widths(const char *value, size_t *widths, int *n);

/* "512M", "2G", "1500000": bytes (K, M, G, T are powers of 1024), or -1. */
int train_parse_bytes(const char *s, uint64_t *out);

extern const char train_usage[];

#endif
