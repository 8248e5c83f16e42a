/*
 * test_select.c -- subsets of a stream's batches on the real daemon
 * (suite.h; PROTOCOL.md "Subsets of the batches"), over raw sockets:
 * residue streams together, and stride streams from successive batches,
 * are the select=all stream byte for byte,
 * on-demand streams serve what is asked in the order asked, bad REQUESTs
 * fail the stream or the connection as documented, and OPEN_OK's
 * fingerprint tells copies of the same data apart from changed data or
 * options.
 *
 * The oracle is the daemon's own select=all stream (itself checked
 * against the files by test_stream.c): a batch is compared by (epoch,
 * index), its BATCH payload byte for byte except `seq`, which counts the
 * batches of the stream that carries it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "suite.h"

#define SEL_EPOCHS 3
#define SEL_MAX 64 /* batches of the all-stream: demo has 47 samples, 5 batches of 8 an epoch */

typedef struct sel_batch {
  uint64_t epoch, index, seq;
  uint8_t *payload;
  uint32_t len;
} sel_batch;

typedef struct sel_run {
  sel_batch b[SEL_MAX * 2];
  size_t n;
  uint64_t end_count; /* END's count, UINT64_MAX when none came */
} sel_run;

static void sel_run_free(sel_run *r) {
  for (size_t i = 0; i < r->n; i++) free(r->b[i].payload);
  r->n = 0;
}

static void sel_opts(bfeed_stream_opts *o, int select, uint64_t mod, uint64_t rem) {
  suite_train_opts(o, 7, SEL_EPOCHS);
  o->select = (uint8_t)select;
  o->select_mod = mod;
  o->select_rem = rem;
}

/* HELLO, OPEN stream 1 with o on "demo", and OPEN_OK's contents. */
static int sel_open(const char *addr, const bfeed_stream_opts *o, msg_open_ok *ok) {
  int fd = suite_raw_open(addr, o);
  frame_header h;
  uint8_t *p;
  char why[256] = "";
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  assert_int_equal(h.length, 32); /* with the features */
  assert_int_equal(msg_open_ok_decode(p, h.length, ok, why, sizeof why), 0);
  free(p);
  return fd;
}

/* A BATCH's record; p is taken. */
static void sel_record(sel_batch *b, uint8_t *p, uint32_t len) {
  msg_batch m;
  char why[256] = "";
  assert_int_equal(msg_batch_decode(p, len, UINT64_MAX, &m, why, sizeof why), 0);
  *b = (sel_batch){.epoch = m.epoch, .index = m.index, .seq = m.seq, .payload = p, .len = len};
}

/* Read `want` BATCHes of stream 1 into r (acknowledging each), then, with
 * want UINT64_MAX, up to END. An ERROR fails the test. */
static void sel_collect(int fd, sel_run *r, uint64_t want) {
  r->end_count = UINT64_MAX;
  while (want == UINT64_MAX || r->n < want) {
    frame_header h;
    uint8_t *p;
    char why[256] = "";
    assert_int_equal(itest_raw_recv(fd, &h, &p), 0);
    assert_int_equal(h.stream, 1);
    if (h.type == FRAME_END) {
      assert_int_equal(msg_u64_decode(p, h.length, &r->end_count, why, sizeof why), 0);
      free(p);
      return;
    }
    if (h.type == FRAME_ERROR) fail_msg("ERROR on the stream: %.*s", (int)h.length - 6, (char *)p + 6);
    assert_int_equal(h.type, FRAME_BATCH);
    assert_true(r->n < sizeof r->b / sizeof r->b[0]);
    sel_record(&r->b[r->n++], p, h.length);
    suite_raw_ack(fd, 1, r->n);
  }
}

/* Equal batches: the same payload except the 8 bytes of seq (offset 16). */
static int sel_same(const sel_batch *a, const sel_batch *b) {
  return a->len == b->len && memcmp(a->payload, b->payload, 16) == 0 &&
         memcmp(a->payload + 24, b->payload + 24, a->len - 24) == 0;
}

static const sel_batch *sel_find(const sel_run *r, uint64_t epoch, uint64_t index) {
  for (size_t i = 0; i < r->n; i++)
    if (r->b[i].epoch == epoch && r->b[i].index == index) return &r->b[i];
  return NULL;
}

/* The select=all stream from (epoch 0, batch 2): the oracle. */
static void sel_all(const char *addr, sel_run *all, uint64_t *bpe) {
  bfeed_stream_opts o;
  msg_open_ok ok;
  sel_opts(&o, BFEED_SELECT_ALL, 1, 0);
  o.batch_index = 2;
  int fd = sel_open(addr, &o, &ok);
  all->n = 0;
  sel_collect(fd, all, UINT64_MAX);
  close(fd);
  *bpe = ok.batches_per_epoch;
  assert_int_equal(*bpe, 5);
  assert_int_equal(all->n, SEL_EPOCHS * 5 - 2);
  assert_int_equal(all->end_count, all->n);
}

/* ------------------------------------------------------------------ */
/* Residue                                                              */

/* The subset streams together served each batch of the all-stream once:
 * seen in all; then all, part and d are done with. */
static void sel_parts_done(itest_daemon *d, sel_run *all, sel_run *part, uint64_t seen) {
  assert_int_equal(seen, all->n);
  sel_run_free(all);
  free(all);
  free(part);
  suite_stop(d);
}

/* The whole of one subset stream (kind, mod, rem) opened at batch_index of
 * epoch 0, into part; its END counted what it sent. */
static void sel_part(const char *addr, bfeed_select kind, uint64_t mod, uint64_t rem, uint64_t batch_index,
                     sel_run *part) {
  bfeed_stream_opts o;
  msg_open_ok ok;
  sel_opts(&o, kind, mod, rem);
  o.batch_index = batch_index;
  int fd = sel_open(addr, &o, &ok);
  part->n = 0;
  sel_collect(fd, part, UINT64_MAX);
  close(fd);
  assert_int_equal(part->end_count, part->n);
}

static void test_residue_streams_make_up_the_all_stream(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "residue", 2, 0);
  sel_run *all = calloc(1, sizeof *all), *part = calloc(1, sizeof *part);
  uint64_t bpe, seen = 0;
  sel_all(d->unix_addr, all, &bpe);
  for (uint64_t r = 0; r < 3; r++) {
    sel_part(d->unix_addr, BFEED_SELECT_RESIDUE, 3, r, 2, part);
    uint64_t last_g = 0;
    for (size_t i = 0; i < part->n; i++) {
      const sel_batch *b = &part->b[i];
      uint64_t g = b->epoch * bpe + b->index;
      if (g % 3 != r) fail_msg("residue %llu of 3 served batch %llu (epoch %llu, index %llu)", (unsigned long long)r,
                               (unsigned long long)g, (unsigned long long)b->epoch, (unsigned long long)b->index);
      assert_true(i == 0 || g > last_g);
      assert_int_equal(b->seq, i);
      last_g = g;
      const sel_batch *want = sel_find(all, b->epoch, b->index);
      if (!want || !sel_same(b, want))
        fail_msg("residue %llu: batch (%llu, %llu) differs from the all-stream's", (unsigned long long)r,
                 (unsigned long long)b->epoch, (unsigned long long)b->index);
    }
    seen += part->n;
    sel_run_free(part);
  }
  /* Each batch of the all-stream in exactly one residue stream. */
  sel_parts_done(d, all, part, seen);
}

/* Stride: streams opened at batch 2 + w with stride 3, w = 0, 1, 2 (the
 * DataLoader workers of one reader), serve batches w, w + 3, ... of the
 * all-stream from batch 2, across the epochs' ends; together, each once. */
static void test_stride_streams_make_up_the_all_stream(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "stride", 2, 0);
  sel_run *all = calloc(1, sizeof *all), *part = calloc(1, sizeof *part);
  uint64_t bpe, seen = 0;
  sel_all(d->unix_addr, all, &bpe);
  for (uint64_t w = 0; w < 3; w++) {
    sel_part(d->unix_addr, BFEED_SELECT_STRIDE, 3, 0, 2 + w, part);
    assert_int_equal(part->n, (all->n - w + 2) / 3);
    for (size_t i = 0; i < part->n; i++) {
      assert_int_equal(part->b[i].seq, i);
      if (!sel_same(&part->b[i], &all->b[w + 3 * i]))
        fail_msg("stride 3 from batch %llu: its batch %zu (%llu, %llu) is not the all-stream's %llu",
                 (unsigned long long)(2 + w), i, (unsigned long long)part->b[i].epoch,
                 (unsigned long long)part->b[i].index, (unsigned long long)(w + 3 * i));
    }
    seen += part->n;
    sel_run_free(part);
  }
  sel_parts_done(d, all, part, seen);
}

/* ------------------------------------------------------------------ */
/* On demand                                                            */

static void sel_request(int fd, uint32_t id, const uint64_t (*e)[2], uint32_t n) {
  msg_request *m = calloc(1, sizeof *m);
  wbuf w;
  m->count = n;
  for (uint32_t i = 0; i < n; i++) m->b[i].epoch = e[i][0], m->b[i].index = e[i][1];
  wbuf_init(&w);
  msg_request_encode(&w, m);
  assert_int_equal(itest_raw_send(fd, FRAME_REQUEST, id, w.data, (uint32_t)w.len), 0);
  wbuf_free(&w);
  free(m);
}

static void test_on_demand_serves_what_is_asked_in_order(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "ondemand", 2, 0);
  sel_run *all = calloc(1, sizeof *all), *got = calloc(1, sizeof *got);
  uint64_t bpe;
  sel_all(d->unix_addr, all, &bpe);
  bfeed_stream_opts o;
  msg_open_ok ok;
  sel_opts(&o, BFEED_SELECT_ON_DEMAND, 1, 0);
  o.window = 2;
  int fd = sel_open(d->unix_addr, &o, &ok);
  /* Shuffled, one twice, over epochs; more than the window. */
  static const uint64_t ask[][2] = {{2, 4}, {0, 2}, {1, 0}, {2, 4}, {0, 3}, {1, 3}};
  sel_request(fd, 1, ask, 4);
  sel_request(fd, 1, ask + 4, 2);
  sel_collect(fd, got, 6);
  for (size_t i = 0; i < 6; i++) {
    const sel_batch *b = &got->b[i];
    assert_int_equal(b->epoch, ask[i][0]);
    assert_int_equal(b->index, ask[i][1]);
    assert_int_equal(b->seq, i);
    const sel_batch *want = sel_find(all, b->epoch, b->index);
    assert_non_null(want);
    assert_true(sel_same(b, want));
  }
  /* Nothing more comes, no END either: the next frame is the answer to STATS_REQ. */
  assert_int_equal(itest_raw_send(fd, FRAME_STATS_REQ, 1, NULL, 0), 0);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_recv(fd, &h, &p), 0);
  assert_int_equal(h.type, FRAME_STATS);
  msg_counter c[MSG_MAX_COUNTERS];
  size_t nc;
  char why[256] = "";
  assert_int_equal(msg_stats_decode(p, h.length, c, MSG_MAX_COUNTERS, &nc, why, sizeof why), 0);
  free(p);
  int found = 0;
  for (size_t i = 0; i < nc; i++)
    if (!strcmp(c[i].name, "requested")) found = 1, assert_int_equal(c[i].value, 6);
  assert_true(found);
  close(fd);
  sel_run_free(all);
  sel_run_free(got);
  free(all);
  free(got);
  suite_stop(d);
}

/* An on-demand stream (window 2, epochs 1..2 of 3) asked for one entry;
 * the ERROR on the stream that follows. */
static void sel_expect_refusal(const char *addr, int select, const uint64_t e[2], int code, const char *needle) {
  bfeed_stream_opts o;
  msg_open_ok ok;
  sel_opts(&o, select, 1, 0);
  o.epoch = 1;
  o.epochs = 2;
  int fd = sel_open(addr, &o, &ok);
  sel_request(fd, 1, (const uint64_t(*)[2])e, 1);
  uint32_t id;
  int got;
  char msg[MSG_ERROR_MAX];
  assert_int_equal(itest_raw_expect_error(fd, &id, &got, msg, sizeof msg), 0);
  assert_int_equal(id, 1);
  assert_int_equal(got, code);
  if (!strstr(msg, needle)) fail_msg("'%s' does not say '%s'", msg, needle);
  /* The connection lives on: a STATS_REQ of the connection is answered. */
  suite_raw_answers_then_close(fd, 0);
}

static void test_on_demand_refuses_bad_entries(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "badreq", 1, 0);
  static const uint64_t past_epoch_end[2] = {1, 5}, before[2] = {0, 0}, after[2] = {3, 0}, fine[2] = {1, 0};
  sel_expect_refusal(d->unix_addr, BFEED_SELECT_ON_DEMAND, past_epoch_end, BFEED_EINVAL, "epoch 1, batch 5");
  sel_expect_refusal(d->unix_addr, BFEED_SELECT_ON_DEMAND, before, BFEED_EINVAL, "epoch 0, batch 0");
  sel_expect_refusal(d->unix_addr, BFEED_SELECT_ON_DEMAND, after, BFEED_EINVAL, "epoch 3, batch 0");
  sel_expect_refusal(d->unix_addr, BFEED_SELECT_ALL, fine, BFEED_EINVAL, "on demand");
  sel_expect_refusal(d->unix_addr, BFEED_SELECT_RESIDUE, fine, BFEED_EINVAL, "on demand");
  suite_stop(d);
}

static void test_on_demand_bound_without_reading(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "bound", 2, 0);
  bfeed_stream_opts o;
  msg_open_ok ok;
  sel_opts(&o, BFEED_SELECT_ON_DEMAND, 1, 0);
  o.window = 2;
  o.epochs = 0;
  int fd = sel_open(d->unix_addr, &o, &ok);
  static uint64_t ask[MSG_MAX_REQUEST][2];
  for (int i = 0; i < MSG_MAX_REQUEST; i++) ask[i][0] = (uint64_t)i / 5, ask[i][1] = (uint64_t)i % 5;
  /* 1024 + window may be asked for and not consumed; one more may not. */
  sel_request(fd, 1, ask, MSG_MAX_REQUEST);
  sel_request(fd, 1, ask, 2);
  sel_request(fd, 1, ask, 1);
  uint32_t id;
  int code;
  char msg[MSG_ERROR_MAX];
  assert_int_equal(itest_raw_expect_error(fd, &id, &code, msg, sizeof msg), 0);
  assert_int_equal(id, 1);
  assert_int_equal(code, BFEED_ELIMIT);
  /* Others are served as ever, this client's connection too. */
  sel_run *all = calloc(1, sizeof *all);
  uint64_t bpe;
  sel_all(d->unix_addr, all, &bpe);
  sel_run_free(all);
  free(all);
  suite_raw_answers_then_close(fd, 0);
  suite_stop(d);
}

/* A malformed REQUEST is a protocol error: ERROR EPROTO on stream 0, then
 * the daemon hangs up. */
static void test_request_malformed(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "malformed", 1, 0);
  uint8_t zero[4] = {0}, over[4] = {1, 4, 0, 0} /* 1025 */, short2[4 + 16] = {2};
  const struct {
    const uint8_t *p;
    uint32_t len;
  } bad[] = {{zero, 4}, {over, 4}, {short2, sizeof short2}, {zero, 3}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bfeed_stream_opts o;
    msg_open_ok ok;
    sel_opts(&o, BFEED_SELECT_ON_DEMAND, 1, 0);
    int fd = sel_open(d->unix_addr, &o, &ok);
    assert_int_equal(itest_raw_send(fd, FRAME_REQUEST, 1, bad[i].p, bad[i].len), 0);
    uint32_t id;
    int code;
    char msg[MSG_ERROR_MAX];
    assert_int_equal(itest_raw_expect_error(fd, &id, &code, msg, sizeof msg), 0);
    assert_int_equal(id, 0);
    assert_int_equal(code, BFEED_EPROTO);
    assert_int_equal(itest_raw_drain_to_eof(fd), 0);
    close(fd);
  }
  /* On an unknown stream a well-formed REQUEST is ignored, like a late ACK. */
  int fd = suite_raw_hello(d->unix_addr);
  static const uint64_t one[1][2] = {{0, 0}};
  sel_request(fd, 9, one, 1);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_send(fd, FRAME_STATS_REQ, 0, NULL, 0), 0);
  assert_int_equal(itest_raw_recv(fd, &h, &p), 0);
  assert_int_equal(h.type, FRAME_STATS);
  free(p);
  close(fd);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Fingerprint                                                          */

static uint64_t sel_fingerprint(const char *addr, const bfeed_stream_opts *o) {
  msg_open_ok ok;
  int fd = sel_open(addr, o, &ok);
  close(fd);
  assert_int_not_equal(ok.fingerprint, 0);
  return ok.fingerprint;
}

/* A daemon (slot) serving "demo" from dir. */
static itest_daemon *sel_daemon(suite *s, int slot, const char *name, const char *dir) {
  static char arg[2][256];
  snprintf(arg[slot], sizeof arg[slot], "demo=%s", dir);
  itest_daemon_opts o = {.dir = s->root, .name = name, .datasets = {arg[slot]}, .workers = 1};
  char err[512];
  if (itest_daemon_start(&s->d[slot], &o, err, sizeof err) < 0) fail_msg("%s", err);
  return &s->d[slot];
}

static void test_fingerprint(void **state) {
  suite *s = *state;
  char a[256], b[256], cmd[700];
  snprintf(a, sizeof a, "%s/fp-a", s->root);
  snprintf(b, sizeof b, "%s/fp-b", s->root);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' && cp -r '%s' '%s' && cp -r '%s' '%s'", a, b, s->demo_dir, a,
           s->demo_dir, b);
  assert_int_equal(system(cmd), 0);
  itest_daemon *da = sel_daemon(s, 0, "fp-a", a), *db = sel_daemon(s, 1, "fp-b", b);
  bfeed_stream_opts o, other;
  sel_opts(&o, BFEED_SELECT_ALL, 1, 0);
  uint64_t fa = sel_fingerprint(da->unix_addr, &o);
  /* Copies of the same data agree. */
  assert_int_equal(sel_fingerprint(db->unix_addr, &o), fa);
  /* What only says which batches, or how they travel, does not count. */
  other = o;
  other.select = BFEED_SELECT_RESIDUE, other.select_mod = 3, other.select_rem = 1;
  other.window = 7, other.epoch = 2, other.batch_index = 1, other.epochs = 9, other.codec = BFEED_CODEC_ZSTD;
  assert_int_equal(sel_fingerprint(db->unix_addr, &other), fa);
  /* A different size, or seed: different bytes. */
  other = o;
  other.size = 40;
  assert_int_not_equal(sel_fingerprint(db->unix_addr, &other), fa);
  other = o;
  other.seed = 8;
  assert_int_not_equal(sel_fingerprint(db->unix_addr, &other), fa);
  /* crop_scale enters by its row in opts.def alone (the table says it changes bytes). */
  other = o;
  other.crop_scale[0] = 0.5f;
  assert_int_not_equal(sel_fingerprint(db->unix_addr, &other), fa);
  /* One file one byte longer: b's daemon, started again, disagrees. */
  suite_stop(db);
  itest_folder f;
  assert_int_equal(itest_folder_scan(b, &f), 0);
  snprintf(cmd, sizeof cmd, "printf x >> '%s/%s'", b, f.names[3]);
  itest_folder_free(&f);
  assert_int_equal(system(cmd), 0);
  db = sel_daemon(s, 1, "fp-b2", b);
  assert_int_not_equal(sel_fingerprint(db->unix_addr, &o), fa);
  assert_int_equal(sel_fingerprint(da->unix_addr, &o), fa);
  suite_stop(da);
  suite_stop(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_residue_streams_make_up_the_all_stream, suite_kill_daemons),
      cmocka_unit_test_teardown(test_stride_streams_make_up_the_all_stream, suite_kill_daemons),
      cmocka_unit_test_teardown(test_on_demand_serves_what_is_asked_in_order, suite_kill_daemons),
      cmocka_unit_test_teardown(test_on_demand_refuses_bad_entries, suite_kill_daemons),
      cmocka_unit_test_teardown(test_on_demand_bound_without_reading, suite_kill_daemons),
      cmocka_unit_test_teardown(test_request_malformed, suite_kill_daemons),
      cmocka_unit_test_teardown(test_fingerprint, suite_kill_daemons),
  };
  return SUITE_RUN("select", tests);
}
