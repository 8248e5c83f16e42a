/*
 * clock.h -- the one monotonic clock of daemon, library and tools.
 *
 * CLOCK_MONOTONIC: never jumps with the wall clock, so timeouts, backoff
 * and rates stay right across an NTP step. libbfeed's condition variables
 * wait on the same clock (client/lib), so a deadline computed from
 * clock_now_ns() can be handed to pthread_cond_timedwait through
 * clock_deadline().
 */
#ifndef BFEED_CLOCK_H
#define BFEED_CLOCK_H

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

/* A clock_now_ns() time as the timespec pthread_cond_timedwait takes. */
static inline struct timespec clock_timespec(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  return ts;
}

#endif
