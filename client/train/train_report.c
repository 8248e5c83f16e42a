/* train_report.c -- see train_report.h */
#include "train_report.h"

#include <string.h>

#include "cli_opts.h"

/* The stream protocol's batch limit caps what "largest batch" can mean. */
#define TRAIN_BATCH_CAP 65536

void train_summary_memory(train_summary *s, const memplan_bytes *allocated) {
  optim_hparams adam;
  optim_hparams_default(&adam, OPTIM_ADAM);
  memplan_model base = s->model;
  base.precision = OPS_F32;
  s->chosen = *allocated;
  s->baseline = memplan_compute(&base, OPTIM_ADAM, &adam);
  if (!s->o->memory_budget) return;
  s->max_batch = memplan_max_batch(&s->model, s->o->optimizer, &s->o->hp, s->o->memory_budget, TRAIN_BATCH_CAP);
  s->baseline_max_batch = memplan_max_batch(&base, OPTIM_ADAM, &adam, s->o->memory_budget, TRAIN_BATCH_CAP);
}

/* "12.3 MiB" */
static const char *human(uint64_t b, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)b);
  else snprintf(buf, len, "%.1f %s", v, unit[u]);
  return buf;
}

static const char *prec_name(ops_dtype p) { return p == OPS_BF16 ? "bf16" : "f32"; }

static void row(FILE *f, const char *what, uint64_t chosen, uint64_t base) {
  char a[32], b[32];
  fprintf(f, "  %-24s %14s %14s\n", what, human(chosen, a, sizeof a), human(base, b, sizeof b));
}

void train_report_memory(FILE *f, const train_summary *s) {
  const memplan_model *m = &s->model;
  char head[48];
  snprintf(head, sizeof head, "%s + %s", prec_name(m->precision), optim_name(s->o->optimizer));
  fprintf(f, "model: %s -> ", s->features);
  for (int l = 1; l < m->nlayers; l++) fprintf(f, "%zu -> ", m->dims[l]);
  fprintf(f, "%zu classes, %llu parameters; backend %s\n", m->dims[m->nlayers],
          (unsigned long long)memplan_params(m), s->backend);
  char title[48];
  snprintf(title, sizeof title, "memory at batch %zu", m->batch);
  fprintf(f, "%-26s %14s %14s\n", title, head, "f32 + adam");
  row(f, "weights (f32 master)", s->chosen.weights, s->baseline.weights);
  row(f, "working copies (bf16)", s->chosen.working, s->baseline.working);
  row(f, "gradients (f32)", s->chosen.gradients, s->baseline.gradients);
  row(f, "activations", s->chosen.activations, s->baseline.activations);
  row(f, "optimizer state", s->chosen.optimizer, s->baseline.optimizer);
  uint64_t tc = memplan_total(&s->chosen), tb = memplan_total(&s->baseline);
  row(f, "total", tc, tb);
  fprintf(f, "  %-24s %+13.0f%% %14s\n", "vs the baseline", tb ? 100.0 * ((double)tc - tb) / tb : 0.0, "");
  if (s->o->memory_budget) {
    char b[32], what[48];
    snprintf(what, sizeof what, "largest batch in %s", human(s->o->memory_budget, b, sizeof b));
    fprintf(f, "  %-24s %14llu %14llu%s\n", what, (unsigned long long)s->max_batch,
            (unsigned long long)s->baseline_max_batch,
            s->max_batch == TRAIN_BATCH_CAP || s->baseline_max_batch == TRAIN_BATCH_CAP ? " (the stream's limit)" : "");
  }
}

void train_report_epoch(FILE *f, const train_summary *s, const train_epoch *e) {
  double t = e->wait_s + e->compute_s;
  fprintf(f, "epoch %llu/%llu  loss %.4f", (unsigned long long)(e->epoch - s->o->stream.epoch + 1),
          (unsigned long long)s->o->epochs, e->samples ? e->loss_sum / e->samples : 0.0);
  if (e->evaluated)
    fprintf(f, "  eval acc %.2f%% (%llu/%llu) loss %.4f", e->eval_total ? 100.0 * e->eval_correct / e->eval_total : 0,
            (unsigned long long)e->eval_correct, (unsigned long long)e->eval_total,
            e->eval_total ? e->eval_loss_sum / e->eval_total : 0.0);
  fprintf(f, "  %.1f samples/s  data wait %.2f s (%.0f%%)  compute %.2f s", t > 0 ? e->samples / t : 0.0, e->wait_s,
          t > 0 ? 100 * e->wait_s / t : 0.0, e->compute_s);
  if (e->evaluated) fprintf(f, "  eval %.2f s", e->eval_s);
  fputc('\n', f);
  fflush(f);
}

static void json_bytes(FILE *f, const memplan_bytes *b) {
  fprintf(f, "{\"weights\":%llu,\"working\":%llu,\"gradients\":%llu,\"activations\":%llu,\"optimizer\":%llu,"
             "\"total\":%llu}",
          (unsigned long long)b->weights, (unsigned long long)b->working, (unsigned long long)b->gradients,
          (unsigned long long)b->activations, (unsigned long long)b->optimizer,
          (unsigned long long)memplan_total(b));
}

void train_report_json(FILE *f, const train_summary *s) {
  const train_epoch *e = &s->last;
  double t = s->wait_s + s->compute_s;
  fprintf(f, "{\"eval_accuracy\":");
  if (e->evaluated && e->eval_total) fprintf(f, "%.6f", (double)e->eval_correct / e->eval_total);
  else fprintf(f, "null");
  fprintf(f, ",\"eval_loss\":");
  if (e->evaluated && e->eval_total) fprintf(f, "%.6f", e->eval_loss_sum / e->eval_total);
  else fprintf(f, "null");
  fprintf(f, ",\"final_loss\":%.6f,\"samples_per_s\":%.3f,\"precision\":\"%s\",\"backend\":",
          e->samples ? e->loss_sum / e->samples : 0.0, t > 0 ? s->samples / t : 0.0, prec_name(s->model.precision));
  cli_json_str(f, s->backend);
  fprintf(f, ",\"optimizer\":\"%s\",\"epochs\":%llu,\"batch\":%zu,\"accumulate\":%llu,\"hidden\":[",
          optim_name(s->o->optimizer), (unsigned long long)s->epochs_done, s->model.batch,
          (unsigned long long)s->o->accumulate);
  for (int i = 0; i < s->o->nhidden; i++) fprintf(f, "%s%zu", i ? "," : "", s->o->hidden[i]);
  fprintf(f, "],\"inputs\":%zu,\"classes\":%zu,\"parameters\":%llu,\"samples\":%llu,\"data_wait_s\":%.4f,"
             "\"compute_s\":%.4f,\"memory_bytes\":",
          s->model.dims[0], s->model.dims[s->model.nlayers], (unsigned long long)memplan_params(&s->model),
          (unsigned long long)s->samples, s->wait_s, s->compute_s);
  json_bytes(f, &s->chosen);
  fprintf(f, ",\"baseline_memory_bytes\":");
  json_bytes(f, &s->baseline);
  if (s->o->memory_budget)
    fprintf(f, ",\"memory_budget\":%llu,\"max_batch\":%llu,\"baseline_max_batch\":%llu",
            (unsigned long long)s->o->memory_budget, (unsigned long long)s->max_batch,
            (unsigned long long)s->baseline_max_batch);
  fprintf(f, "}\n");
  fflush(f);
}
