/*
 * load_hostile.c -- clients that do the daemon no favours, beside the
 * well-behaved ones: streams that are never read, STATS_REQ floods whose
 * replies are never read, and sockets that never say anything. Each holds
 * its connections until the test ends, and opens them again after a
 * restart. They check nothing: the well-behaved clients' batches and the
 * daemon's memory are what they are there to put at risk.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "load.h"

enum { LOAD_FLOOD = 20000 /* STATS_REQ frames per flooding connection */ };

/* Hold fds (closed after) until the deadline or a restart. */
static void load_hold(load *l, int gen) {
  while (load_now() < l->deadline && atomic_load(&l->generation) == gen) itest_sleep_ms(50);
}

static int load_up(load *l) {
  int gen;
  while (((gen = atomic_load(&l->generation)) & 1) && load_now() < l->deadline) itest_sleep_ms(20);
  return gen;
}

/* A HELLO'd raw connection to the daemon, or -1. */
static int load_raw(load *l) {
  char addr[160];
  load_addr(l, 0, addr, sizeof addr);
  int fd = itest_raw_connect(addr);
  if (fd >= 0 && itest_raw_hello(fd) < 0) {
    close(fd);
    fd = -1;
  }
  if (fd >= 0) atomic_fetch_add(&l->hostile_conns, 1);
  return fd;
}

/* Raw connections, one after another until the test ends: each HELLO'd,
 * given to session, then held until the deadline or a restart. */
static void load_sessions(load_actor *a, void (*session)(load_actor *a, int fd, int gen)) {
  load *l = a->l;
  while (load_now() < l->deadline) {
    int gen = load_up(l), fd = load_raw(l);
    if (fd < 0) {
      itest_sleep_ms(100);
      continue;
    }
    session(a, fd, gen);
    load_hold(l, gen);
    close(fd);
  }
}

/* Opens a stream of big batches with a wide window, and never reads: with
 * a few of these, what is asked for is more than max_memory. */
static void load_nonreader_session(load_actor *a, int fd, int gen) {
  bfeed_stream_opts o;
  load_config_opts(a->id % LOAD_CONFIGS, &o);
  o.size = 224;
  o.batch = 16;
  o.window = 16;
  if (itest_raw_open(fd, 1, "load", &o) == 0) atomic_fetch_add(&a->l->nonreaders, 1);
}

void *load_nonreader_main(void *arg) {
  load_sessions(arg, load_nonreader_session);
  return NULL;
}

/* STATS_REQ for the daemon's report (stream 0), LOAD_FLOOD of them without
 * reading a reply; a daemon that stops reading is left waiting. */
static void load_flooder_session(load_actor *a, int fd, int gen) {
  load *l = a->l;
  uint8_t hdr[FRAME_HEADER_SIZE];
  frame_header h;
  frame_header_init(&h, FRAME_STATS_REQ, 0, NULL, 0);
  frame_header_encode(&h, hdr);
  for (int i = 0; i < LOAD_FLOOD && load_now() < l->deadline && atomic_load(&l->generation) == gen;) {
    ssize_t w = send(fd, hdr, sizeof hdr, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w == (ssize_t)sizeof hdr) {
      atomic_fetch_add(&l->stats_sent, 1);
      i++;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      itest_sleep_ms(10); /* the daemon is not reading us: fine */
    } else {
      break; /* a partial frame or a closed socket: stop here */
    }
  }
}

void *load_flooder_main(void *arg) {
  load_sessions(arg, load_flooder_session);
  return NULL;
}

/* Sockets that connect and never send a byte (not even HELLO). */
void *load_silent_main(void *arg) {
  load_actor *a = arg;
  load *l = a->l;
  enum { SILENT = 8 };
  while (load_now() < l->deadline) {
    int gen = load_up(l), fds[SILENT], n = 0;
    char addr[160];
    load_addr(l, a->id % 2, addr, sizeof addr);
    for (int i = 0; i < SILENT; i++)
      if ((fds[n] = itest_raw_connect(addr)) >= 0) n++;
    atomic_fetch_add(&l->hostile_conns, n);
    load_hold(l, gen);
    for (int i = 0; i < n; i++) close(fds[i]);
    if (!n) itest_sleep_ms(100);
  }
  return NULL;
}
