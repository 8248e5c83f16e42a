/*
 * test_flow_rules.c -- daemon/serve/flow.c on its own, with fake streams
 * that make, send and drop batches in a real buffer pool: the window and
 * ACKs, the shared-memory slots and releases, max_memory's shares and the
 * one-batch rule, shedding a stream that does not read for one that does
 * (its buffers leaving the pool too), waking refused streams when bytes are written, and a closed stream's
 * bytes counted until its queued frames are out; streams that stop taking
 * batches (idle, on a clock the test turns) giving their memory and ring
 * room to one that reads, their free slots' memory too, and getting the
 * same batches when they read again; ring batches sent two ahead. test_flow and test_memory check the same rules through the real
 * daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bfeed_types.h"
#include "bufcache.h"
#include "flow.h"

#define MIB (1ull << 20)
#define FAKE_MAX 64

/* A stream as flow sees it: batches made (in pooled buffers) and not
 * sent, and batches queued on its "socket", by seq. */
typedef struct fake {
  flow *f;
  flow_stream *fs; /* still set once closed (the test writes its queued frames) */
  int closed;
  bufcache *pool;
  uint8_t *made[FAKE_MAX];
  size_t made_cap[FAKE_MAX];
  uint8_t *queued[FAKE_MAX];
  size_t queued_cap[FAKE_MAX];
  uint64_t written; /* queued batches written so far: the next to write */
  int resumed, dropped;
  uint64_t cold;    /* slots whose memory the fake ring gave back (cool_ops) */
  int cooled, warmed;
} fake;

static void fake_resume(void *owner) { ((fake *)owner)->resumed++; }

/* As batch_job_free: the buffer goes back to the pool. */
static int fake_drop(void *owner, uint64_t seq) {
  fake *k = owner;
  if (!k->made[seq % FAKE_MAX]) return 0;
  bufcache_put(k->pool, k->made[seq % FAKE_MAX], k->made_cap[seq % FAKE_MAX]);
  k->made[seq % FAKE_MAX] = NULL;
  k->dropped++;
  return 1;
}

static const flow_ops fake_ops = {.resume = fake_resume, .drop = fake_drop};

/* A ring whose slots give their memory back, as shm_ring_cool does: flow
 * may cool only a free slot, and warms a slot only while it is cold. */
static uint64_t fake_slot_cool(void *owner, uint32_t slot) {
  fake *k = owner;
  assert_false(k->cold >> slot & 1);
  k->cold |= 1ull << slot;
  k->cooled++;
  return MIB;
}

static void fake_slot_warm(void *owner, uint32_t slot) {
  fake *k = owner;
  assert_true(k->cold >> slot & 1);
  k->cold &= ~(1ull << slot);
  k->warmed++;
}

static const flow_ops cool_ops = {
    .resume = fake_resume, .drop = fake_drop, .slot_cool = fake_slot_cool, .slot_warm = fake_slot_warm};

static void fake_open(fake *k, flow *f, bufcache *pool, uint32_t window, uint32_t slots, const flow_ops *ops) {
  memset(k, 0, sizeof *k);
  k->f = f;
  k->pool = pool;
  k->fs = flow_open(f, window, MIB, slots, ops, k);
  assert_non_null(k->fs);
}

/* Schedule and make every batch flow allows now, of the stream's first
 * `end`; how many. A batch's bytes are a function of its seq, as a real
 * batch's are of its position. */
static int fake_fill_to(fake *k, uint64_t end) {
  int n = 0, slot;
  while (flow_may_schedule(k->fs, end, 0)) {
    uint64_t seq = flow_schedule(k->fs, &slot);
    uint8_t *b = bufcache_get(k->pool, MIB, &k->made_cap[seq % FAKE_MAX]);
    assert_non_null(b);
    memset(b, (int)(seq * 7 + 1), MIB);
    k->made[seq % FAKE_MAX] = b;
    flow_built(k->fs, k->made_cap[seq % FAKE_MAX], 0);
    n++;
  }
  return n;
}

static int fake_fill(fake *k) { return fake_fill_to(k, UINT64_MAX); }

/* Hand the next batch to the socket, if flow lets it go: 1 if it went. */
static int fake_send(fake *k) {
  uint64_t seq = flow_sent(k->fs);
  if (!flow_may_send(k->fs) || seq == flow_scheduled(k->fs) || !k->made[seq % FAKE_MAX]) return 0;
  k->queued[seq % FAKE_MAX] = k->made[seq % FAKE_MAX];
  k->queued_cap[seq % FAKE_MAX] = k->made_cap[seq % FAKE_MAX];
  k->made[seq % FAKE_MAX] = NULL;
  flow_send(k->fs);
  flow_queued(k->f, k->fs, k->queued_cap[seq % FAKE_MAX], 0);
  return 1;
}

/* The socket wrote the oldest queued batch (conn.c's order: free, report). */
static void fake_write(fake *k, flow_stream *fs) {
  uint64_t seq = k->written++;
  size_t cap = k->queued_cap[seq % FAKE_MAX];
  bufcache_put(k->pool, k->queued[seq % FAKE_MAX], cap);
  k->queued[seq % FAKE_MAX] = NULL;
  flow_written(k->f, fs, cap, 0);
}

/* The daemon's side for a test: the limit, a pool, the flow, its fakes. */
typedef struct rig {
  uint64_t max;
  bufcache *pool;
  flow *f;
  fake k[3];
  int n;
} rig;

/* pool_keep: the free buffers the pool keeps (the daemon's keeps some). */
static rig *rig_new(uint64_t max, int pool_keep) {
  rig *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->max = max;
  r->pool = bufcache_new(pool_keep);
  r->f = flow_new(&r->max, r->pool);
  assert_non_null(r->f);
  return r;
}

static fake *rig_open_ops(rig *r, uint32_t window, uint32_t slots, const flow_ops *ops) {
  assert_true(r->n < 3);
  fake *k = &r->k[r->n++];
  fake_open(k, r->f, r->pool, window, slots, ops);
  return k;
}

static fake *rig_open(rig *r, uint32_t window, uint32_t slots) { return rig_open_ops(r, window, slots, &fake_ops); }

static void rig_free(rig *r) {
  for (int n = 0; n < r->n; n++) {
    fake *k = &r->k[n];
    for (int i = 0; i < FAKE_MAX; i++) {
      bufcache_put(k->pool, k->made[i], k->made_cap[i]);
      bufcache_put(k->pool, k->queued[i], k->queued_cap[i]);
    }
    if (!k->closed) flow_close(k->fs);
  }
  flow_free(r->f);
  bufcache_unref(r->pool);
  free(r);
}

static void test_window_and_acks(void **state) {
  (void)state;
  rig *r = rig_new(0, 64); /* no memory limit: the window alone */
  fake *k = rig_open(r, 3, 0);
  char err[128];
  assert_int_equal(fake_fill(k), 3);
  assert_int_equal(flow_scheduled(k->fs), 3);
  assert_false(flow_may_schedule(k->fs, UINT64_MAX, 0));
  assert_int_equal(flow_ack(k->fs, 1, err, sizeof err), BFEED_EPROTO); /* nothing sent yet */
  assert_string_equal(err, "ACK of 1 batches, more than were sent");
  assert_true(fake_send(k));
  assert_true(fake_send(k));
  assert_int_equal(flow_ack(k->fs, 1, err, sizeof err), 0);
  assert_int_equal(flow_acked(k->fs), 1);
  assert_int_equal(fake_fill(k), 1); /* seq 3 < consumed 1 + window 3 */
  assert_int_equal(flow_ack(k->fs, 0, err, sizeof err), 0); /* an older ACK moves nothing back */
  assert_int_equal(flow_acked(k->fs), 1);
  assert_false(flow_may_schedule(k->fs, UINT64_MAX, 0));
  assert_int_equal(flow_ack(k->fs, 2, err, sizeof err), 0);
  assert_false(flow_may_schedule(k->fs, 4, 0)); /* the stream's end */
  assert_true(flow_may_schedule(k->fs, 5, 0));
  rig_free(r);
}

/* Two batches in the socket's queue: the client is not reading, the next
 * waits in the daemon; a write lets it go and resumes the stream. */
static void test_client_not_reading(void **state) {
  (void)state;
  rig *r = rig_new(0, 64);
  fake *k = rig_open(r, 8, 0);
  assert_int_equal(fake_fill(k), 8);
  assert_true(fake_send(k));
  assert_true(fake_send(k));
  assert_false(fake_send(k));
  fake_write(k, k->fs);
  assert_int_equal(k->resumed, 1);
  assert_true(fake_send(k));
  rig_free(r);
}

/* A client that reads the socket but takes no batch (its library reads
 * ahead into its own memory) is sent no more than its share of
 * max_memory, two batches at least: 8 MiB over two streams, 4 batches of
 * 1 MiB, though the window is 8. The next goes once it takes one. */
static void test_window_within_the_share(void **state) {
  (void)state;
  char err[128];
  rig *r = rig_new(8 * MIB, 0);
  fake *k = rig_open(r, 8, 0);
  rig_open(r, 8, 0);
  int sent = 0;
  for (int round = 0; round < 20; round++) {
    fake_fill(k);
    while (fake_send(k)) sent++, fake_write(k, k->fs);
  }
  assert_int_equal(sent, 4);
  assert_int_equal(flow_ack(k->fs, 1, err, sizeof err), 0);
  fake_fill(k);
  assert_true(fake_send(k));
  rig_free(r);
}

static void test_shm_slots(void **state) {
  (void)state;
  int slot;
  char err[128];
  rig *r = rig_new(0, 64);
  fake *k = rig_open(r, 8, 2);
  assert_int_equal(flow_schedule(k->fs, &slot), 0);
  assert_int_equal(slot, 0);
  assert_int_equal(flow_schedule(k->fs, &slot), 1);
  assert_int_equal(slot, 1);
  assert_int_equal(flow_schedule(k->fs, &slot), 2);
  assert_int_equal(slot, -1); /* every slot held: over the socket */
  assert_int_equal(flow_release(k->fs, 0, err, sizeof err), BFEED_EPROTO); /* not sent yet */
  assert_string_equal(err, "ACK releases batch 0, which holds no shared-memory slot");
  flow_send(k->fs);
  flow_send(k->fs);
  flow_send(k->fs);
  assert_int_equal(flow_release(k->fs, 2, err, sizeof err), BFEED_EPROTO); /* went over the socket */
  assert_int_equal(flow_release(k->fs, 1, err, sizeof err), 0);
  assert_int_equal(flow_release(k->fs, 1, err, sizeof err), BFEED_EPROTO); /* twice */
  assert_int_equal(flow_schedule(k->fs, &slot), 3);
  assert_int_equal(slot, 1);
  rig_free(r);
}

/* Each stream may hold its share; one holding nothing may always schedule
 * one batch; a refused stream is resumed once a write brings held under
 * the limit. */
static void test_shares_and_one_batch(void **state) {
  (void)state;
  rig *r = rig_new(4 * MIB, 0); /* the pool keeps nothing: held is what the fakes hold */
  fake *a = rig_open(r, 16, 0), *b = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(a), 2); /* 4 MiB / 2 streams */
  assert_int_equal(fake_fill(b), 2);
  assert_int_equal(flow_held(r->f), 4 * MIB);
  r->max = MIB; /* a reload lowers the limit: read at the next decision */
  assert_int_equal(fake_fill(a), 0);
  r->max = 4 * MIB;
  /* b sends both; its client reads one: b may make one more, and a, refused, is resumed. */
  assert_true(fake_send(b));
  assert_true(fake_send(b));
  assert_int_equal(flow_held(r->f), 4 * MIB); /* queued bytes count as held */
  r->max = 2 * MIB;
  assert_int_equal(fake_fill(a), 0); /* refused: waits */
  r->max = 4 * MIB;
  a->resumed = 0;
  fake_write(b, b->fs);
  assert_int_equal(a->resumed, 1);
  assert_int_equal(flow_held(r->f), 3 * MIB);
  assert_int_equal(fake_fill(b), 1);
  /* A stream holding nothing gets one batch past the limit. */
  fake *c = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(c), 1);
  assert_int_equal(flow_held(r->f), 5 * MIB);
  rig_free(r);
}

/* A closed stream's batches still queued count as held until written; it
 * is no longer resumed, and no longer counts for the shares. */
static void test_closed_stream_queued(void **state) {
  (void)state;
  rig *r = rig_new(8 * MIB, 0);
  fake *a = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(a), 8);
  assert_true(fake_send(a));
  assert_true(fake_send(a));
  for (uint64_t s = 2; s < 8; s++) fake_drop(a, s); /* the stream frees what it made */
  flow_close(a->fs);
  a->closed = 1;
  assert_int_equal(flow_held(r->f), 2 * MIB);
  a->resumed = 0;
  fake_write(a, a->fs);
  assert_int_equal(flow_held(r->f), MIB);
  fake_write(a, a->fs); /* the last: flow frees it */
  assert_int_equal(flow_held(r->f), 0);
  assert_int_equal(a->resumed, 0);
  fake *b = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(b), 8); /* the whole limit: the only open stream */
  rig_free(r);
}

/* A stream that does not read holds more than its share once a reader
 * opens beside it: the reader's request sheds the non-reader's last
 * batches, down to its share, and their slots come back. */
static void shed_for_a_reader(int pool_keep) {
  rig *r = rig_new(8 * MIB, pool_keep);
  fake *a = rig_open(r, 16, 8);
  assert_int_equal(fake_fill(a), 8);
  fake *b = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(b), 4); /* one for nothing held, then within its share as a sheds */
  assert_int_equal(a->dropped, 4);
  assert_int_equal(flow_scheduled(a->fs), 4);
  assert_int_equal(bufcache_idle_bytes(r->pool), 0);
  assert_int_equal(flow_held(r->f), 8 * MIB);
  int slot;
  assert_int_equal(flow_schedule(a->fs, &slot), 4); /* its turn again: made anew, in a freed slot */
  assert_int_equal(slot, 4);
  rig_free(r);
}

static void test_shed_for_a_reader(void **state) {
  (void)state;
  shed_for_a_reader(0);
}

/* A shed batch's buffer goes back to the pool, where it still counts as
 * held: the shedding must give those buffers back too, or the reader is
 * refused beside the memory it just freed. */
static void test_shed_buffers_leave_the_pool(void **state) {
  (void)state;
  shed_for_a_reader(64);
}

/* The test's clock, turned by hand. */
static uint64_t fake_now_ns = 1000000000ull;
static uint64_t fake_clock(void) { return fake_now_ns; }
#define SEC 1000000000ull

/* Two batches sent and written (the client has them), then two seconds
 * without the client taking one: the stream is idle. */
static void fake_two_then_idle(fake *k) {
  for (int i = 0; i < 2; i++) assert_true(fake_send(k));
  fake_write(k, k->fs);
  fake_write(k, k->fs);
  fake_now_ns += 2 * SEC;
  assert_true(flow_is_idle(k->fs));
}

/* rig_new, on the test's clock. */
static rig *rig_timed(uint64_t max, int pool_keep) {
  rig *r = rig_new(max, pool_keep);
  flow_set_clock(r->f, fake_clock);
  return r;
}

/* A rig of 8 MiB on the test's clock with one stream of window 16 that
 * has made 8 batches and sent `sends` of them to its socket. */
static rig *rig_with_sender(uint32_t slots, int sends, fake **out) {
  rig *r = rig_timed(8 * MIB, 0);
  fake *a = rig_open(r, 16, slots);
  assert_int_equal(fake_fill(a), 8);
  for (int i = 0; i < sends; i++) assert_true(fake_send(a));
  *out = a;
  return r;
}

/* A client that has a batch to take and takes none for a second is idle:
 * a reader opening beside it gets the whole limit, not half, and the
 * idle stream's finished, unsent batches are freed for it (the two on
 * its socket stay); the idle stream makes nothing more while it holds
 * anything. When its client reads again it is a reader again, and the
 * freed batches are made again, the same ones, in order. */
static void test_idle_stream_gives_way(void **state) {
  (void)state;
  fake *a;
  rig *r = rig_with_sender(8, 2, &a);
  assert_false(flow_is_idle(a->fs));
  fake_now_ns += 2 * SEC;
  assert_true(flow_is_idle(a->fs));
  assert_int_equal(flow_idle_streams(r->f), 1);
  fake *b = rig_open(r, 16, 0);
  assert_int_equal(fake_fill(b), 6); /* all of max_memory but a's two queued batches */
  assert_int_equal(a->dropped, 6);
  assert_int_equal(flow_dropped_idle(a->fs), 6);
  assert_int_equal(flow_dropped_idle_total(r->f), 6);
  assert_int_equal(flow_scheduled(a->fs), 2);
  assert_false(flow_may_schedule(a->fs, UINT64_MAX, 0)); /* idle, and holding its queued batches */
  assert_int_equal(flow_held(r->f), 8 * MIB);
  /* a's client reads: it is no longer idle, and makes batch 2 again. */
  char err[128];
  fake_write(a, a->fs);
  assert_int_equal(flow_ack(a->fs, 1, err, sizeof err), 0);
  assert_false(flow_is_idle(a->fs));
  assert_int_equal(flow_idle_streams(r->f), 0);
  assert_true(fake_fill(a) >= 1);
  assert_non_null(a->made[2]);
  for (size_t i = 0; i < MIB; i += 4096) assert_int_equal(a->made[2][i], (uint8_t)(2 * 7 + 1));
  assert_int_equal(flow_scheduled(a->fs) - flow_sent(a->fs) + 1, 4); /* its share now: 4 MiB of 8 */
  rig_free(r);
}

/* A client that stops reading keeps the share of every open stream for
 * what it was sent and has not taken: once idle it no longer counts among
 * the streams that read, and before the fix its share grew to all of
 * max_memory over the others (8 idle clients with window 64 took 2.4 GB in
 * their process under a 2G max_memory). Two streams of 8 MiB: 4 sent,
 * never a fifth, however long it stays idle and makes one at a time. */
static void test_idle_client_keeps_its_share(void **state) {
  (void)state;
  rig *r = rig_timed(8 * MIB, 0);
  fake *k = rig_open(r, 16, 0);
  fake *other = rig_open(r, 16, 0);
  (void)other;
  int sent = 0;
  for (int round = 0; round < 20; round++) {
    fake_now_ns += 2 * SEC; /* idle from the first round on */
    fake_fill(k);
    while (fake_send(k)) sent++, fake_write(k, k->fs);
  }
  assert_true(flow_is_idle(k->fs));
  assert_int_equal(sent, 4);
  rig_free(r);
}

/* Idle is about the client, not the daemon: a client waiting for its
 * next batch is never idle; one whose steps take 1.5 s is idle only after
 * four of its steps without taking a batch, not after one second (until
 * two ACKs tell its pace, a second). */
static void test_idle_follows_the_pace(void **state) {
  (void)state;
  rig *r = rig_timed(0, 64);
  fake *k = rig_open(r, 4, 0);
  char err[128];
  fake_now_ns += 60 * SEC;
  assert_false(flow_is_idle(k->fs)); /* nothing sent yet: it waits for us */
  assert_int_equal(fake_fill(k), 4);
  for (uint64_t n = 1; n <= 8; n++) {
    assert_true(fake_send(k));
    fake_write(k, k->fs);
    fake_now_ns += 3 * SEC / 2;
    assert_true(flow_is_idle(k->fs) == (n <= 2)); /* the pace is known from the second ACK on */
    assert_int_equal(flow_ack(k->fs, n, err, sizeof err), 0);
    fake_fill(k);
  }
  assert_true(fake_send(k));
  fake_now_ns += 5 * SEC; /* over a second, under four steps */
  assert_false(flow_is_idle(k->fs));
  fake_now_ns += 2 * SEC;
  assert_true(flow_is_idle(k->fs));
  rig_free(r);
}

/* A shared-memory ring for a new stream fits once the idle streams'
 * unsent batches are freed; with none idle it does not fit. */
static void test_ring_room_from_idle_streams(void **state) {
  (void)state;
  fake *a;
  rig *r = rig_with_sender(0, 1, &a);
  assert_false(flow_make_room(r->f, 4 * MIB));
  assert_int_equal(a->dropped, 0);
  fake_now_ns += 2 * SEC;
  assert_true(flow_make_room(r->f, 4 * MIB));
  assert_int_equal(a->dropped, 7);
  rig_free(r);
}

/* A ring batch is sent only two past what the client consumed: the rest
 * of the window waits made in its slots, where it can still be shed; a
 * batch that went over the socket (no slot free) is not held so. */
static void test_ring_sends_two_ahead(void **state) {
  (void)state;
  char err[128];
  rig *r = rig_new(0, 64);
  fake *k = rig_open(r, 6, 8);
  assert_int_equal(fake_fill(k), 6);
  assert_true(fake_send(k));
  assert_true(fake_send(k));
  fake_write(k, k->fs);
  fake_write(k, k->fs); /* the socket took both: its rule does not hold them */
  assert_false(fake_send(k)); /* two sent, none consumed */
  assert_int_equal(flow_ack(k->fs, 1, err, sizeof err), 0);
  assert_true(fake_send(k));
  assert_false(fake_send(k));
  fake *sock = rig_open(r, 6, 0);
  assert_int_equal(fake_fill(sock), 6);
  assert_true(fake_send(sock));
  assert_true(fake_send(sock));
  fake_write(sock, sock->fs);
  fake_write(sock, sock->fs);
  assert_true(fake_send(sock)); /* the socket's rule only: its queue is empty */
  rig_free(r);
}

/* An idle stream whose client holds its batches but has taken none asks
 * for more (an on-demand stream, a fan-out client reordering): it still
 * makes them, one at a time, each once the last is sent. Making none
 * would leave that client waiting for ever (test_fanout hung so). */
static void test_idle_stream_makes_one_at_a_time(void **state) {
  (void)state;
  rig *r = rig_timed(0, 64);
  fake *k = rig_open(r, 8, 0);
  assert_int_equal(fake_fill_to(k, 2), 2);
  fake_two_then_idle(k);
  assert_int_equal(fake_fill_to(k, 4), 1); /* asked for two more: one, while it holds it */
  assert_true(fake_send(k));
  fake_write(k, k->fs);
  assert_int_equal(fake_fill_to(k, 4), 1);
  rig_free(r);
}

/* An idle ring stream with two batches sent makes none it could not send;
 * when memory is wanted its unsent batches go and its free slots give their memory back
 * (the two it sent stay the client's). Reading again, it warms a cold
 * slot only while that fits max_memory, else the batch takes the socket. */
static void test_idle_ring_cools(void **state) {
  (void)state;
  rig *r = rig_timed(8 * MIB, 0);
  fake *a = rig_open_ops(r, 6, 8, &cool_ops);
  char err[128];
  assert_int_equal(fake_fill(a), 6);
  fake_two_then_idle(a);
  assert_int_equal(flow_make_room(r->f, 7 * MIB), 1);
  assert_int_equal(a->dropped, 4);
  assert_int_equal(a->cooled, 6); /* 8 slots, 2 sent */
  assert_int_equal(a->cold, 0xfc);
  assert_false(flow_may_schedule(a->fs, UINT64_MAX, 0)); /* idle, holding nothing, but two sent: none could go */
  assert_int_equal(flow_make_room(r->f, 7 * MIB), 1);
  assert_int_equal(a->cooled, 6); /* nothing twice */
  /* Its client reads again: a cold slot is warmed, room allowing. */
  assert_int_equal(flow_ack(a->fs, 1, err, sizeof err), 0);
  assert_int_equal(flow_release(a->fs, 0, err, sizeof err), 0);
  int slot;
  assert_int_equal(flow_schedule(a->fs, &slot), 2);
  assert_int_equal(slot, 0); /* a warm free slot first */
  assert_int_equal(flow_schedule(a->fs, &slot), 3);
  assert_int_equal(slot, 2);
  assert_int_equal(a->warmed, 1);
  r->max = MIB; /* now a slot's memory does not fit */
  assert_int_equal(flow_schedule(a->fs, &slot), 4);
  assert_int_equal(slot, -1);
  assert_int_equal(a->warmed, 1);
  rig_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_and_acks),      cmocka_unit_test(test_client_not_reading),
      cmocka_unit_test(test_window_within_the_share),      cmocka_unit_test(test_idle_client_keeps_its_share),
      cmocka_unit_test(test_shm_slots),            cmocka_unit_test(test_shares_and_one_batch),
      cmocka_unit_test(test_closed_stream_queued), cmocka_unit_test(test_shed_for_a_reader),
      cmocka_unit_test(test_shed_buffers_leave_the_pool),
      cmocka_unit_test(test_idle_stream_gives_way),        cmocka_unit_test(test_idle_follows_the_pace),
      cmocka_unit_test(test_ring_room_from_idle_streams),  cmocka_unit_test(test_ring_sends_two_ahead),
      cmocka_unit_test(test_idle_ring_cools),              cmocka_unit_test(test_idle_stream_makes_one_at_a_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
