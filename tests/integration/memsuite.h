/*
 * memsuite.h -- the fixture of the memory tests that write their own
 * datasets (test_image_memory.c, test_text_memory.c, test_idle.c): one
 * temporary folder per program, one bfeedd at a time in it, and the
 * checks they share, cmocka-asserting (itest_util.h's helpers do not).
 */
#ifndef BFEED_ITEST_MEMSUITE_H
#define BFEED_ITEST_MEMSUITE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bfeed.h"
#include "itest_util.h"

/* Under AddressSanitizer and ThreadSanitizer RSS says nothing about what
 * the daemon holds (quarantine, shadow memory): printed, not checked. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMSUITE_CHECK_RSS 0
#else
#define MEMSUITE_CHECK_RSS 1
#endif
#define MEMSUITE_MIB (1ull << 20)

typedef struct memsuite {
  char root[128]; /* the program's folder: datasets, sockets, logs */
  itest_daemon d; /* the daemon of the test running */
} memsuite;
extern memsuite memsuite_the;

/* Group setup's first step (0, or -1) and the group's teardown. */
int memsuite_make_root(void);
int memsuite_teardown(void **state);
/* Per-test teardown: kill the daemon a failed test left running. */
int memsuite_kill(void **state);
/* Start bfeedd with 2 workers serving dataset ("NAME=SPEC") with more
 * flags (NULL-terminated); stop it and expect a clean exit. */
void memsuite_start(const char *dataset, const char *const *args);
void memsuite_stop(void);
/* Print the daemon's peak RSS (VmHWM) as `what`, and fail if it passed
 * bound (outside the sanitizers). */
void memsuite_peak_within(const char *what, uint64_t bound);
/* Wait until c's daemon has had no job queued or running for five
 * reports in a row (what the streams may make, made). */
void memsuite_settle(bfeed_client *c);
/* A client of the daemon, or the test fails. */
bfeed_client *memsuite_connect(void);

/* A whole main(): the tests, each killing its daemon at the end, with
 * setup (which calls memsuite_make_root) and memsuite_teardown. */
#define MEMSUITE_MAIN(name, setup, ...)                                                 \
  int main(void) {                                                                      \
    const struct CMUnitTest memsuite_tests[] = {__VA_ARGS__};                           \
    return cmocka_run_group_tests_name(name, memsuite_tests, setup, memsuite_teardown); \
  }
#define MEMSUITE_TEST(test) cmocka_unit_test_teardown(test, memsuite_kill)

#endif
