/* itest_util.c -- see itest_util.h */
#define _GNU_SOURCE /* nftw, which glibc hides behind X/Open */
#include "itest_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "make_demo.h"
#include "msg.h"

#ifndef ITEST_BFEEDD
#error "ITEST_BFEEDD must name the bfeedd binary (set by tests/integration.cmake)"
#endif

extern char **environ;

#define ITEST_START_MS 10000 /* a daemon that is not up by then is broken */
#define ITEST_READ_TIMEOUT_S 10

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* ------------------------------------------------------------------ */
/* Files                                                               */

int itest_tmpdir(char *out, size_t cap) {
  const char *base = getenv("TMPDIR");
  /* Unix socket paths must fit sun_path (108 bytes), so a deep TMPDIR is
   * not used. */
  if (!base || !*base || strlen(base) > 60) base = "/tmp";
  if ((size_t)snprintf(out, cap, "%s/bfeed-itest-XXXXXX", base) >= cap) return -1;
  return mkdtemp(out) ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void itest_rmtree(const char *dir) {
  if (dir && *dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *itest_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break; /* end of file (or an error, checked below) */
    char *b = realloc(buf, cap * 2);
    if (!b) free(buf);
    buf = b;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

int itest_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, len, f);
  return fclose(f) == 0 && w == len ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* The daemon                                                          */

/* A port nobody listens on now. Another process could take it before the
 * daemon binds; on a test machine that is rare, and the start then fails
 * loudly rather than talking to the wrong server. */
static int free_tcp_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
    port = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

static int accepts(const char *addr) {
  int fd = itest_raw_connect(addr);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

/* Exit status decoded into words, for messages. */
static void describe_status(int status, char *out, size_t cap) {
  if (WIFEXITED(status)) snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
  else snprintf(out, cap, "stopped (status 0x%x)", status);
}

static void log_tail(const itest_daemon *d, char *out, size_t cap) {
  size_t len;
  char *log = itest_read_file(d->log_path, &len);
  snprintf(out, cap, "%s", log ? (len > 600 ? log + len - 600 : log) : "(no log)");
  free(log);
}

int itest_daemon_start(itest_daemon *d, const itest_daemon_opts *o, char *err, size_t errlen) {
  char sock[200], listen_tcp[48], workers[16];
  char *argv[24];
  int argc = 0;
  memset(d, 0, sizeof *d);
  snprintf(sock, sizeof sock, "%s/%s.sock", o->dir, o->name);
  if (strlen(sock) >= sizeof ((struct sockaddr_un *)0)->sun_path)
    return fail(err, errlen, "socket path %s is too long", sock);
  snprintf(d->unix_addr, sizeof d->unix_addr, "unix:%s", sock);
  snprintf(d->log_path, sizeof d->log_path, "%s/%s.log", o->dir, o->name);
  snprintf(workers, sizeof workers, "%d", o->workers > 0 ? o->workers : 1);
  argv[argc++] = ITEST_BFEEDD;
  argv[argc++] = "--listen";
  argv[argc++] = d->unix_addr;
  if (o->tcp) {
    int port = free_tcp_port();
    if (port < 0) return fail(err, errlen, "no free TCP port: %s", strerror(errno));
    snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", port);
    snprintf(listen_tcp, sizeof listen_tcp, "%s", d->tcp_addr);
    argv[argc++] = "--listen";
    argv[argc++] = listen_tcp;
  }
  for (int i = 0; i < 4 && o->datasets[i]; i++) {
    argv[argc++] = "--dataset";
    argv[argc++] = (char *)o->datasets[i];
  }
  argv[argc++] = "--workers";
  argv[argc++] = workers;
  argv[argc] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, d->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  int rc = posix_spawn(&pid, ITEST_BFEEDD, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return fail(err, errlen, "cannot start %s: %s", ITEST_BFEEDD, strerror(rc));
  d->pid = pid;

  for (int waited = 0; waited < ITEST_START_MS; waited += 10) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      char how[64], tail[640];
      d->pid = 0;
      describe_status(status, how, sizeof how);
      log_tail(d, tail, sizeof tail);
      return fail(err, errlen, "bfeedd %s before it accepted connections; log:\n%s", how, tail);
    }
    if (accepts(d->unix_addr) && (!o->tcp || accepts(d->tcp_addr))) return 0;
    sleep_ms(10);
  }
  itest_daemon_kill(d);
  return fail(err, errlen, "bfeedd did not accept connections within %d ms", ITEST_START_MS);
}

int itest_daemon_alive(itest_daemon *d) {
  int status;
  return d->pid > 0 && waitpid(d->pid, &status, WNOHANG) == 0;
}

int itest_daemon_wait(itest_daemon *d, int timeout_ms, char *err, size_t errlen) {
  if (d->pid <= 0) return fail(err, errlen, "bfeedd is not running (already reaped)");
  for (int waited = 0;; waited += 5) {
    int status;
    pid_t r = waitpid(d->pid, &status, WNOHANG);
    if (r == d->pid) {
      d->pid = 0;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
      char how[64], tail[640];
      describe_status(status, how, sizeof how);
      log_tail(d, tail, sizeof tail);
      return fail(err, errlen, "bfeedd %s; log:\n%s", how, tail);
    }
    if (r < 0) {
      d->pid = 0;
      return fail(err, errlen, "waitpid: %s", strerror(errno));
    }
    if (waited >= timeout_ms) break;
    sleep_ms(5);
  }
  itest_daemon_kill(d);
  return fail(err, errlen, "bfeedd did not exit within %d ms (killed)", timeout_ms);
}

int itest_daemon_stop(itest_daemon *d, int timeout_ms, char *err, size_t errlen) {
  if (d->pid <= 0) return fail(err, errlen, "bfeedd is not running");
  kill(d->pid, SIGTERM);
  return itest_daemon_wait(d, timeout_ms, err, errlen);
}

void itest_daemon_kill(itest_daemon *d) {
  if (d->pid <= 0) return;
  kill(d->pid, SIGKILL);
  waitpid(d->pid, NULL, 0);
  d->pid = 0;
}

/* ------------------------------------------------------------------ */
/* Datasets                                                            */

int itest_make_dataset(const char *dir, int per_class, char *err, size_t errlen) {
  make_demo_opts o;
  make_demo_opts_init(&o);
  o.train_per_class = per_class;
  o.val_per_class = 0;
  o.min_side = 32;
  o.max_side = 64;
  char path[512];
  snprintf(path, sizeof path, "%s/train", dir);
  if (make_demo(dir, &o, NULL, err, errlen) < 0) return -1;
  /* make_demo writes DIR/train and DIR/val; the tests serve DIR, so the
   * train split is moved up and the empty val folder removed. */
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s.train", dir);
  if (rename(path, tmp) < 0) return fail(err, errlen, "rename %s: %s", path, strerror(errno));
  itest_rmtree(dir);
  if (rename(tmp, dir) < 0) return fail(err, errlen, "rename %s: %s", tmp, strerror(errno));
  return 0;
}

static int is_jpeg(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int no_dot(const struct dirent *e) { return e->d_name[0] != '.'; }

static int by_bytes(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

int itest_folder_scan(const char *root, itest_folder *f) {
  struct dirent **cls;
  memset(f, 0, sizeof *f);
  int nc = scandir(root, &cls, no_dot, by_bytes);
  if (nc < 0) return -1;
  int rc = 0;
  for (int c = 0; c < nc; c++) {
    char dir[1024];
    struct dirent **files;
    snprintf(dir, sizeof dir, "%s/%s", root, cls[c]->d_name);
    int nf = scandir(dir, &files, no_dot, by_bytes);
    if (nf < 0) {
      free(cls[c]);
      continue; /* a plain file at the top: not a class */
    }
    for (int i = 0; i < nf; i++) {
      if (rc == 0 && is_jpeg(files[i]->d_name)) {
        char **names = realloc(f->names, (f->n + 1) * sizeof *names);
        int32_t *labels = realloc(f->labels, (f->n + 1) * sizeof *labels);
        if (names) f->names = names;
        if (labels) f->labels = labels;
        size_t len = strlen(cls[c]->d_name) + strlen(files[i]->d_name) + 2;
        char *name = names && labels ? malloc(len) : NULL;
        if (!name) {
          rc = -1;
        } else {
          snprintf(name, len, "%s/%s", cls[c]->d_name, files[i]->d_name);
          f->names[f->n] = name;
          f->labels[f->n++] = (int32_t)f->nclasses;
        }
      }
      free(files[i]);
    }
    free(files);
    f->nclasses++;
    free(cls[c]);
  }
  free(cls);
  if (rc < 0) itest_folder_free(f);
  return rc;
}

void itest_folder_free(itest_folder *f) {
  for (size_t i = 0; i < f->n; i++) free(f->names[i]);
  free(f->names);
  free(f->labels);
  memset(f, 0, sizeof *f);
}

long itest_folder_find(const itest_folder *f, const char *name) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->names[i], name) == 0) return (long)i;
  return -1;
}

/* ------------------------------------------------------------------ */
/* Raw sockets                                                         */

int itest_raw_connect(const char *addr) {
  addr_spec a;
  char why[128];
  if (addr_parse(addr, &a, why, sizeof why) < 0) return -1;
  int fd;
  if (a.kind == ADDR_UNIX) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a.path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      close(fd);
      fd = -1;
    }
  } else {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(a.port)};
    /* The suite only listens on the IPv4 loopback. */
    if (strcmp(a.host, "127.0.0.1") != 0) return -1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      close(fd);
      fd = -1;
    }
  }
  if (fd >= 0) {
    struct timeval tv = {ITEST_READ_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  return fd;
}

int itest_raw_write(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return BFEED_EIO;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 0, BFEED_ECLOSED at end of file before n bytes, BFEED_EIO otherwise. */
static int raw_read(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return BFEED_ECLOSED;
    if (r < 0) return errno == ECONNRESET ? BFEED_ECLOSED : BFEED_EIO;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int itest_raw_send(int fd, int type, uint32_t stream, const void *payload, uint32_t len) {
  uint8_t hdr[FRAME_HEADER_SIZE];
  frame_header h;
  frame_header_init(&h, type, stream, payload, len);
  frame_header_encode(&h, hdr);
  int rc = itest_raw_write(fd, hdr, sizeof hdr);
  return rc == 0 && len ? itest_raw_write(fd, payload, len) : rc;
}

int itest_raw_recv(int fd, frame_header *h, uint8_t **payload) {
  uint8_t hdr[FRAME_HEADER_SIZE];
  *payload = NULL;
  int rc = raw_read(fd, hdr, sizeof hdr);
  if (rc < 0) return rc;
  if ((rc = frame_header_decode(hdr, FRAME_MAX_PAYLOAD, h, NULL)) < 0) return rc;
  if (h->length == 0) return frame_verify(h, "");
  uint8_t *p = malloc(h->length);
  if (!p) return BFEED_ENOMEM;
  if ((rc = raw_read(fd, p, h->length)) == 0) rc = frame_verify(h, p);
  if (rc < 0) {
    free(p);
    return rc;
  }
  *payload = p;
  return 0;
}

/* Send a frame whose payload is built by one of proto's encoders. */
static int raw_send_msg(int fd, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *m) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  enc(&w, m);
  int rc = msg_finish(&w, at, type, stream);
  if (rc == 0) rc = itest_raw_write(fd, w.data, w.len);
  wbuf_free(&w);
  return rc;
}

static void enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }
static void enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

int itest_raw_hello(int fd) {
  msg_hello m = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(m.agent, sizeof m.agent, "bfeed-itest-raw");
  int rc = raw_send_msg(fd, FRAME_HELLO, 0, enc_hello, &m);
  frame_header h;
  uint8_t *p;
  if (rc == 0) rc = itest_raw_recv(fd, &h, &p);
  if (rc < 0) return rc;
  msg_hello_ok ok;
  const char *why;
  if (h.type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h.length, &ok, &why) < 0) rc = BFEED_EPROTO;
  free(p);
  return rc;
}

int itest_raw_open(int fd, uint32_t id, const char *dataset, const bfeed_stream_opts *o) {
  msg_open m;
  memset(&m, 0, sizeof m);
  snprintf(m.dataset, sizeof m.dataset, "%s", dataset);
  m.opts = *o;
  return raw_send_msg(fd, FRAME_OPEN, id, enc_open, &m);
}

int itest_raw_expect(int fd, int type, frame_header *h, uint8_t **payload) {
  for (;;) {
    int rc = itest_raw_recv(fd, h, payload);
    if (rc < 0 || h->type == type) return rc;
    free(*payload);
    *payload = NULL;
  }
}

int itest_raw_expect_error(int fd, uint32_t *stream, int *code, char *msg, size_t cap) {
  frame_header h;
  uint8_t *p;
  int rc = itest_raw_expect(fd, FRAME_ERROR, &h, &p);
  if (rc < 0) return rc;
  msg_error e;
  const char *why;
  rc = msg_error_decode(p, h.length, &e, &why);
  free(p);
  if (rc < 0) return rc;
  *stream = h.stream;
  *code = e.code;
  snprintf(msg, cap, "%s", e.message);
  return 0;
}

int itest_raw_drain_to_eof(int fd) {
  uint8_t buf[65536];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 || (r < 0 && errno == ECONNRESET)) return 0;
    if (r < 0) return BFEED_EIO;
  }
}

/* ------------------------------------------------------------------ */
/* Recorded streams                                                    */

static int blob_put(uint8_t **blob, size_t *len, size_t *cap, const void *p, size_t n) {
  if (*len + n > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + n) c *= 2;
    uint8_t *b = realloc(*blob, c);
    if (!b) return -1;
    *blob = b;
    *cap = c;
  }
  memcpy(*blob + *len, p, n);
  *len += n;
  return 0;
}

/* The blob holds, per tensor: its name with NUL, this header, its data. */
typedef struct rec_head {
  uint64_t dtype, ndim, nbytes;
  uint64_t shape[BFEED_MAX_DIMS];
} rec_head;

int itest_rec_from_batch(const bfeed_batch *b, itest_rec *rec) {
  bfeed_tensor lab, ix;
  memset(rec, 0, sizeof *rec);
  if (bfeed_batch_find(b, "label", &lab) < 0 || bfeed_batch_find(b, "index", &ix) < 0) return BFEED_EPROTO;
  if (lab.dtype != BFEED_DTYPE_I32 || ix.dtype != BFEED_DTYPE_I64 || lab.ndim != 1 || ix.ndim != 1 ||
      lab.shape[0] != ix.shape[0] || lab.nbytes != (size_t)lab.shape[0] * 4 || ix.nbytes != (size_t)ix.shape[0] * 8)
    return BFEED_EPROTO;
  rec->epoch = bfeed_batch_epoch(b);
  rec->index = bfeed_batch_index(b);
  rec->count = (uint32_t)lab.shape[0];
  rec->labels = malloc(lab.nbytes + 1);
  rec->idx = malloc(ix.nbytes + 1);
  size_t cap = 0;
  int rc = rec->labels && rec->idx ? 0 : -1;
  if (rc == 0) {
    memcpy(rec->labels, lab.data, lab.nbytes);
    memcpy(rec->idx, ix.data, ix.nbytes);
  }
  for (int i = 0; rc == 0 && i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    rec_head head;
    memset(&head, 0, sizeof head);
    bfeed_batch_tensor(b, i, &t);
    head.dtype = (uint64_t)t.dtype;
    head.ndim = (uint64_t)t.ndim;
    head.nbytes = t.nbytes;
    for (int d = 0; d < t.ndim && d < BFEED_MAX_DIMS; d++) head.shape[d] = (uint64_t)t.shape[d];
    rc = blob_put(&rec->blob, &rec->blob_len, &cap, t.name, strlen(t.name) + 1);
    if (rc == 0) rc = blob_put(&rec->blob, &rec->blob_len, &cap, &head, sizeof head);
    if (rc == 0) rc = blob_put(&rec->blob, &rec->blob_len, &cap, t.data, t.nbytes);
  }
  if (rc < 0) {
    itest_rec_free(rec);
    return BFEED_ENOMEM;
  }
  return 0;
}

void itest_rec_free(itest_rec *rec) {
  free(rec->blob);
  free(rec->idx);
  free(rec->labels);
  memset(rec, 0, sizeof *rec);
}

const uint8_t *itest_rec_data(const itest_rec *rec, const char *name, size_t *nbytes) {
  size_t at = 0;
  while (at < rec->blob_len) {
    const char *tname = (const char *)rec->blob + at;
    rec_head head;
    at += strlen(tname) + 1;
    memcpy(&head, rec->blob + at, sizeof head);
    at += sizeof head;
    if (strcmp(tname, name) == 0) return *nbytes = head.nbytes, rec->blob + at;
    at += head.nbytes;
  }
  return NULL;
}

int itest_rec_equal(const itest_rec *a, const itest_rec *b) {
  return a->epoch == b->epoch && a->index == b->index && a->blob_len == b->blob_len &&
         memcmp(a->blob, b->blob, a->blob_len) == 0;
}

int itest_collect(bfeed_stream *s, size_t max, itest_run *run, bfeed_error *err) {
  bfeed_error local;
  if (!err) err = &local;
  while (max == 0 || run->n < max) {
    bfeed_batch *b;
    int rc = bfeed_stream_next(s, &b, err);
    if (rc < 0) return rc;
    if (run->n == run->cap) {
      size_t cap = run->cap ? 2 * run->cap : 16;
      itest_rec *r = realloc(run->b, cap * sizeof *r);
      if (!r) {
        bfeed_batch_release(b);
        return BFEED_ENOMEM;
      }
      run->b = r;
      run->cap = cap;
    }
    rc = itest_rec_from_batch(b, &run->b[run->n]);
    bfeed_batch_release(b);
    if (rc < 0) {
      snprintf(err->message, sizeof err->message, "batch %zu lacks a proper label or index tensor", run->n);
      return err->code = rc;
    }
    run->n++;
  }
  return 0;
}

int itest_fetch(const char *addr, const char *dataset, const bfeed_stream_opts *o, size_t max,
                itest_run *run, bfeed_error *err) {
  bfeed_client *c;
  bfeed_stream *s;
  int rc = bfeed_connect(addr, &c, err);
  if (rc < 0) return rc;
  if ((rc = bfeed_stream_open(c, dataset, o, &s, err)) == 0) {
    rc = itest_collect(s, max, run, err);
    bfeed_stream_close(s);
  }
  bfeed_close(c);
  return rc;
}

void itest_run_free(itest_run *run) {
  for (size_t i = 0; i < run->n; i++) itest_rec_free(&run->b[i]);
  free(run->b);
  memset(run, 0, sizeof *run);
}

long itest_run_diff(const itest_run *a, const itest_run *b) {
  size_t n = a->n < b->n ? a->n : b->n;
  for (size_t i = 0; i < n; i++)
    if (!itest_rec_equal(&a->b[i], &b->b[i])) return (long)i;
  return a->n == b->n ? -1 : (long)n;
}

int itest_counters(bfeed_stream *s, const char *const *names, uint64_t *values, size_t n, bfeed_error *err) {
  bfeed_counter c[64];
  size_t have;
  int rc = bfeed_stream_stats(s, c, 64, &have, err);
  for (size_t k = 0; rc == 0 && k < n; k++) {
    size_t i = 0;
    while (i < have && strcmp(c[i].name, names[k]) != 0) i++;
    if (i == have) {
      snprintf(err->message, sizeof err->message, "the daemon reports no counter '%s'", names[k]);
      return err->code = BFEED_EINVAL;
    }
    values[k] = c[i].value;
  }
  return rc;
}

void itest_opts(bfeed_stream_opts *o) {
  bfeed_stream_opts_init(o);
  o->batch = 8;
  o->size = 32;
}
