/*
 * clock.h -- the one monotonic clock of daemon, library and tools.
 *
 * CLOCK_MONOTONIC: never jumps with the wall clock, so timeouts, backoff
 * and rates stay right across an NTP step. Condition variables made with
 * clock_cond_init wait on the same clock, so a deadline computed from
 * clock_now_ns() can be handed to pthread_cond_timedwait through
 * clock_timespec().
 */
#ifndef BFEED_CLOCK_H
#define BFEED_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary start (boot). */
static inline uint64_t clock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same, in seconds (rates and durations for people). */
static inline double clock_now_s(void) { return (double)clock_now_ns() * 1e-9; }

/* A condition variable whose timed waits count on this clock: deadlines
 * from clock_now_ns() then mean what they say across wall-clock steps. */
static inline int clock_cond_init(pthread_cond_t *cv) {
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);
  if (rc == 0) rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (rc == 0) rc = pthread_cond_init(cv, &ca);
  pthread_condattr_destroy(&ca);
  return rc;
}

/* A clock_now_ns() time as the timespec pthread_cond_timedwait takes. */
static inline struct timespec clock_timespec(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  return ts;
}

#endif
