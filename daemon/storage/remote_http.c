/* remote_http.c -- one HTTP request with retries, on libcurl (see remote_http.h). */
#include "remote_http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bfeed_types.h"
#include "remote_list.h"

/* An error body is read this far for its Code and Message. */
#define REMOTE_HTTP_ERRBODY 4096
#define REMOTE_HTTP_BACKOFF_MAX_MS 5000

static struct {
  uint64_t requests, retries, failures, bytes, in_flight;
} remote_http_count;

static pthread_once_t remote_http_once = PTHREAD_ONCE_INIT;
static pthread_key_t remote_http_key;
/* Each thread's handle: libcurl keeps its connections alive between requests. */
static __thread CURL *remote_http_easy;

static void remote_http_thread_end(void *h) { curl_easy_cleanup(h); }

static void remote_http_init(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  pthread_key_create(&remote_http_key, remote_http_thread_end);
}

static CURL *remote_http_handle(void) {
  pthread_once(&remote_http_once, remote_http_init);
  if (!remote_http_easy && (remote_http_easy = curl_easy_init()))
    pthread_setspecific(remote_http_key, remote_http_easy);
  return remote_http_easy;
}

/* What one try gathers while libcurl runs it. */
typedef struct remote_http_try {
  const remote_http_req *req;
  remote_http_resp *resp;
  uint64_t pos;     /* body bytes seen: a 200 to a ranged request skips up to req->off */
  int ranged_reply; /* the answer was a 206 */
  int overflow;     /* a body larger than its room */
  char errbody[REMOTE_HTTP_ERRBODY];
  size_t errlen;
  long status;      /* of the response whose headers came last */
} remote_http_try;

static size_t remote_http_header(char *line, size_t size, size_t n, void *arg) {
  remote_http_try *t = arg;
  size_t len = size * n;
  char h[512];
  size_t k = len < sizeof h - 1 ? len : sizeof h - 1;
  memcpy(h, line, k);
  h[k] = 0;
  while (k && (h[k - 1] == '\r' || h[k - 1] == '\n')) h[--k] = 0;
  if (strncmp(h, "HTTP/", 5) == 0) {
    /* A new response (after a 100 or a redirect): forget the last's. */
    const char *sp = strchr(h, ' ');
    t->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    t->ranged_reply = t->status == 206;
    t->resp->etag[0] = 0;
    t->resp->size = UINT64_MAX;
    t->resp->mtime_s = 0;
    return len;
  }
  char *colon = strchr(h, ':');
  if (!colon) return len;
  *colon = 0;
  char *v = colon + 1;
  while (*v == ' ' || *v == '\t') v++;
  if (strcasecmp(h, "etag") == 0) {
    /* A weak ETag keeps its W/: If-Match compares strongly and would
     * refuse every read, so those objects are not read with it. */
    int weak = strncmp(v, "W/", 2) == 0;
    if (weak) v += 2;
    size_t vl = strlen(v);
    if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') v++, vl -= 2;
    snprintf(t->resp->etag, sizeof t->resp->etag, "%s%.*s", weak ? "W/" : "", (int)vl, v);
  } else if (strcasecmp(h, "content-range") == 0) {
    const char *slash = strchr(v, '/');
    if (slash && slash[1] != '*') t->resp->size = strtoull(slash + 1, NULL, 10);
  } else if (strcasecmp(h, "content-length") == 0 && !t->ranged_reply && t->status / 100 == 2) {
    t->resp->size = strtoull(v, NULL, 10);
  } else if (strcasecmp(h, "last-modified") == 0) {
    time_t when = curl_getdate(v, NULL);
    t->resp->mtime_s = when > 0 ? (int64_t)when : 0;
  }
  return len;
}

static size_t remote_http_body(char *data, size_t size, size_t n, void *arg) {
  remote_http_try *t = arg;
  const remote_http_req *q = t->req;
  size_t len = size * n;
  if (t->status / 100 != 2) {
    /* An error's body: its start, for the Code and Message. */
    size_t room = sizeof t->errbody - 1 - t->errlen, k = len < room ? len : room;
    memcpy(t->errbody + t->errlen, data, k);
    t->errlen += k;
    return len;
  }
  const char *p = data;
  size_t rest = len;
  if (q->len && !t->ranged_reply) {
    /* A server that ignores Range sends the whole object: keep the range. */
    if (t->pos + rest <= q->off) return t->pos += rest, len;
    if (t->pos < q->off) {
      size_t skip = (size_t)(q->off - t->pos);
      p += skip, rest -= skip, t->pos += skip;
    }
    uint64_t end = q->off + q->len;
    if (t->pos >= end) return t->pos += rest, len;
    if (t->pos + rest > end) rest = (size_t)(end - t->pos), t->pos = end - rest;
  }
  t->pos += rest;
  size_t at = t->resp->got;
  if (q->gbuf) {
    if (at + rest > q->max) return t->overflow = 1, 0;
    if (at + rest + 1 > *q->gcap) {
      size_t cap = *q->gcap ? *q->gcap : 65536;
      while (cap < at + rest + 1) cap *= 2;
      if (cap > q->max + 1) cap = q->max + 1;
      uint8_t *b = realloc(*q->gbuf, cap);
      if (!b) return t->overflow = 2, 0;
      *q->gbuf = b;
      *q->gcap = cap;
    }
    memcpy(*q->gbuf + at, p, rest);
  } else {
    if (at + rest > q->cap) return t->overflow = 1, 0;
    memcpy(q->buf + at, p, rest);
  }
  t->resp->got = at + rest;
  return len;
}

/* Set up h for one try of q. */
static int remote_http_setup(CURL *h, remote_http_try *t, const remote_http_opts *o, struct curl_slist **hdrs,
                             char *curlerr) {
  const remote_http_req *q = t->req;
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, q->url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curlerr);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->timeout_ms < 10000 ? o->timeout_ms : 10000L);
  /* A stall: under 1 KiB/s for a third of the timeout, at least a second. */
  long stall = o->timeout_ms / 3000;
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall > 0 ? stall : 1L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, remote_http_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, remote_http_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  /* Object bytes are compared, never transformed: no Accept-Encoding. */
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  /* Keys are paths as S3 has them: "a/../b" is a key, not a way up. */
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  if (q->head) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  char line[256];
  if (q->len) {
    snprintf(line, sizeof line, "%llu-%llu", (unsigned long long)q->off, (unsigned long long)(q->off + q->len - 1));
    curl_easy_setopt(h, CURLOPT_RANGE, line);
  }
  *hdrs = NULL;
  if (q->if_match && q->if_match[0] && strncmp(q->if_match, "W/", 2) != 0) {
    char im[200];
    snprintf(im, sizeof im, "If-Match: \"%s\"", q->if_match);
    if (!(*hdrs = curl_slist_append(*hdrs, im))) return BFEED_ENOMEM;
  }
  const remote_auth *a = q->auth;
  if (a && a->sign) {
    char sig[128];
    snprintf(sig, sizeof sig, "aws:amz:%s:s3", a->region);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
    curl_easy_setopt(h, CURLOPT_USERNAME, a->access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, a->secret_key);
    /* S3 wants the payload's hash, and libcurl 7.88 does not send it:
     * the SHA-256 of no body (every request here is a GET or a HEAD). */
    struct curl_slist *n = curl_slist_append(
        *hdrs, "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    if (!n) return BFEED_ENOMEM;
    *hdrs = n;
    if (a->token[0]) {
      char tok[sizeof a->token + 32];
      snprintf(tok, sizeof tok, "x-amz-security-token: %s", a->token);
      if (!(n = curl_slist_append(*hdrs, tok))) return BFEED_ENOMEM;
      *hdrs = n;
    }
  }
  if (*hdrs) curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
  return 0;
}

/* Whether a response status is worth another try. */
static int remote_http_retryable(long status) { return status >= 500 || status == 429 || status == 408; }

static void remote_http_sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* "503 Service Unavailable (SlowDown: Please reduce your request rate)". */
static void remote_http_status_text(const remote_http_try *t, char *out, size_t n) {
  char code[64] = "", msg[256] = "";
  if (t->errlen && remote_list_error(t->errbody, t->errlen, code, sizeof code, msg, sizeof msg) == 0 && code[0])
    snprintf(out, n, "HTTP %ld (%s%s%s)", t->status, code, msg[0] ? ": " : "", msg);
  else
    snprintf(out, n, "HTTP %ld", t->status);
  snprintf(t->resp->code, sizeof t->resp->code, "%s", code);
}

int remote_http_do(const remote_http_req *q, const remote_http_opts *o, remote_http_resp *r, char *err,
                   size_t errlen) {
  CURL *h = remote_http_handle();
  if (!h) return snprintf(err, errlen, "%s: cannot start an HTTP client (out of memory)", q->what), BFEED_ENOMEM;
  char why[512] = "";
  long wait = o->backoff_ms > 0 ? o->backoff_ms : 100;
  int code = BFEED_EIO;
  for (int attempt = 0; attempt <= o->retries; attempt++) {
    if (attempt) {
      __atomic_add_fetch(&remote_http_count.retries, 1, __ATOMIC_RELAXED);
      remote_http_sleep_ms(wait);
      wait = wait * 2 > REMOTE_HTTP_BACKOFF_MAX_MS ? REMOTE_HTTP_BACKOFF_MAX_MS : wait * 2;
    }
    memset(r, 0, sizeof *r);
    r->size = UINT64_MAX;
    r->tries = attempt + 1;
    remote_http_try t = {.req = q, .resp = r};
    struct curl_slist *hdrs = NULL;
    char curlerr[CURL_ERROR_SIZE] = "";
    if (remote_http_setup(h, &t, o, &hdrs, curlerr) < 0) {
      curl_slist_free_all(hdrs);
      return snprintf(err, errlen, "%s: out of memory", q->what), BFEED_ENOMEM;
    }
    __atomic_add_fetch(&remote_http_count.requests, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&remote_http_count.in_flight, 1, __ATOMIC_RELAXED);
    CURLcode rc = curl_easy_perform(h);
    __atomic_sub_fetch(&remote_http_count.in_flight, 1, __ATOMIC_RELAXED);
    curl_slist_free_all(hdrs);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    r->status = t.status = status;
    if (t.overflow == 2) return snprintf(err, errlen, "%s: out of memory for the response", q->what), BFEED_ENOMEM;
    if (t.overflow)
      return snprintf(err, errlen, "%s: the response is larger than the %zu bytes expected", q->what,
                      q->gbuf ? q->max : q->cap),
             BFEED_ETOOBIG;
    if (rc != CURLE_OK) {
      /* The connection's fault (refused, reset, timed out, cut short):
       * another try may pass. A URL libcurl cannot use will not. */
      snprintf(why, sizeof why, "%s", curlerr[0] ? curlerr : curl_easy_strerror(rc));
      if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL) {
        code = BFEED_EDATASET;
        break;
      }
      continue;
    }
    if (status / 100 == 2) {
      __atomic_add_fetch(&remote_http_count.bytes, r->got, __ATOMIC_RELAXED);
      /* A ranged body shorter than asked is the object's end, or a cut. */
      if (q->len && r->got < q->len && r->size != q->off + r->got) {
        snprintf(why, sizeof why, "the body of bytes %llu-%llu ended after %zu bytes", (unsigned long long)q->off,
                 (unsigned long long)(q->off + q->len - 1), r->got);
        continue;
      }
      return 0;
    }
    remote_http_status_text(&t, why, sizeof why);
    if (!remote_http_retryable(status)) {
      code = BFEED_EDATASET;
      break;
    }
  }
  __atomic_add_fetch(&remote_http_count.failures, 1, __ATOMIC_RELAXED);
  if (code == BFEED_EDATASET)
    return snprintf(err, errlen, "%s: %s", q->what, why), code;
  return snprintf(err, errlen, "%s: %s (after %d tries)", q->what, why, o->retries + 1), BFEED_EIO;
}

void remote_http_counters_get(remote_http_counters *out) {
  out->requests = __atomic_load_n(&remote_http_count.requests, __ATOMIC_RELAXED);
  out->retries = __atomic_load_n(&remote_http_count.retries, __ATOMIC_RELAXED);
  out->failures = __atomic_load_n(&remote_http_count.failures, __ATOMIC_RELAXED);
  out->bytes = __atomic_load_n(&remote_http_count.bytes, __ATOMIC_RELAXED);
  out->in_flight = __atomic_load_n(&remote_http_count.in_flight, __ATOMIC_RELAXED);
}
