/*
 * api_fork.c -- which process a client belongs to (bfeed.h "After fork").
 *
 * fork() copies a client into the child without its threads (the reader,
 * a fan-out stream's members) and with whatever locks they held at that
 * moment: waiting there for a batch, or for a lock, would be forever, and
 * a frame sent on the inherited socket would be the parent's connection
 * talking (a CLOSE would end the parent's stream). So a client remembers
 * the fork count it was made at; a pthread_atfork handler counts one more
 * in every child, and a public call that sees another count fails with
 * BFEED_EFORKED before it takes any lock (api.h). A counter, not getpid():
 * a load per call instead of a system call, and no pid reused.
 *
 * api_fork_forks is written only by the atfork child handler, when the
 * child has one thread, before any other exists; read anywhere after.
 */
#include <pthread.h>
#include <unistd.h>

#include "api.h"

static unsigned api_fork_forks;
static pthread_once_t api_fork_once = PTHREAD_ONCE_INIT;

static void api_fork_child(void) { api_fork_forks++; }

static void api_fork_watch(void) { pthread_atfork(NULL, NULL, api_fork_child); }

unsigned api_fork_count(void) { return api_fork_forks; }

void api_fork_own(bfeed_client *c) {
  pthread_once(&api_fork_once, api_fork_watch); /* before the client exists, so no fork after it goes uncounted */
  c->forks = api_fork_forks;
  c->pid = (int)getpid();
}

int api_fork_check(const bfeed_client *c, char *err, size_t errlen) {
  if (c->forks == api_fork_forks) return 0;
  return api_err(err, errlen, BFEED_EFORKED,
                 "this client was connected by process %d, and this process is a child it forked since: "
                 "the connection and its threads stay the parent's (connect again in the child; bfeed_close "
                 "frees the child's copy)",
                 c->pid);
}
