/*
 * remote_list.h -- S3's ListObjectsV2, both ends of it: the query string of
 * a request, and the parse of a response body (one page of a listing, or an
 * S3 <Error> body), on expat. Also the object key as a URL path.
 * Called by the S3/HTTP backend (storage_remote.c) when it lists a prefix
 * or globs, and when it builds an object's URL.
 *
 * A response comes from the network, so the parser trusts nothing in it:
 * one element's text is at most REMOTE_LIST_TEXT_MAX bytes (S3's keys are
 * at most 1024), elements nest at most REMOTE_LIST_DEPTH_MAX deep, a page
 * holds at most REMOTE_LIST_ITEMS_MAX entries and prefixes (S3 sends at
 * most 1000), and a DOCTYPE is refused outright: a listing has none, and
 * without one no entity can be declared, so nothing expands but the five
 * predefined entities and character references (no "billion laughs").
 * Names are matched by their local part: S3 puts its elements in the
 * namespace http://s3.amazonaws.com/doc/2006-03-01/, its Error bodies and
 * some S3-compatible servers in none.
 *
 * Errors are 0 or a negative BFEED_E* code with a message in err:
 * BFEED_ENOMEM when out of memory; BFEED_EIO for every refusal of a body
 * (malformed, cut short, over a limit, not a listing), a failure of the
 * moment as storage.h has it: a body cut by a dropped connection parses on
 * the next try; BFEED_EINVAL for a request's arguments over their limits.
 * Messages start "ListObjectsV2 response: line N: " and name the object
 * when one is at fault. No global state: any thread, any number at once.
 */
#ifndef BFEED_REMOTE_LIST_H
#define BFEED_REMOTE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "strlist.h"

#define REMOTE_LIST_TEXT_MAX 4096      /* bytes of one element's text, after entities */
#define REMOTE_LIST_DEPTH_MAX 16       /* elements open at once (a listing needs 4) */
#define REMOTE_LIST_ITEMS_MAX 100000   /* entries plus common prefixes in one page */
#define REMOTE_LIST_TIME_MAX 40        /* room for LastModified as given */
#define REMOTE_LIST_KEY_MAX 1024       /* S3's longest key: the limit on a request's prefix and delimiter */

/* One <Contents>: an object. */
typedef struct remote_list_entry {
  char *key;  /* the full key, UTF-8 as sent, entities (and with EncodingType url, %XX) decoded */
  uint64_t size;
  char *etag; /* the ETag without its quotes ("abc" for "\"abc\"" or "&quot;abc&quot;"); "" when absent */
  char last_modified[REMOTE_LIST_TIME_MAX]; /* as given ("2009-10-12T17:50:30.000Z"); "" when absent */
  int64_t mtime_s, mtime_ns;                /* last_modified in Unix seconds and nanoseconds; 0, 0 when absent */
} remote_list_entry;

/* One page of a listing: the caller's struct, filled by remote_list_parse. */
typedef struct remote_list_page {
  remote_list_entry *entries; /* in the response's order (S3: by key, bytewise) */
  size_t n_entries, cap_entries;
  strlist prefixes;   /* each <CommonPrefixes><Prefix>, in order ("photos/" under delimiter "/") */
  int is_truncated;   /* more pages follow: ask again with next_token */
  char *next_token;   /* NextContinuationToken, opaque; never NULL nor "" when is_truncated; else maybe NULL */
  int64_t key_count;  /* KeyCount as given (S3 counts entries and prefixes); -1 when absent */
  int url_encoded;    /* the response said EncodingType url: keys and prefixes were %-decoded ('+' a space) */
} remote_list_page;

/* A ListObjectsV2 request's parameters: what remote_list_query encodes. */
typedef struct remote_list_request {
  const char *prefix;             /* NULL: none (the whole bucket); "" is sent as an empty prefix= */
  const char *delimiter;          /* NULL: a flat listing; "/" groups by folder into CommonPrefixes */
  const char *continuation_token; /* NULL: the first page; else the previous page's next_token */
  uint32_t max_keys;              /* 0: the server's default (S3: 1000, also its largest) */
  int url_encoding;               /* ask for encoding-type=url, as botocore always does: keys holding
                                   * characters XML 1.0 cannot carry then list too */
} remote_list_request;

/* Parse one ListObjectsV2 response body xml[0..len) (no NUL needed) into *page (set up here; free it with
 * remote_list_page_free). Within the limits above; IsTruncated required, true only with a token. */
int remote_list_parse(const char *xml, size_t len, remote_list_page *page, char *err, size_t errlen);
/* Free what a page holds and zero it (a zeroed page is fine; so is one a failed parse left). */
void remote_list_page_free(remote_list_page *page);

/* 0 when xml[0..len) is an S3 <Error> body: its <Code> into code and <Message> into msg (each cut to fit
 * its cap, "" when absent). BFEED_EIO when it is not one (not XML, another root, over the limits). */
int remote_list_error(const char *xml, size_t len, char *code, size_t codecap, char *msg, size_t msgcap);

/* The query string of a ListObjectsV2 request (no '?') into *out (malloc'd, the caller frees): list-type=2
 * and rq's parameters. prefix and delimiter at most REMOTE_LIST_KEY_MAX bytes, the token
 * REMOTE_LIST_TEXT_MAX (else BFEED_EINVAL); BFEED_ENOMEM.
 *
 * It is already SigV4's canonical query string: parameters sorted by name, every value percent-encoded
 * byte by byte with RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~) kept and everything else
 * %XX in uppercase hex ('/' and ' ' too: %2F, %20, never '+'). libcurl's CURLOPT_AWS_SIGV4 signs the
 * query its URL carries -- some versions as it stands, later ones sorted and re-encoded -- so only a
 * query already canonical signs the same either way as S3 checks it (and as botocore signs it). */
int remote_list_query(const remote_list_request *rq, char **out, char *err, size_t errlen);

/* key as it goes in a URL's path (malloc'd, NULL when out of memory): unreserved characters and '/'
 * kept, every other byte %XX uppercase, which is also the canonical URI S3's SigV4 wants. Keys with
 * "." or ".." segments or "//" reach S3 only if curl leaves the path alone (CURLOPT_PATH_AS_IS). */
char *remote_list_encode_key(const char *key);

#endif
