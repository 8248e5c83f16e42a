/*
 * notify.h -- telling the service manager how the daemon is doing.
 * Called by main.c (ready, reloading, stopping, status, watchdog).
 *
 * Thin wrappers over libsystemd's sd_notify(3): READY=1 once listening with
 * datasets loaded, STATUS= lines, RELOADING=1/STOPPING=1, and WATCHDOG=1
 * pings at half the WatchdogSec interval when the unit sets one. Outside
 * systemd (no NOTIFY_SOCKET) every call does nothing.
 */
#ifndef BFEED_NOTIFY_H
#define BFEED_NOTIFY_H

#include <stdint.h>
#include <uv.h>

typedef struct notifier {
  uv_timer_t watchdog;
  uint64_t watchdog_usec; /* 0: no watchdog */
} notifier;

/* Start the watchdog timer when systemd asks for one. */
void notify_init(notifier *n, uv_loop_t *loop);
void notify_ready(const char *status);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notify_reloading(void);
void notify_stopping(void);
void notify_close(notifier *n);

#endif
