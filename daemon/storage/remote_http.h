/*
 * remote_http.h -- one HTTP request of the remote backends (storage_remote.c,
 * remote_cache.c), on libcurl: a ranged GET, a HEAD or a listing, signed
 * with AWS Signature V4 (libcurl's own CURLOPT_AWS_SIGV4) when the site has
 * keys, retried with backoff when the failure may pass.
 *
 * What is retried: connections refused or reset, timeouts (a try that takes
 * longer than timeout_ms, or stalls under 1 KiB/s for a third of it),
 * bodies cut short, 5xx, 429 and 408. What is not: 4xx, which say the
 * request itself is wrong (403 a key, 404 a name, 412 an object changed
 * since its ETag was taken, 416 a range past its end): those come back at
 * once as BFEED_EDATASET with the status in resp->status. After the last
 * try a failure of the moment is BFEED_EIO, naming the object (req->what)
 * and the last reason.
 *
 * Secrets never reach a message: keys go to libcurl as its user name and
 * password, the session token as a header, and messages are made from
 * req->what, statuses and the server's error Code and Message only.
 *
 * Each thread keeps one curl handle (its connections are reused between
 * requests); any thread may call. Counters are process-wide atomics.
 */
#ifndef BFEED_REMOTE_HTTP_H
#define BFEED_REMOTE_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* How requests to a site are signed: sign = 0 sends them unsigned (public
 * buckets, plain HTTP). */
typedef struct remote_auth {
  int sign;
  char region[64];
  char access_key[256], secret_key[256];
  char token[4096]; /* AWS_SESSION_TOKEN, or "" */
} remote_auth;

/* How long to wait and how often to try. */
typedef struct remote_http_opts {
  long timeout_ms; /* one try, from connect to the body's end */
  int retries;     /* tries after the first */
  long backoff_ms; /* the first wait between tries, doubled each time, at most 5 s */
} remote_http_opts;

#define REMOTE_HTTP_OPTS_DEFAULT {.timeout_ms = 30000, .retries = 5, .backoff_ms = 100}

typedef struct remote_http_req {
  const char *url;  /* scheme://host[:port]/path?query, path and query already encoded */
  const char *what; /* what messages call it ("s3://bucket/key"): never a secret */
  int head;         /* HEAD; else GET */
  uint64_t off, len;      /* with len > 0: Range bytes=off..off+len-1 */
  const char *if_match;   /* an ETag the object must still have (412 otherwise), or NULL; a weak one is not sent */
  const remote_auth *auth; /* NULL: unsigned */
  /* The body goes into buf[cap] (a range), or into *gbuf grown up to max
   * bytes (a listing, a whole object); a body over its room fails. */
  uint8_t *buf;
  size_t cap;
  uint8_t **gbuf;
  size_t *gcap, max;
} remote_http_req;

typedef struct remote_http_resp {
  long status;
  size_t got;    /* body bytes kept */
  uint64_t size; /* the object's whole size: from Content-Range, else Content-Length; UINT64_MAX unknown */
  char etag[128]; /* as sent, quotes removed ("W/" kept on a weak one); "" when none */
  int64_t mtime_s; /* Last-Modified, or 0 */
  int tries;
  char code[64];  /* the server's error Code on a 4xx ("NoSuchKey"), or "" */
} remote_http_resp;

/* Do the request, trying again as the header says. 0 on a 2xx (for a
 * range, resp->got < len only where the object ends); else a negative
 * BFEED_E* with the reason in err. */
int remote_http_do(const remote_http_req *req, const remote_http_opts *o, remote_http_resp *resp, char *err,
                   size_t errlen);

/* Process-wide counters, for stats and /metrics. */
typedef struct remote_http_counters {
  uint64_t requests, retries, failures, bytes;
  uint64_t in_flight;
} remote_http_counters;
void remote_http_counters_get(remote_http_counters *out);

#endif
