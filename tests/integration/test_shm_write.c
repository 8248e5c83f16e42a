/*
 * test_shm_write.c -- callers that write into their shared-memory batches
 * (issue 29; PROTOCOL.md "Shared memory": the client maps the ring
 * copy-on-write and drops a slot's private pages before it releases it).
 *
 *  - Through libbfeed on the real daemon: every tensor of every batch
 *    written through the C API (its const cast away), one batch held and
 *    written again while later ones come; each batch equals, byte for
 *    byte, the same stream's batch over the socket, though its slot held
 *    the garbage of an earlier batch. Before the fix the first write
 *    faulted (the ring was mapped read-only).
 *  - Against a daemon of the test's own that announces a ring whose slots
 *    are not page-aligned (as daemons before issue 29 did): libbfeed
 *    copies each batch out and releases its slot at once, so the caller
 *    may write into it and the slot may be written under it: the fake
 *    daemon sees the release before the caller lets go, rewrites the
 *    slot, and the held batch keeps its bytes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "suite.h"

/* Every byte of every tensor of b set to v, through the C API. */
static void write_batch(bfeed_batch *b, int v) {
  for (int i = 0; i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    assert_int_equal(bfeed_batch_tensor(b, i, &t), 0);
    memset((void *)(uintptr_t)t.data, v, t.nbytes);
  }
}

static void test_writes_never_reach_later_batches(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "shmw", 2, 0);
  bfeed_stream_opts o;
  suite_train_opts(&o, 11, 6);
  o.window = 2; /* 4 slots, each reused many times over 6 epochs (5 batches each) */
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.shm = 0;
  bfeed_client *c = suite_connect(d->unix_addr), *sc;
  bfeed_error err;
  SUITE_OK(bfeed_connect2(d->unix_addr, &co, &sc, &err), err);
  bfeed_stream *st = suite_open(c, "demo", &o), *ref = suite_open(sc, "demo", &o);
  bfeed_batch *held = NULL;
  int n = 0;
  for (;; n++) {
    bfeed_batch *b, *r;
    int rc = bfeed_stream_next(st, &b, &err), rr = bfeed_stream_next(ref, &r, &err);
    assert_int_equal(rc, rr);
    if (rc == BFEED_EEOF) break;
    SUITE_OK(rc, err);
    itest_rec got, want;
    assert_int_equal(itest_rec_from_batch(b, &got), 0);
    assert_int_equal(itest_rec_from_batch(r, &want), 0);
    if (!itest_rec_equal(&got, &want))
      fail_msg("batch %d (epoch %llu, index %llu) differs from the socket's: an earlier write shows through", n,
               (unsigned long long)bfeed_batch_epoch(b), (unsigned long long)bfeed_batch_index(b));
    itest_rec_free(&got);
    itest_rec_free(&want);
    bfeed_batch_release(r);
    write_batch(b, 0xa5);
    if (n % 5 == 0 && !held) {
      held = b; /* written again after later batches came, then let go */
    } else {
      bfeed_batch_release(b);
    }
    if (held && n % 5 == 3) {
      write_batch(held, 0x5a);
      bfeed_batch_release(held);
      held = NULL;
    }
  }
  bfeed_batch_release(held);
  assert_int_equal(n, 30);
  static const char *const names[] = {"shm_batches"};
  uint64_t v;
  SUITE_OK(itest_counters(st, names, &v, 1, &err), err);
  assert_true(v > 0); /* they did come through the ring */
  bfeed_stream_close(st);
  bfeed_stream_close(ref);
  bfeed_close(c);
  bfeed_close(sc);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* A daemon of the test's own, with 64-byte slots                      */

#define OLD_SLOT 4160 /* 4096 + 64: a multiple of 64, not of a page */
#define OLD_RAW 4064  /* index i64 [8] at 0, blob u8 [4000] at 64 */

typedef struct old_daemon {
  int listen_fd;
  char path[108];
  pthread_t thread;
  uint8_t *ring;       /* its own mapping, MAP_SHARED */
  int released0;       /* atomic: the client released batch 0 */
  int ok;              /* atomic: the thread ran to the end */
  char why[256];
} old_daemon;

static void old_fill(uint8_t *slot, uint64_t seq, int v) {
  memset(slot, 0, OLD_RAW);
  for (int i = 0; i < 8; i++) {
    int64_t x = (int64_t)(seq * 8 + (uint64_t)i);
    memcpy(slot + 8 * i, &x, 8);
  }
  memset(slot + 64, v, 4000);
}

/* The next frame from the client is of this type (its payload freed); its stream id in *stream. */
static int old_expect(int fd, int type, uint32_t *stream) {
  frame_header h;
  uint8_t *p;
  if (itest_raw_recv(fd, &h, &p) < 0) return -1;
  free(p);
  if (stream) *stream = h.stream;
  return h.type == type ? 0 : -1;
}

static void old_enc_hello_ok(wbuf *w, const void *m) { msg_hello_ok_encode(w, m); }
static void old_enc_open_ok(wbuf *w, const void *m) { msg_open_ok_encode(w, m); }
static void old_enc_u64(wbuf *w, const void *m) { msg_u64_encode(w, *(const uint64_t *)m); }

static int old_send_ring(int fd, uint32_t stream, int memfd) {
  msg_shm_ring r = {.slots = 2, .slot_size = OLD_SLOT, .size = 2 * OLD_SLOT};
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_shm_ring_encode(&w, &r);
  int rc = msg_finish(&w, at, FRAME_SHM_RING, stream);
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {w.data, 1};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &memfd, sizeof memfd);
  if (rc == 0 && sendmsg(fd, &mh, 0) != 1) rc = -1;
  if (rc == 0) rc = itest_raw_write(fd, w.data + 1, w.len - 1);
  wbuf_free(&w);
  return rc;
}

typedef struct old_batch {
  msg_batch m;
  uint32_t slot;
} old_batch;

static void old_enc_batch(wbuf *w, const void *p) {
  const old_batch *b = p;
  msg_batch_shm_encode(w, &b->m, b->slot);
}

static int old_send_batch(int fd, uint32_t stream, uint64_t seq, uint32_t slot) {
  old_batch b = {.m = {.index = seq, .seq = seq, .codec = BFEED_CODEC_NONE, .ntensors = 2, .raw_size = OLD_RAW},
                 .slot = slot};
  msg_tensor *t = b.m.t;
  strcpy(t[0].name, "index");
  t[0].dtype = BFEED_DTYPE_I64, t[0].ndim = 1, t[0].shape[0] = 8, t[0].offset = 0, t[0].nbytes = 64;
  strcpy(t[1].name, "blob");
  t[1].dtype = BFEED_DTYPE_U8, t[1].ndim = 1, t[1].shape[0] = 4000, t[1].offset = 64, t[1].nbytes = 4000;
  return itest_raw_send_msg(fd, FRAME_BATCH_SHM, stream, old_enc_batch, &b);
}

/* Read the client's frames until an ACK releasing seq (1), or a failure. */
static int old_await_release(int fd, uint64_t seq, char *why, size_t cap) {
  for (;;) {
    frame_header h;
    uint8_t *p;
    if (itest_raw_recv(fd, &h, &p) < 0)
      return itest_fail(why, cap, "no release of batch %llu came", (unsigned long long)seq);
    msg_ack a;
    char w[128];
    int rel = h.type == FRAME_ACK && msg_ack_decode(p, h.length, &a, w, sizeof w) == 0 && a.nreleased == 1 &&
              a.released[0] == seq;
    free(p);
    if (rel) return 1;
  }
}

static void *old_daemon_main(void *arg) {
  old_daemon *o = arg;
  char *why = o->why;
  size_t cap = sizeof o->why;
  int fd = accept(o->listen_fd, NULL, NULL), memfd = memfd_create("old-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  msg_hello_ok hok = {.version = 1, .max_frame = 1u << 20};
  strcpy(hok.server, "old-bfeedd");
  msg_open_ok ok = {.samples = 16, .batches_per_epoch = 2, .classes = 1}; /* features 0: before them */
  uint64_t total = 2;
  uint32_t id = 0;
  if (fd < 0 || memfd < 0 || ftruncate(memfd, 2 * OLD_SLOT) < 0 ||
      fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
      (o->ring = mmap(NULL, 2 * OLD_SLOT, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)) == MAP_FAILED) {
    itest_fail(why, cap, "the fake daemon could not start: %m");
    goto out;
  }
  if (old_expect(fd, FRAME_HELLO, NULL) < 0 || itest_raw_send_msg(fd, FRAME_HELLO_OK, 0, old_enc_hello_ok, &hok) < 0 ||
      old_expect(fd, FRAME_OPEN, &id) < 0 || itest_raw_send_msg(fd, FRAME_OPEN_OK, id, old_enc_open_ok, &ok) < 0 ||
      old_send_ring(fd, id, memfd) < 0) {
    itest_fail(why, cap, "handshake, OPEN or SHM_RING failed");
    goto out;
  }
  old_fill(o->ring, 0, 0x11);
  if (old_send_batch(fd, id, 0, 0) < 0 || old_await_release(fd, 0, why, cap) < 0) goto out;
  __atomic_store_n(&o->released0, 1, __ATOMIC_RELEASE);
  old_fill(o->ring, 1, 0x22); /* batch 1 where batch 0 was: the caller still holds batch 0 */
  if (old_send_batch(fd, id, 1, 0) < 0 || old_await_release(fd, 1, why, cap) < 0 ||
      itest_raw_send_msg(fd, FRAME_END, id, old_enc_u64, &total) < 0) {
    if (!why[0]) itest_fail(why, cap, "batch 1 or END could not be sent");
    goto out;
  }
  itest_raw_drain_to_eof(fd);
  __atomic_store_n(&o->ok, 1, __ATOMIC_RELEASE);
out:
  if (fd >= 0) close(fd);
  if (memfd >= 0) close(memfd);
  return NULL;
}

static int old_released0(void *arg) { return __atomic_load_n(&((old_daemon *)arg)->released0, __ATOMIC_ACQUIRE); }

/* The batch holds what old_fill wrote for seq with v, byte for byte. */
static void assert_old_batch(bfeed_batch *b, uint64_t seq, int v) {
  uint8_t want[OLD_RAW];
  old_fill(want, seq, v);
  bfeed_tensor t;
  assert_int_equal(bfeed_batch_find(b, "index", &t), 0);
  assert_memory_equal(t.data, want, 64);
  assert_int_equal(bfeed_batch_find(b, "blob", &t), 0);
  assert_memory_equal(t.data, want + 64, 4000);
}

static void test_unaligned_slots_are_copied(void **state) {
  (void)state;
  old_daemon o = {0};
  char dir[128];
  assert_int_equal(itest_tmpdir(dir, sizeof dir), 0);
  snprintf(o.path, sizeof o.path, "%s/old.sock", dir);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", o.path);
  o.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(o.listen_fd >= 0);
  assert_int_equal(bind(o.listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(o.listen_fd, 1), 0);
  assert_int_equal(pthread_create(&o.thread, NULL, old_daemon_main, &o), 0);
  char addr[160];
  snprintf(addr, sizeof addr, "unix:%s", o.path);
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.reconnect = 0;
  bfeed_client *c;
  bfeed_error err;
  SUITE_OK(bfeed_connect2(addr, &co, &c, &err), err);
  bfeed_stream_opts so;
  itest_opts(&so);
  so.epochs = 1;
  bfeed_stream *st = suite_open(c, "old", &so);
  bfeed_batch *b0 = suite_next(st);
  /* Copied out: the slot is released while the caller holds the batch. */
  int released = itest_poll(old_released0, &o, 10000, 5);
  if (!released) fail_msg("the client did not release slot 0 while it held batch 0 (%s)", o.why);
  bfeed_batch *b1 = suite_next(st);
  assert_old_batch(b0, 0, 0x11); /* its slot was written since */
  assert_old_batch(b1, 1, 0x22);
  write_batch(b0, 0x77);
  write_batch(b1, 0x77);
  bfeed_batch *end;
  assert_int_equal(bfeed_stream_next(st, &end, &err), BFEED_EEOF);
  bfeed_batch_release(b0);
  bfeed_batch_release(b1);
  bfeed_stream_close(st);
  bfeed_close(c);
  pthread_join(o.thread, NULL);
  close(o.listen_fd);
  if (o.ring && o.ring != MAP_FAILED) munmap(o.ring, 2 * OLD_SLOT);
  itest_rmtree(dir);
  if (!o.ok) fail_msg("the fake daemon: %s", o.why);
}

SUITE_MAIN_KILLING("shm_write", SUITE_KILLING(test_writes_never_reach_later_batches),
                   SUITE_KILLING(test_unaligned_slots_are_copied))
