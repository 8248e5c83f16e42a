/*
 * train.c -- bfeed-train: train an MLP on a bfeed stream in bf16 mixed
 * precision, and show what it costs.
 *
 * The loop takes batches from the daemon, copies their features into the
 * model's input, runs forward and backward on the chosen backend, and steps
 * the optimizer every --accumulate batches (and at the end of each epoch,
 * so an epoch's last gradients are never carried into the next). After
 * each epoch it reads the whole eval dataset once, in eval mode, and
 * prints loss, accuracy, throughput and where the time went.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "clock.h"
#include "bfeed.h"
#include "inputs.h"
#include "mlp.h"
#include "optim.h"
#include "train_opts.h"
#include "train_report.h"

typedef struct train_run {
  train_opts o;
  backend be;
  bfeed_client *client;
  bfeed_stream *stream;
  uint32_t classes;
  inputs feat;
  mlp model;
  optim opt;
  uint64_t pending; /* micro-batches whose gradients wait for a step */
  train_summary sum;
  char err[512];
} train_run;

/* Build model and optimizer once the first batch shows the input width. */
static int setup_model(train_run *r, const bfeed_batch *first) {
  if (inputs_layout(&r->feat, first, r->err, sizeof r->err) < 0) return -1;
  memplan_model *m = &r->sum.model;
  m->nlayers = r->o.nhidden + 1;
  m->dims[0] = r->feat.total;
  for (int i = 0; i < r->o.nhidden; i++) m->dims[i + 1] = r->o.hidden[i];
  m->dims[m->nlayers] = r->classes;
  m->precision = r->o.precision;
  m->batch = r->o.stream.batch;
  if (mlp_init(&r->model, m, r->o.stream.seed, r->err, sizeof r->err) < 0) return -1;
  optim_init(&r->opt, r->o.optimizer, &r->o.hp);
  for (int l = 0; l < m->nlayers; l++) {
    mlp_layer *y = &r->model.layer[l];
    if (optim_add(&r->opt, y->w, y->gw, y->out, y->in) < 0 || optim_add(&r->opt, y->b, y->gb, 1, y->out) < 0)
      return snprintf(r->err, sizeof r->err, "out of memory for the optimizer state"), -1;
  }
  memplan_bytes held = r->model.bytes;
  held.optimizer = r->opt.state_bytes;
  inputs_describe(&r->feat, r->sum.features, sizeof r->sum.features);
  train_summary_memory(&r->sum, &held);
  train_report_memory(stdout, &r->sum);
  return 0;
}

static int backend_failed(train_run *r) {
  snprintf(r->err, sizeof r->err, "%s", r->be.err);
  return -1;
}

/* Apply the gradients of the pending micro-batches, averaged. */
static void step(train_run *r, train_epoch *e) {
  if (!r->pending) return;
  if (r->pending > 1) mlp_scale_grads(&r->model, 1.0f / (float)r->pending);
  optim_step(&r->opt);
  mlp_sync_working(&r->model);
  r->pending = 0;
  e->steps++;
}

/* Forward and backward on one batch; a step every --accumulate batches. */
static int train_batch(train_run *r, const bfeed_batch *b, train_epoch *e) {
  size_t n;
  const int32_t *labels;
  if (inputs_copy(&r->feat, b, mlp_input(&r->model), r->model.dt, r->sum.model.batch, &n, r->err,
                    sizeof r->err) < 0 ||
      inputs_labels(b, n, r->classes, &labels, r->err, sizeof r->err) < 0)
    return -1;
  if (n == 0) return 0;
  double loss;
  /* Each micro-batch adds the gradient of its mean loss; step() divides
   * by their number, so K batches of B weigh as one batch of K*B. */
  if (mlp_forward(&r->model, &r->be, n) < 0 ||
      mlp_backward(&r->model, &r->be, labels, n, 1.0f / (float)n, r->pending > 0, &loss) < 0)
    return backend_failed(r);
  e->loss_sum += loss;
  e->samples += n;
  if (++r->pending == r->o.accumulate) step(r, e);
  return 0;
}

/* One pass over the eval dataset, in eval mode, every sample once. */
static int evaluate(train_run *r, train_epoch *e) {
  bfeed_stream_opts eo = r->o.stream;
  eo.mode = BFEED_MODE_EVAL;
  eo.shuffle = BFEED_SHUFFLE_AUTO;
  eo.epoch = eo.batch_index = 0;
  eo.epochs = 1;
  eo.keep_partial = 1;
  eo.shard_index = 0, eo.shard_count = 1;
  bfeed_stream *s;
  bfeed_error err;
  double t0 = clock_now_s();
  if (bfeed_stream_open(r->client, r->o.eval_dataset, &eo, &s, &err) < 0)
    return snprintf(r->err, sizeof r->err, "eval dataset '%s': %s", r->o.eval_dataset, err.message), -1;
  bfeed_stream_info info;
  if (bfeed_stream_get_info(s, &info) == 0 && info.classes != r->classes) {
    bfeed_stream_close(s);
    return snprintf(r->err, sizeof r->err, "eval dataset '%s' has %u classes, the training one %u",
                    r->o.eval_dataset, info.classes, r->classes),
           -1;
  }
  int rc = 0;
  bfeed_batch *b;
  e->eval_correct = e->eval_total = 0;
  e->eval_loss_sum = 0;
  while ((rc = bfeed_stream_next(s, &b, &err)) == 0) {
    size_t n;
    const int32_t *labels;
    rc = inputs_copy(&r->feat, b, mlp_input(&r->model), r->model.dt, r->sum.model.batch, &n, r->err,
                       sizeof r->err);
    if (rc == 0) rc = inputs_labels(b, n, r->classes, &labels, r->err, sizeof r->err);
    if (rc == 0 && n && mlp_forward(&r->model, &r->be, n) < 0) rc = backend_failed(r);
    if (rc == 0 && n) {
      e->eval_correct += ops_count_correct(r->model.logits, labels, n, r->classes);
      /* The loss routine also writes a gradient; nothing reads it here. */
      e->eval_loss_sum += ops_softmax_xent(r->model.grad, r->model.dt, r->model.logits, labels, n, r->classes, 0);
      e->eval_total += n;
    }
    bfeed_batch_release(b);
    if (rc < 0) break;
  }
  bfeed_stream_close(s);
  if (rc == BFEED_EEOF) rc = 0;
  else if (rc < 0 && !r->err[0]) snprintf(r->err, sizeof r->err, "eval dataset '%s': %s", r->o.eval_dataset, err.message);
  e->evaluated = rc == 0;
  e->eval_s = clock_now_s() - t0;
  return rc;
}

static int end_epoch(train_run *r, train_epoch *e) {
  double t0 = clock_now_s();
  step(r, e);
  e->compute_s += clock_now_s() - t0;
  if (r->o.eval_dataset && evaluate(r, e) < 0) return -1;
  r->sum.last = *e;
  r->sum.epochs_done++;
  r->sum.samples += e->samples;
  r->sum.wait_s += e->wait_s;
  r->sum.compute_s += e->compute_s;
  train_report_epoch(stdout, &r->sum, e);
  return 0;
}

static int run(train_run *r) {
  bfeed_error err;
  bfeed_stream_opts so = r->o.stream;
  so.epochs = r->o.epochs;
  if (bfeed_connect2(r->o.connect, &r->o.conn, &r->client, &err) < 0) return snprintf(r->err, sizeof r->err, "%s", err.message), -1;
  if (bfeed_stream_open(r->client, r->o.dataset, &so, &r->stream, &err) < 0)
    return snprintf(r->err, sizeof r->err, "dataset '%s': %s", r->o.dataset, err.message), -1;
  bfeed_stream_info info;
  if (bfeed_stream_get_info(r->stream, &info) < 0 || info.classes < 2)
    return snprintf(r->err, sizeof r->err, "dataset '%s' has fewer than 2 classes", r->o.dataset), -1;
  r->classes = info.classes;

  train_epoch e = {.epoch = so.epoch};
  int have_model = 0, rc;
  for (;;) {
    bfeed_batch *b;
    double t0 = clock_now_s();
    rc = bfeed_stream_next(r->stream, &b, &err);
    double t1 = clock_now_s();
    if (rc == BFEED_EEOF) break;
    if (rc < 0) return snprintf(r->err, sizeof r->err, "dataset '%s': %s", r->o.dataset, err.message), -1;
    double wait = t1 - t0;
    if (bfeed_batch_epoch(b) != e.epoch) {
      if (e.samples && end_epoch(r, &e) < 0) return bfeed_batch_release(b), -1;
      e = (train_epoch){.epoch = bfeed_batch_epoch(b)};
      t1 = clock_now_s(); /* the eval pass is neither waiting nor training */
    }
    e.wait_s += wait;
    if (!have_model) {
      if (setup_model(r, b) < 0) return bfeed_batch_release(b), -1;
      have_model = 1;
      t1 = clock_now_s();
    }
    rc = train_batch(r, b, &e);
    bfeed_batch_release(b);
    e.compute_s += clock_now_s() - t1;
    if (rc < 0) return -1;
  }
  if (!have_model) return snprintf(r->err, sizeof r->err, "dataset '%s' sent no batch", r->o.dataset), -1;
  if (e.samples && end_epoch(r, &e) < 0) return -1;
  if (r->o.json) train_report_json(stdout, &r->sum);
  return 0;
}

int main(int argc, char **argv) {
  train_run *r = calloc(1, sizeof *r);
  if (!r) return fprintf(stderr, "bfeed-train: out of memory\n"), 1;
  int pr = train_opts_parse(argc - 1, argv + 1, &r->o);
  if (pr != 0) {
    free(r);
    return pr > 0 ? 0 : 2;
  }
  r->sum.o = &r->o;
  char note[512];
  if (backend_open_or_ref(&r->be, r->o.backend, r->o.precision == OPS_BF16, note, sizeof note) < 0) {
    fprintf(stderr, "bfeed-train: --backend: %s\n", note);
    free(r);
    return 2;
  }
  if (note[0]) fprintf(stderr, "bfeed-train: %s\n", note);
  /* Measured: on 2 cores shared with bfeedd, oneDNN's default of one
   * spinning OpenMP thread per core made a step 20 times slower. */
  if (strcmp(r->be.name, "onednn") == 0 && !getenv("OMP_NUM_THREADS"))
    fprintf(stderr, "bfeed-train: note: oneDNN starts an OpenMP thread per core, which compete with a bfeedd on "
                    "the same machine; set OMP_NUM_THREADS to the cores the daemon leaves free\n");
  r->sum.backend = r->be.name;
  int rc = run(r);
  if (rc < 0) fprintf(stderr, "bfeed-train: %s\n", r->err);
  if (r->stream) bfeed_stream_close(r->stream);
  if (r->client) bfeed_close(r->client);
  optim_free(&r->opt);
  mlp_free(&r->model);
  backend_close(&r->be);
  free(r);
  return rc < 0 ? 1 : 0;
}
