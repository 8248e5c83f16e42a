/*
 * itest_util.h -- helpers for the integration tests (the test_*.c here):
 * a real bfeedd child process (itest_daemon.c), small datasets and an
 * ImageFolder oracle (itest_data.c), raw protocol sockets (itest_raw.c),
 * recorded streams (itest_run.c), and waiting and files (itest_util.c).
 *
 * Nothing here asserts: every helper returns 0 or a negative code (with a
 * message where one helps), so the tests decide what a failure means and
 * cmocka's non-local exits never leave a helper half-done.
 */
#ifndef BFEED_ITEST_UTIL_H
#define BFEED_ITEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfeed.h"
#include "frame.h"
#include "tlv.h"

/* ------------------------------------------------------------------ */
/* Messages, waiting, files (itest_util.c)                             */

/* printf into err[errlen]; returns -1, for "return itest_fail(...)". */
int itest_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void itest_sleep_ms(int ms);
/* The one wait-until loop: call done(arg) every step_ms until it returns
 * nonzero or timeout_ms have passed. Its last result, so 0 means it timed
 * out; done may stop the wait early with a negative value. */
int itest_poll(int (*done)(void *arg), void *arg, int timeout_ms, int step_ms);

/* Create a fresh folder under $TMPDIR (or /tmp); out gets its path. */
int itest_tmpdir(char *out, size_t cap);
/* Remove a folder and everything below it (symlinks are not followed). */
void itest_rmtree(const char *dir);
/* The whole file, NUL-terminated; the caller frees. NULL if unreadable. */
char *itest_read_file(const char *path, size_t *len);
int itest_write_file(const char *path, const void *data, size_t len);

/* ------------------------------------------------------------------ */
/* The daemon (itest_daemon.c)                                         */

typedef struct itest_daemon_opts {
  const char *dir;          /* where its socket and log go */
  const char *name;         /* tells several daemons in one dir apart */
  const char *datasets[4];  /* "NAME=DIR", up to 4, NULL-terminated */
  int workers;              /* --workers */
  int tcp;                  /* also listen on a free 127.0.0.1 port */
  const char *const *args;  /* more flags, NULL-terminated (up to 16), or NULL */
  const char *const *env;   /* "NAME=VALUE" added to the environment, NULL-terminated (up to 8), or NULL */
  const char *tcp_addr;     /* with tcp: this "127.0.0.1:PORT" instead (a restart) */
} itest_daemon_opts;

typedef struct itest_daemon {
  pid_t pid;             /* 0 when not running */
  char unix_addr[128];   /* "unix:/tmp/.../NAME.sock" */
  char tcp_addr[32];     /* "127.0.0.1:PORT", or "" */
  char log_path[256];    /* its stderr and stdout */
  int status;            /* waitpid status once it has exited (-1 before) */
} itest_daemon;

/* Spawn bfeedd (the binary CMake built) and wait until every listener
 * accepts connections. On failure the message quotes the daemon's log. */
int itest_daemon_start(itest_daemon *d, const itest_daemon_opts *o, char *err, size_t errlen);
/* SIGTERM, then wait up to timeout_ms for the exit. 0 when it exited with
 * status 0 in time; otherwise -1 with the reason (it is killed then). */
int itest_daemon_stop(itest_daemon *d, int timeout_ms, char *err, size_t errlen);
/* Wait up to timeout_ms for the daemon to exit by itself (after a signal
 * sent elsewhere); same result as itest_daemon_stop. */
int itest_daemon_wait(itest_daemon *d, int timeout_ms, char *err, size_t errlen);
/* SIGKILL and reap, if still running: cleanup after a failed test. */
void itest_daemon_kill(itest_daemon *d);
/* 1 while the process has not exited; once it has, it is reaped (pid 0,
 * status set). */
int itest_daemon_alive(itest_daemon *d);
/* Its resident memory in KiB (VmRSS), or -1. */
long itest_daemon_rss_kib(const itest_daemon *d);
/* The most resident memory it has had, in KiB (VmHWM), or -1. */
long itest_daemon_peak_kib(const itest_daemon *d);
/* 1 if its log holds needle. */
int itest_daemon_log_has(const itest_daemon *d, const char *needle);

/* ------------------------------------------------------------------ */
/* Datasets (itest_data.c)                                             */

/* make_demo's train split only: per_class JPEGs in each of its 8 classes,
 * sides 32..64 so that decoding is quick. */
int itest_make_dataset(const char *dir, int per_class, char *err, size_t errlen);

/* What torchvision's ImageFolder would make of a folder, worked out here
 * independently of the daemon: classes are the sorted sub-folder names,
 * samples the .jpg/.jpeg files of each class in sorted order (this suite
 * only builds flat class folders). */
typedef struct itest_folder {
  size_t n, nclasses;
  int32_t *labels; /* n class indices */
  char **names;    /* n "class/file" paths */
} itest_folder;
int itest_folder_scan(const char *root, itest_folder *f);
void itest_folder_free(itest_folder *f);
/* Sample index of "class/file", or -1. */
long itest_folder_find(const itest_folder *f, const char *name);

/* ------------------------------------------------------------------ */
/* Raw protocol sockets, for clients that misbehave on purpose         */
/* (itest_raw.c)                                                      */

/* Connect without any handshake. Reads time out after 10 s, so a test
 * that waits for a frame the daemon never sends fails instead of hanging.
 * Returns the fd or -1. */
int itest_raw_connect(const char *addr);
int itest_raw_write(int fd, const void *p, size_t n);
/* Send one well-formed frame. */
int itest_raw_send(int fd, int type, uint32_t stream, const void *payload, uint32_t len);
/* Send a frame whose payload enc (one of proto's encoders) writes from m. */
int itest_raw_send_msg(int fd, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *m);
/* Read one frame and check its checksum; *payload (freed by the caller) is
 * NULL for an empty one. BFEED_ECLOSED at end of file, BFEED_EIO on a
 * timeout or socket error, or frame_header_decode's code. */
int itest_raw_recv(int fd, frame_header *h, uint8_t **payload);
/* HELLO, and expect HELLO_OK. */
int itest_raw_hello(int fd);
/* HELLO with this agent and token (NULL: none) and read the answer: 0 for
 * HELLO_OK; for ERROR, its code with msg[cap] filled in. */
int itest_raw_hello_as(int fd, const char *agent, const char *token, char *msg, size_t cap);
/* Send OPEN for stream id (options are not checked, on purpose). */
int itest_raw_open(int fd, uint32_t id, const char *dataset, const bfeed_stream_opts *o);
/* Read frames until an ERROR one; *stream, *code and msg[cap] get its
 * contents. Frames before it are skipped. BFEED_ECLOSED if none came. */
int itest_raw_expect_error(int fd, uint32_t *stream, int *code, char *msg, size_t cap);
/* Read frames until one of type; skips others (batches of a window). */
int itest_raw_expect(int fd, int type, frame_header *h, uint8_t **payload);
/* Read until the daemon closes the connection: 0 when it does, BFEED_EIO
 * if it is still open after the read timeout. */
int itest_raw_drain_to_eof(int fd);

/* ------------------------------------------------------------------ */
/* Recorded streams (itest_run.c)                                      */

/* One batch, copied out of the client library: a canonical byte image of
 * every tensor (name, dtype, shape, data, in order) so that two batches are
 * equal exactly when their blobs are, plus the label and index columns. */
typedef struct itest_rec {
  uint64_t epoch, index;
  uint32_t count;   /* samples */
  uint8_t *blob;
  size_t blob_len;
  int64_t *idx;
  int32_t *labels;
} itest_rec;

typedef struct itest_run {
  size_t n, cap;
  itest_rec *b;
} itest_run;

/* Copy a batch into rec. BFEED_EPROTO if it lacks the label/index tensors
 * or they are not i32/i64 vectors of the batch size. */
int itest_rec_from_batch(const bfeed_batch *b, itest_rec *rec);
int itest_rec_equal(const itest_rec *a, const itest_rec *b);
void itest_rec_free(itest_rec *rec);
/* The data of the tensor called name in rec (*nbytes its size), or NULL. */
const uint8_t *itest_rec_data(const itest_rec *rec, const char *name, size_t *nbytes);
/* Take up to max batches from s (all of them when max is 0) into run.
 * Returns 0 when max were taken, BFEED_EEOF at the end of the stream, or
 * the error (err filled in). */
int itest_collect(bfeed_stream *s, size_t max, itest_run *run, bfeed_error *err);
/* Connect, open, collect, close. */
int itest_fetch(const char *addr, const char *dataset, const bfeed_stream_opts *o, size_t max,
                itest_run *run, bfeed_error *err);
void itest_run_free(itest_run *run);
/* Index of the first batch where the runs differ, or -1 when they are the
 * same length and equal. */
long itest_run_diff(const itest_run *a, const itest_run *b);

/* Stream counters by name, all from one bfeed_stream_stats snapshot (two
 * separate requests would see the daemon at two moments). */
int itest_counters(bfeed_stream *s, const char *const *names, uint64_t *values, size_t n, bfeed_error *err);

/* One counter of a daemon report (bfeed_daemon_stats): the first group of
 * `kind` whose id starts with `id` ("" for any). UINT64_MAX when absent. */
uint64_t itest_report_counter(const bfeed_stat_group *g, size_t n, const char *kind, const char *id,
                              const char *name);

/* Options most tests start from: batch 8, size 32, the rest default. */
void itest_opts(bfeed_stream_opts *o);

#endif
