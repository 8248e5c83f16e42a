/* notify.c -- see notify.h */
#include "notify.h"
#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

static void on_watchdog(uv_timer_t *t) {
  (void)t;
  sd_notify(0, "WATCHDOG=1");
}

void notify_init(notifier *n, uv_loop_t *loop) {
  uint64_t usec = 0;
  n->watchdog_usec = 0;
  uv_timer_init(loop, &n->watchdog);
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    n->watchdog_usec = usec;
    /* Ping twice per interval, as sd_watchdog_enabled(3) recommends. */
    uint64_t ms = usec / 2000 ? usec / 2000 : 1;
    uv_timer_start(&n->watchdog, on_watchdog, ms, ms);
  }
  uv_unref((uv_handle_t *)&n->watchdog); /* never keeps the loop alive */
}

void notify_ready(const char *status) { sd_notifyf(0, "READY=1\nSTATUS=%s", status); }

void notify_status(const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  sd_notifyf(0, "STATUS=%s", msg);
}

void notify_reloading(void) {
  /* MONOTONIC_USEC lets systemd 253+ match the reload to this message. */
  sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)(clock_now_ns() / 1000));
}

void notify_stopping(void) { sd_notify(0, "STOPPING=1"); }

void notify_close(notifier *n) { uv_close((uv_handle_t *)&n->watchdog, NULL); }
