/*
 * test_remote_list_query.c -- the request's side of S3's ListObjectsV2
 * (storage/remote_list.c): the query string, which must already be SigV4's
 * canonical one, and an object key as a URL path, byte for byte against
 * botocore's, and their limits. The response's side: test_remote_list.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "remote_list.h"

/* Expected strings from botocore 1.43 (Debian's python3-botocore), made
 * while writing this test: a client's list_objects_v2(Bucket="bucket",
 * **params), stopped at before-sign, its request through
 * botocore.auth.S3SigV4Auth.canonical_query_string; with url_encoding 0,
 * botocore's set_list_objects_encoding_type_url handler unregistered (it
 * always asks for encoding-type=url otherwise). */
static void test_query_botocore(void **state) {
  (void)state;
  static const struct {
    const char *prefix, *delimiter, *token;
    uint32_t max_keys;
    int url;
    const char *want;
  } cases[] = {
      {"", NULL, NULL, 0, 0, "list-type=2&prefix="},
      {NULL, NULL, NULL, 0, 0, "list-type=2"},
      {"train/", NULL, NULL, 1000, 0, "list-type=2&max-keys=1000&prefix=train%2F"},
      {"data/shard-", "/", NULL, 500, 0, "delimiter=%2F&list-type=2&max-keys=500&prefix=data%2Fshard-"},
      {"a b+c&d=e/f~g_h.i-j", NULL, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=", 3, 0,
       "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&list-type=2&max-keys=3&"
       "prefix=a%20b%2Bc%26d%3De%2Ff~g_h.i-j"},
      {"caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/", "/", NULL, 0, 1,
       "delimiter=%2F&encoding-type=url&list-type=2&prefix=caf%C3%A9%2F%E6%97%A5%E6%9C%AC%2F"},
      {"x!*'();:@$,?#[]%", "|", NULL, 0, 1,
       "delimiter=%7C&encoding-type=url&list-type=2&prefix=x%21%2A%27%28%29%3B%3A%40%24%2C%3F%23%5B%5D%25"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    remote_list_request rq = {.prefix = cases[i].prefix, .delimiter = cases[i].delimiter,
                              .continuation_token = cases[i].token, .max_keys = cases[i].max_keys,
                              .url_encoding = cases[i].url};
    char *q = NULL, err[256];
    assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), 0);
    assert_string_equal(q, cases[i].want);
    free(q);
  }
  /* Every printable ASCII character in every value (all three the same). */
  char ascii[0x7f - 0x20 + 1];
  for (int c = 0x20; c < 0x7f; c++) ascii[c - 0x20] = (char)c;
  ascii[sizeof ascii - 1] = 0;
#define TL_ASCII_ENC                                                                                             \
  "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C-.%2F0123456789%3A%3B%3C%3D%3E%3F%40ABCDEFGHIJKLMNOPQRSTUVWXYZ%5B%5C" \
  "%5D%5E_%60abcdefghijklmnopqrstuvwxyz%7B%7C%7D~"
  remote_list_request rq = {.prefix = ascii, .delimiter = ascii, .continuation_token = ascii, .max_keys = 1,
                            .url_encoding = 1};
  char *q = NULL, err[256];
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), 0);
  assert_string_equal(q, "continuation-token=" TL_ASCII_ENC "&delimiter=" TL_ASCII_ENC
                         "&encoding-type=url&list-type=2&max-keys=1&prefix=" TL_ASCII_ENC);
  free(q);
  /* Bytes past ASCII, each its own %XX (UTF-8 or not: S3 wants UTF-8). */
  rq = (remote_list_request){.prefix = "\x01\x7f\x80\xff", .max_keys = 4294967295u};
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), 0);
  assert_string_equal(q, "list-type=2&max-keys=4294967295&prefix=%01%7F%80%FF");
  free(q);
}

static void test_query_limits(void **state) {
  (void)state;
  char big[REMOTE_LIST_TEXT_MAX + 2];
  memset(big, '\xff', sizeof big - 1);
  big[sizeof big - 1] = 0;
  char *q = NULL, err[256];
  /* The longest values: every byte tripled, and it fits. */
  big[REMOTE_LIST_KEY_MAX] = 0;
  remote_list_request rq = {.prefix = big, .delimiter = big};
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), 0);
  assert_int_equal(strlen(q), strlen("delimiter=&list-type=2&prefix=") + 6 * REMOTE_LIST_KEY_MAX);
  free(q);
  big[REMOTE_LIST_KEY_MAX] = '\xff';
  big[REMOTE_LIST_TEXT_MAX] = 0;
  rq = (remote_list_request){.continuation_token = big};
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), 0);
  free(q);
  big[REMOTE_LIST_TEXT_MAX] = '\xff';
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), BFEED_EINVAL);
  assert_null(q);
  assert_non_null(strstr(err, "continuation token is 4097 bytes"));
  big[REMOTE_LIST_KEY_MAX + 1] = 0;
  rq = (remote_list_request){.prefix = big};
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "prefix is 1025 bytes"));
  rq = (remote_list_request){.delimiter = big};
  assert_int_equal(remote_list_query(&rq, &q, err, sizeof err), BFEED_EINVAL);
}

/* Keys as URL paths, against botocore's GetObject request URL (path-style,
 * "/bucket/" taken off), which S3SigV4Auth signs as it stands. */
static void test_encode_key_botocore(void **state) {
  (void)state;
  static const struct {
    const char *key, *want;
  } cases[] = {
      {"train/shard-000000.tar", "train/shard-000000.tar"},
      {"a b+c&d=e", "a%20b%2Bc%26d%3De"},
      {"caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.tar", "caf%C3%A9/%E6%97%A5%E6%9C%AC.tar"},
      {"dir//x~y", "dir//x~y"},
      {" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
       "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C-./0123456789%3A%3B%3C%3D%3E%3F%40ABCDEFGHIJKLMNOPQRSTUVWXYZ%5B%5C%5D"
       "%5E_%60abcdefghijklmnopqrstuvwxyz%7B%7C%7D~"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *p = remote_list_encode_key(cases[i].key);
    assert_non_null(p);
    assert_string_equal(p, cases[i].want);
    free(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_query_botocore),
      cmocka_unit_test(test_query_limits),
      cmocka_unit_test(test_encode_key_botocore),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
