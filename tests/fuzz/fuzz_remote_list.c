/*
 * fuzz_remote_list.c -- entry point: bytes as a ListObjectsV2 response
 * body (remote_list_parse) and as an S3 error body (remote_list_error),
 * and, cut at their first NUL, as the values of a request's query string
 * and an object key's URL path. An accepted page must hold what
 * remote_list.h promises (keys and ETags set and within the text limit, a
 * token whenever it is truncated, times in range, at most
 * REMOTE_LIST_ITEMS_MAX names); an error body's fields must end within
 * their buffers; an encoded value must hold only unreserved characters and
 * %XX and decode back to the bytes it came from.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "remote_list.h"

size_t fuzz_remote_list_one(const uint8_t *data, size_t size);

static int fuzz_remote_list_hex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; /* uppercase only */
}

/* enc[0..n) decoded must be want, and hold nothing a canonical value may
 * not (slash: '/' kept, as a key's path keeps it). */
static void fuzz_remote_list_roundtrip(const char *enc, size_t n, const char *want, int slash) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    char c = enc[i];
    int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                c == '_' || c == '~' || (slash && c == '/');
    if (plain) {
      FUZZ_CHECK(want[w++] == c);
      continue;
    }
    FUZZ_CHECK(c == '%' && i + 2 < n && fuzz_remote_list_hex(enc[i + 1]) >= 0 &&
               fuzz_remote_list_hex(enc[i + 2]) >= 0);
    char d = (char)(fuzz_remote_list_hex(enc[i + 1]) * 16 + fuzz_remote_list_hex(enc[i + 2]));
    /* What may stand for itself is never escaped (one canonical form). */
    FUZZ_CHECK(!((d >= 'A' && d <= 'Z') || (d >= 'a' && d <= 'z') || (d >= '0' && d <= '9') || d == '-' ||
                 d == '.' || d == '_' || d == '~' || (slash && d == '/')));
    FUZZ_CHECK(want[w++] == d);
    i += 2;
  }
  FUZZ_CHECK(want[w] == 0);
}

static void fuzz_remote_list_encoders(const uint8_t *data, size_t size) {
  size_t n = strnlen((const char *)data, size < REMOTE_LIST_KEY_MAX ? size : REMOTE_LIST_KEY_MAX);
  char *v = malloc(n + 1);
  FUZZ_CHECK(v != NULL);
  memcpy(v, data, n);
  v[n] = 0;
  char *key = remote_list_encode_key(v);
  FUZZ_CHECK(key != NULL);
  fuzz_remote_list_roundtrip(key, strlen(key), v, 1);
  free(key);
  remote_list_request rq = {.prefix = v, .delimiter = n ? v + n - 1 : v, .continuation_token = v,
                            .max_keys = (uint32_t)size, .url_encoding = (int)(size & 1)};
  char *q = NULL, err[256];
  FUZZ_CHECK(remote_list_query(&rq, &q, err, sizeof err) == 0);
  /* The prefix comes last: "...&prefix=VALUE". */
  const char *p = strstr(q, "&prefix=");
  FUZZ_CHECK(p != NULL && strncmp(q, "continuation-token=", 19) == 0);
  fuzz_remote_list_roundtrip(p + 8, strlen(p + 8), v, 0);
  free(q);
  free(v);
}

size_t fuzz_remote_list_one(const uint8_t *data, size_t size) {
  const char *xml = (const char *)data;
  char err[512];
  size_t found = 0;
  remote_list_page pg;
  if (remote_list_parse(xml, size, &pg, err, sizeof err) == 0) {
    FUZZ_CHECK(pg.n_entries + pg.prefixes.n <= REMOTE_LIST_ITEMS_MAX && pg.key_count >= -1);
    FUZZ_CHECK(!pg.is_truncated || (pg.next_token && pg.next_token[0]));
    for (size_t i = 0; i < pg.n_entries; i++) {
      const remote_list_entry *e = &pg.entries[i];
      FUZZ_CHECK(e->key && e->etag && strlen(e->key) <= REMOTE_LIST_TEXT_MAX);
      FUZZ_CHECK(strlen(e->last_modified) < REMOTE_LIST_TIME_MAX && e->mtime_ns >= 0 && e->mtime_ns < 1000000000);
      FUZZ_CHECK(e->last_modified[0] || (e->mtime_s == 0 && e->mtime_ns == 0));
    }
    for (size_t i = 0; i < pg.prefixes.n; i++) FUZZ_CHECK(strlen(pg.prefixes.v[i]) <= REMOTE_LIST_TEXT_MAX);
    found++;
  } else {
    FUZZ_CHECK(strncmp(err, "ListObjectsV2 response: ", 24) == 0 && pg.entries == NULL);
  }
  remote_list_page_free(&pg);
  char code[8], msg[16];
  memset(code, 'x', sizeof code), memset(msg, 'x', sizeof msg);
  if (remote_list_error(xml, size, code, sizeof code, msg, sizeof msg) == 0) found++;
  FUZZ_CHECK(memchr(code, 0, sizeof code) && memchr(msg, 0, sizeof msg));
  fuzz_remote_list_encoders(data, size);
  return found;
}

#ifdef BFEED_LIBFUZZER
FUZZ_UTIL_TARGET(fuzz_remote_list_one)
#endif
