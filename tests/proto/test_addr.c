/*
 * test_addr.c -- the address syntax of proto/addr.h: Unix paths, host:port,
 * bracketed IPv6, and every malformed or overlong form refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "bfeed_types.h"
#include "tb.h"

/* ------------------------------------------------------------------ */
/* Addresses                                                          */

static void expect_addr(const char *s, int kind, const char *where, int port) {
  addr_spec a;
  char why[512] = "";
  int rc = addr_parse(s, &a, why, sizeof why);
  if (!kind) {
    if (rc != BFEED_EINVAL) fail_msg("\"%s\" accepted", s);
    assert_true(strlen(why) > 0);
    return;
  }
  if (rc != 0) fail_msg("\"%s\" refused: %s", s, why);
  assert_int_equal(a.kind, kind);
  assert_string_equal(kind == ADDR_UNIX ? a.path : a.host, where);
  if (kind == ADDR_TCP) assert_int_equal(a.port, port);
}

static void test_addr_parse(void **state) {
  expect_addr("unix:/run/bfeed/bfeedd.sock", ADDR_UNIX, "/run/bfeed/bfeedd.sock", 0);
  expect_addr("unix:rel.sock", ADDR_UNIX, "rel.sock", 0);
  expect_addr("unix:", 0, NULL, 0);
  expect_addr("127.0.0.1:7070", ADDR_TCP, "127.0.0.1", 7070);
  expect_addr("feeder.example:0", ADDR_TCP, "feeder.example", 0);
  expect_addr("h:65535", ADDR_TCP, "h", 65535);
  expect_addr("[::1]:7070", ADDR_TCP, "::1", 7070);
  expect_addr("[fe80::1%eth0]:1", ADDR_TCP, "fe80::1%eth0", 1);
  /* bad ports */
  expect_addr("h:65536", 0, NULL, 0);
  expect_addr("h:-1", 0, NULL, 0);
  expect_addr("h:", 0, NULL, 0);
  expect_addr("h:80x", 0, NULL, 0);
  expect_addr("h:x80", 0, NULL, 0);
  expect_addr("h:99999999999999999999999", 0, NULL, 0);
  expect_addr("[::1]:", 0, NULL, 0);
  /* missing host, missing port, broken brackets */
  expect_addr(":7070", 0, NULL, 0);
  expect_addr("[]:7070", 0, NULL, 0);
  expect_addr("localhost", 0, NULL, 0);
  expect_addr("", 0, NULL, 0);
  expect_addr("[::1]", 0, NULL, 0);
  expect_addr("[::1:7070", 0, NULL, 0);
  expect_addr("[::1]x:7070", 0, NULL, 0);
}

/* sun_path holds 107 bytes and a NUL; host names up to 255 bytes. */
static void test_addr_lengths(void **state) {
  char s[600];
  char *p107 = tb_repeat('p', 107), *p108 = tb_repeat('p', 108);
  snprintf(s, sizeof s, "unix:%s", p107);
  expect_addr(s, ADDR_UNIX, p107, 0);
  snprintf(s, sizeof s, "unix:%s", p108);
  expect_addr(s, 0, NULL, 0);
  char *h255 = tb_repeat('h', 255), *h256 = tb_repeat('h', 256);
  snprintf(s, sizeof s, "%s:1", h255);
  expect_addr(s, ADDR_TCP, h255, 1);
  snprintf(s, sizeof s, "%s:1", h256);
  expect_addr(s, 0, NULL, 0);
  snprintf(s, sizeof s, "[%s]:1", h256);
  expect_addr(s, 0, NULL, 0);
  free(p107);
  free(p108);
  free(h255);
  free(h256);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_addr_parse),
      cmocka_unit_test(test_addr_lengths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
