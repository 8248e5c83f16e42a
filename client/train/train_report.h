/*
 * train_report.h -- what bfeed-train prints: the memory table at start, a
 * line per epoch, and with --json a last line of JSON.
 */
#ifndef BFEED_TRAIN_REPORT_H
#define BFEED_TRAIN_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "memplan.h"
#include "train_opts.h"

typedef struct train_epoch {
  uint64_t epoch;   /* 0-based, as the stream counts */
  uint64_t samples; /* trained on */
  uint64_t steps;   /* optimizer steps */
  double loss_sum;  /* summed per-sample training loss */
  double wait_s;    /* blocked in bfeed_stream_next for training batches */
  double compute_s; /* everything else of the training loop */
  double eval_s;    /* the whole eval pass, waiting included */
  int evaluated;
  uint64_t eval_correct, eval_total;
  double eval_loss_sum;
} train_epoch;

typedef struct train_summary {
  const train_opts *o;
  const char *backend;
  char features[160];     /* what the model reads, inputs_describe */
  memplan_model model;    /* at the stream's batch */
  memplan_bytes chosen;   /* what this run allocated */
  memplan_bytes baseline; /* float32 + Adam, same model and batch */
  uint64_t max_batch, baseline_max_batch; /* under --memory-budget */
  train_epoch last;       /* the last epoch */
  uint64_t epochs_done, samples;
  double wait_s, compute_s;
} train_summary;

/* Fill chosen from the allocation, baseline and the budget's batches from
 * memplan. */
void train_summary_memory(train_summary *s, const memplan_bytes *allocated);

void train_report_memory(FILE *f, const train_summary *s);
void train_report_epoch(FILE *f, const train_summary *s, const train_epoch *e);
void train_report_json(FILE *f, const train_summary *s);

#endif
