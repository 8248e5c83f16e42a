/* itest_daemon.c -- see itest_util.h: a real bfeedd as a child process. */
#include "itest_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ITEST_BFEEDD
#error "ITEST_BFEEDD must name the bfeedd binary (set by tests/integration/CMakeLists.txt)"
#endif

extern char **environ;

#define ITEST_START_MS 10000 /* a daemon that is not up by then is broken */

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

/* "bfeedd exited with status 1<when>; log:" and the log's last lines. */
static int exit_failure(const itest_daemon *d, int status, const char *when, char *err, size_t errlen) {
  char how[64];
  if (WIFEXITED(status)) snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
  else snprintf(how, sizeof how, "stopped (status 0x%x)", status);
  size_t len;
  char *log = itest_read_file(d->log_path, &len);
  itest_fail(err, errlen, "bfeedd %s%s; log:\n%s", how, when, log ? (len > 600 ? log + len - 600 : log) : "(no log)");
  free(log);
  return -1;
}

typedef struct started_check {
  itest_daemon *d;
  int tcp, status;
} started_check;

/* 1 once every listener accepts, -1 if the daemon exited first. */
static int started(void *arg) {
  started_check *w = arg;
  if (waitpid(w->d->pid, &w->status, WNOHANG) == w->d->pid) return -1;
  return accepts(w->d->unix_addr) && (!w->tcp || accepts(w->d->tcp_addr));
}

int itest_daemon_start(itest_daemon *d, const itest_daemon_opts *o, char *err, size_t errlen) {
  char sock[200], listen_tcp[48], workers[16];
  char *argv[40], *envp[512];
  int argc = 0;
  memset(d, 0, sizeof *d);
  d->status = -1;
  snprintf(sock, sizeof sock, "%s/%s.sock", o->dir, o->name);
  if (strlen(sock) >= sizeof ((struct sockaddr_un *)0)->sun_path)
    return itest_fail(err, errlen, "socket path %s is too long", sock);
  snprintf(d->unix_addr, sizeof d->unix_addr, "unix:%s", sock);
  snprintf(d->log_path, sizeof d->log_path, "%s/%s.log", o->dir, o->name);
  snprintf(workers, sizeof workers, "%d", o->workers > 0 ? o->workers : 1);
  argv[argc++] = ITEST_BFEEDD;
  argv[argc++] = "--listen";
  argv[argc++] = d->unix_addr;
  if (o->tcp) {
    int port = o->tcp_addr ? 0 : free_tcp_port();
    if (port < 0) return itest_fail(err, errlen, "no free TCP port: %s", strerror(errno));
    if (o->tcp_addr) snprintf(d->tcp_addr, sizeof d->tcp_addr, "%s", o->tcp_addr);
    else snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", port);
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
  for (int i = 0; o->args && o->args[i] && i < 16; i++) argv[argc++] = (char *)o->args[i];
  argv[argc] = NULL;
  int envc = 0;
  for (int i = 0; o->env && o->env[i] && i < 8; i++) envp[envc++] = (char *)o->env[i];
  for (char **e = environ; *e && envc < 511; e++) envp[envc++] = *e;
  envp[envc] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, d->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  int rc = posix_spawn(&pid, ITEST_BFEEDD, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return itest_fail(err, errlen, "cannot start %s: %s", ITEST_BFEEDD, strerror(rc));
  d->pid = pid;

  started_check w = {d, o->tcp, 0};
  int r = itest_poll(started, &w, ITEST_START_MS, 10);
  if (r > 0) return 0;
  if (r < 0) {
    d->pid = 0;
    d->status = w.status;
    return exit_failure(d, w.status, " before it accepted connections", err, errlen);
  }
  itest_daemon_kill(d);
  return itest_fail(err, errlen, "bfeedd did not accept connections within %d ms", ITEST_START_MS);
}

int itest_daemon_alive(itest_daemon *d) {
  if (d->pid <= 0) return 0;
  if (waitpid(d->pid, &d->status, WNOHANG) != d->pid) return 1;
  d->pid = 0; /* reaped: status says how it ended */
  return 0;
}

typedef struct exit_check {
  pid_t pid;
  int status, error;
} exit_check;

/* 1 once the child is reaped, -1 if waitpid fails. */
static int exited(void *arg) {
  exit_check *w = arg;
  pid_t r = waitpid(w->pid, &w->status, WNOHANG);
  if (r < 0) w->error = errno;
  return r == w->pid ? 1 : r < 0 ? -1 : 0;
}

int itest_daemon_wait(itest_daemon *d, int timeout_ms, char *err, size_t errlen) {
  if (d->pid <= 0) return itest_fail(err, errlen, "bfeedd is not running (already reaped)");
  exit_check w = {d->pid, 0, 0};
  int r = itest_poll(exited, &w, timeout_ms, 5);
  if (r > 0) {
    d->pid = 0;
    d->status = w.status;
    if (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0) return 0;
    return exit_failure(d, w.status, "", err, errlen);
  }
  if (r < 0) {
    d->pid = 0;
    return itest_fail(err, errlen, "waitpid: %s", strerror(w.error));
  }
  itest_daemon_kill(d);
  return itest_fail(err, errlen, "bfeedd did not exit within %d ms (killed)", timeout_ms);
}

int itest_daemon_stop(itest_daemon *d, int timeout_ms, char *err, size_t errlen) {
  if (d->pid <= 0) return itest_fail(err, errlen, "bfeedd is not running");
  kill(d->pid, SIGTERM);
  return itest_daemon_wait(d, timeout_ms, err, errlen);
}

void itest_daemon_kill(itest_daemon *d) {
  if (d->pid <= 0) return;
  kill(d->pid, SIGKILL);
  waitpid(d->pid, &d->status, 0);
  d->pid = 0;
}


/* One "NAME: N kB" line of /proc/PID/status; -1 if absent. */
static long itest_daemon_status_kib(const itest_daemon *d, const char *field) {
  char path[64], line[256], want[40];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)d->pid);
  snprintf(want, sizeof want, "%s: %%ld kB", field);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, want, &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

long itest_daemon_rss_kib(const itest_daemon *d) { return itest_daemon_status_kib(d, "VmRSS"); }

long itest_daemon_peak_kib(const itest_daemon *d) { return itest_daemon_status_kib(d, "VmHWM"); }

int itest_daemon_log_has(const itest_daemon *d, const char *needle) {
  size_t len;
  char *log = itest_read_file(d->log_path, &len);
  int has = log && strstr(log, needle) != NULL;
  free(log);
  return has;
}
