/*
 * test_shm.c -- shared-memory streams on the real daemon (suite.h;
 * PROTOCOL.md "Shared memory").
 *
 * The oracle is the same stream over the socket: over raw frames, every
 * BATCH_SHM's slot holds byte for byte the data of the socket's BATCH,
 * for every batch of an epoch, while the client holds batches (a slot it
 * has not released is never written); a client that releases a batch it
 * was never sent is cut off (EPROTO, as an ACK beyond what was sent).
 * Slots are whole pages (clients drop a slot's pages they wrote).
 * Through libbfeed, an shm stream equals a socket stream batch for batch,
 * leaves no descriptor behind, and its batches outlive the stream and the
 * client.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "suite.h"

/* Descriptors open in this process now. */
static int shm_fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* opendir's own */
}

/* SHM_RING's frame with the memfd that rides on its first byte. */
static void shm_recv_ring(int fd, uint32_t stream, msg_shm_ring *ring, int *memfd) {
  uint8_t hdr[FRAME_HEADER_SIZE];
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  struct iovec iov = {hdr, sizeof hdr};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  assert_int_equal(recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC), (ssize_t)sizeof hdr);
  struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  assert_non_null(cm);
  assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
  memcpy(memfd, CMSG_DATA(cm), sizeof *memfd);
  frame_header h;
  char why[256] = "";
  assert_int_equal(frame_header_decode(hdr, FRAME_MAX_CONTROL, &h, why, sizeof why), 0);
  assert_int_equal(h.type, FRAME_SHM_RING);
  assert_int_equal(h.stream, stream);
  uint8_t p[64];
  assert_true(h.length <= sizeof p);
  assert_int_equal(recv(fd, p, h.length, MSG_WAITALL), (ssize_t)h.length);
  assert_int_equal(frame_verify(&h, p), 0);
  assert_int_equal(msg_shm_ring_decode(p, h.length, ring, why, sizeof why), 0);
}

/* A raw client on an shm stream: hello, OPEN with transport shm, OPEN_OK,
 * SHM_RING; the ring mapped read-only. */
static int shm_raw_open(const char *addr, const bfeed_stream_opts *o, msg_shm_ring *ring, const uint8_t **base,
                        msg_open_ok *ok) {
  bfeed_stream_opts so = *o;
  so.transport = BFEED_TRANSPORT_SHM;
  int fd = suite_raw_open(addr, &so);
  frame_header h;
  uint8_t *p;
  char why[256] = "";
  assert_int_equal(itest_raw_recv(fd, &h, &p), 0);
  assert_int_equal(h.type, FRAME_OPEN_OK);
  assert_int_equal(msg_open_ok_decode(p, h.length, ok, why, sizeof why), 0);
  free(p);
  int memfd;
  shm_recv_ring(fd, 1, ring, &memfd);
  assert_int_equal(ring->slots, o->window + 2);
  assert_int_equal(ring->slot_size % (uint64_t)sysconf(_SC_PAGESIZE), 0); /* each slot on pages of its own */
  void *m = mmap(NULL, ring->size, PROT_READ, MAP_SHARED, memfd, 0);
  assert_true(m != MAP_FAILED);
  close(memfd);
  *base = m;
  return fd;
}

static void shm_ack(int fd, uint64_t consumed, uint64_t released, int nreleased) {
  msg_ack a = {.consumed = consumed, .nreleased = (uint32_t)nreleased, .released = {released}};
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_ack_encode(&w, &a);
  assert_int_equal(msg_finish(&w, at, FRAME_ACK, 1), 0);
  assert_int_equal(itest_raw_write(fd, w.data, w.len), 0);
  wbuf_free(&w);
}

/* The next batch's tensors on fd: from its slot (BATCH_SHM, *slot set) or
 * its payload (BATCH, *slot -1), into m; 0 at END. */
static int shm_next(int fd, const msg_shm_ring *ring, const uint8_t *base, msg_batch *m, int *slot, uint8_t **p) {
  frame_header h;
  char why[256] = "";
  for (;;) {
    assert_int_equal(itest_raw_recv(fd, &h, p), 0);
    if (h.type == FRAME_END) {
      free(*p);
      return 0;
    }
    if (h.type == FRAME_BATCH) {
      assert_int_equal(msg_batch_decode(*p, h.length, FRAME_MAX_PAYLOAD, m, why, sizeof why), 0);
      *slot = -1;
      return 1;
    }
    if (h.type == FRAME_BATCH_SHM) {
      uint32_t s;
      assert_int_equal(msg_batch_shm_decode(*p, h.length, ring, m, &s, why, sizeof why), 0);
      m->data = base + (uint64_t)s * ring->slot_size;
      m->data_size = m->raw_size;
      *slot = (int)s;
      return 1;
    }
    free(*p);
  }
}

#define SHM_HOLD 3 /* batches the raw client keeps before releasing the oldest */

/* Every batch of an epoch through the ring equals the socket's, byte for
 * byte, while the client holds SHM_HOLD batches: no slot it holds is
 * written, and with every slot held a batch comes over the socket. */
static void shm_equals_socket(const char *addr, const bfeed_stream_opts *o) {
  msg_shm_ring ring;
  const uint8_t *base;
  msg_open_ok ok;
  int a = shm_raw_open(addr, o, &ring, &base, &ok), b = suite_raw_open(addr, o);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_expect(b, FRAME_OPEN_OK, &h, &p), 0);
  free(p);
  uint64_t n = 0, held_seq[SHM_HOLD + 1], nheld = 0, in_shm = 0;
  int held_slot[SHM_HOLD + 1];
  for (;;) {
    msg_batch ms, mb;
    int slot;
    uint8_t *pa, *pb;
    int more = shm_next(a, &ring, base, &ms, &slot, &pa);
    assert_int_equal(shm_next(b, &ring, base, &mb, &(int){0}, &pb), more);
    if (!more) break;
    for (uint64_t k = 0; k < nheld; k++)
      if (slot >= 0 && held_slot[k] == slot) fail_msg("batch %llu written into slot %d, held by batch %llu",
                                                      (unsigned long long)ms.seq, slot, (unsigned long long)held_seq[k]);
    assert_int_equal(ms.seq, n);
    assert_int_equal(ms.epoch, mb.epoch);
    assert_int_equal(ms.index, mb.index);
    assert_int_equal(ms.ntensors, mb.ntensors);
    for (uint32_t t = 0; t < ms.ntensors; t++) {
      assert_string_equal(ms.t[t].name, mb.t[t].name);
      assert_int_equal(ms.t[t].dtype, mb.t[t].dtype);
      assert_int_equal(ms.t[t].ndim, mb.t[t].ndim);
      assert_memory_equal(ms.t[t].shape, mb.t[t].shape, sizeof ms.t[t].shape[0] * ms.t[t].ndim);
      assert_int_equal(ms.t[t].offset, mb.t[t].offset);
      assert_int_equal(ms.t[t].nbytes, mb.t[t].nbytes);
    }
    assert_int_equal(ms.raw_size, mb.raw_size);
    assert_memory_equal(ms.data, mb.data, ms.raw_size);
    free(pa);
    free(pb);
    n++;
    in_shm += slot >= 0;
    shm_ack(b, n, 0, 0);
    if (slot >= 0) held_seq[nheld] = ms.seq, held_slot[nheld++] = slot;
    shm_ack(a, n, 0, 0);
    if (nheld > SHM_HOLD) { /* release the oldest */
      shm_ack(a, n, held_seq[0], 1);
      memmove(held_seq, held_seq + 1, --nheld * sizeof *held_seq);
      memmove(held_slot, held_slot + 1, nheld * sizeof *held_slot);
    }
  }
  assert_int_equal(n, ok.batches_per_epoch);
  assert_true(in_shm > 0);
  munmap((void *)base, ring.size);
  close(a);
  close(b);
}

/* A daemon for the test, and train options of seed `seed` for one epoch. */
static itest_daemon *shm_daemon(void **state, int workers, uint64_t seed, bfeed_stream_opts *o) {
  suite *s = *state;
  suite_train_opts(o, seed, 1);
  return suite_start(s, 0, "shm", workers, 0);
}

static void test_raw_shm_equals_socket(void **state) {
  bfeed_stream_opts o;
  itest_daemon *d = shm_daemon(state, 2, 7, &o);
  o.window = 2;
  shm_equals_socket(d->unix_addr, &o);
  suite_eval_opts(&o, 1);
  o.layout = BFEED_LAYOUT_NHWC;
  o.window = 4;
  shm_equals_socket(d->unix_addr, &o);
}

/* Releasing a batch that holds no slot is a protocol error. */
static void test_release_beyond_what_was_sent(void **state) {
  bfeed_stream_opts o;
  itest_daemon *d = shm_daemon(state, 1, 1, &o);
  o.window = 1;
  msg_shm_ring ring;
  const uint8_t *base;
  msg_open_ok ok;
  int fd = shm_raw_open(d->unix_addr, &o, &ring, &base, &ok);
  msg_batch m;
  int slot;
  uint8_t *p;
  assert_int_equal(shm_next(fd, &ring, base, &m, &slot, &p), 1);
  free(p);
  shm_ack(fd, 1, 5, 1); /* batch 5 was never sent */
  uint32_t stream;
  int code;
  char msg[MSG_ERROR_MAX];
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(code, BFEED_EPROTO);
  assert_int_equal(stream, 0);
  munmap((void *)base, ring.size);
  close(fd);
}

/* Through libbfeed: the same batches as the socket, counters that say
 * which way they came, batches valid after their stream and client are
 * closed, and no descriptor left. */
static void test_libbfeed_shm(void **state) {
  bfeed_stream_opts o;
  itest_daemon *d = shm_daemon(state, 2, 3, &o);
  o.codec = BFEED_CODEC_ZSTD; /* a shared-memory stream carries it raw: the same tensors */
  itest_run shm = {0}, sock = {0};
  int fds0 = shm_fd_count();
  suite_fetch(d->unix_addr, "demo", &o, 0, &shm);
  assert_int_equal(setenv("BFEED_SHM", "0", 1), 0);
  suite_fetch(d->unix_addr, "demo", &o, 0, &sock);
  unsetenv("BFEED_SHM");
  suite_assert_runs_equal(&shm, &sock);
  itest_run_free(&shm);
  itest_run_free(&sock);

  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  bfeed_batch *held[2];
  itest_rec want[2];
  for (int i = 0; i < 2; i++) {
    held[i] = suite_next(st);
    assert_int_equal(itest_rec_from_batch(held[i], &want[i]), 0);
  }
  static const char *const names[] = {"kernel_copy_bytes", "shm_batches"};
  uint64_t v[2];
  bfeed_error err;
  SUITE_OK(itest_counters(st, names, v, 2, &err), err);
  assert_int_equal(v[0], 0);
  assert_true(v[1] >= 2);
  bfeed_stream_close(st);
  bfeed_close(c);
  assert_true(shm_fd_count() == fds0); /* the mapping stays, its descriptor does not */
  for (int i = 0; i < 2; i++) {
    itest_rec got;
    assert_int_equal(itest_rec_from_batch(held[i], &got), 0);
    assert_true(itest_rec_equal(&got, &want[i]));
    itest_rec_free(&got);
    itest_rec_free(&want[i]);
    bfeed_batch_release(held[i]);
  }
  assert_int_equal(shm_fd_count(), fds0);
}

SUITE_MAIN_KILLING("shm", SUITE_KILLING(test_raw_shm_equals_socket), SUITE_KILLING(test_release_beyond_what_was_sent),
                   SUITE_KILLING(test_libbfeed_shm))
