/*
 * remote_list.c -- ListObjectsV2: the request's query string, the
 * response's parse (see remote_list.h).
 *
 * The parse is one pass of expat's callbacks over a stack of roles: each
 * open element's role comes from its parent's role and its local name, so
 * that an element is only ever read where the listing puts it (a <Key>
 * inside <Owner> is not an object's key) and whatever S3 adds later
 * (ChecksumAlgorithm, RestoreStatus, Owner) is skipped. Text is gathered
 * into one fixed buffer, so the limit on it costs no allocation; an
 * entry's Size and LastModified are checked when its </Contents> closes,
 * when its key is known for the message (S3 sends Key first, the schema
 * does not promise it).
 */
#include "remote_list.h"

#include <expat.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "errtext.h"

#define REMOTE_LIST_WHERE "ListObjectsV2 response"
/* Between a namespace URI and the local name in what expat reports. No
 * XML 1.0 document can carry U+0001, not even as &#1;, so no URI holds it
 * and the local name is whatever follows the last one. */
#define REMOTE_LIST_NS_SEP '\x01'
/* expat takes an int length: a larger body goes in pieces. */
#define REMOTE_LIST_CHUNK ((size_t)1 << 30)

typedef enum remote_list_role {
  RL_SKIP = 0, /* an element the listing does not need, and all below it */
  RL_ROOT,     /* <ListBucketResult> */
  RL_CONTENTS,
  RL_COMMON,   /* <CommonPrefixes> */
  /* Leaves: their text is kept; an element inside one is refused. */
  RL_KEY,
  RL_SIZE,
  RL_ETAG,
  RL_MTIME,
  RL_PREFIX, /* <CommonPrefixes><Prefix> */
  RL_TRUNCATED,
  RL_TOKEN,  /* <NextContinuationToken> */
  RL_COUNT,  /* <KeyCount> */
  RL_ENCODING,
  RL_ERROR,  /* <Error>, remote_list_error's root */
  RL_CODE,
  RL_MESSAGE
} remote_list_role;

static const char *const remote_list_names[] = {
    [RL_KEY] = "Key", [RL_SIZE] = "Size", [RL_ETAG] = "ETag", [RL_MTIME] = "LastModified",
    [RL_PREFIX] = "Prefix", [RL_TRUNCATED] = "IsTruncated", [RL_TOKEN] = "NextContinuationToken",
    [RL_COUNT] = "KeyCount", [RL_ENCODING] = "EncodingType", [RL_CODE] = "Code", [RL_MESSAGE] = "Message"};

/* Which of an entry's (or the page's) fields have been seen: a second one is refused. */
#define RL_SEEN(role) (1u << (role))

typedef struct remote_list_state {
  XML_Parser xp;
  int want_error; /* remote_list_error: the root is <Error> */
  int rc;         /* the first failure; the parse stops at it */
  char *err;
  size_t errlen;
  int depth;
  unsigned char role[REMOTE_LIST_DEPTH_MAX];
  char text[REMOTE_LIST_TEXT_MAX + 1];
  size_t tlen; /* bytes of the innermost element's text so far (kept only in a leaf) */
  remote_list_page *page;
  unsigned page_seen;
  remote_list_entry cur; /* the <Contents> being read */
  unsigned cur_seen;
  char size_text[32]; /* the Size as given, cut to fit */
  int size_cut, mtime_cut; /* the Size or LastModified was cut: never a valid one */
  char *cur_prefix;   /* the <CommonPrefixes> being read */
  char *code, *msg;   /* remote_list_error's buffers */
  size_t codecap, msgcap;
} remote_list_state;

/* Record the first failure, at expat's current line, and stop the parse.
 * expat may still call a handler or two after XML_StopParser: each checks
 * s->rc first. */
__attribute__((format(printf, 3, 4))) static int remote_list_fail(remote_list_state *s, int code, const char *fmt,
                                                                   ...) {
  if (s->rc) return s->rc;
  s->rc = code;
  if (s->err && s->errlen) {
    int n = snprintf(s->err, s->errlen, "%s: line %lu: ", REMOTE_LIST_WHERE,
                     (unsigned long)XML_GetCurrentLineNumber(s->xp));
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < s->errlen) vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  XML_StopParser(s->xp, XML_FALSE);
  return code;
}

static int remote_list_nomem(remote_list_state *s) { return remote_list_fail(s, BFEED_ENOMEM, "out of memory"); }

static const char *remote_list_local(const XML_Char *name) {
  const char *sep = strrchr(name, REMOTE_LIST_NS_SEP);
  return sep ? sep + 1 : name;
}

static int remote_list_is_leaf(int role) { return role >= RL_KEY && role != RL_ERROR; }

/* The role of an element named `local` inside one of role `parent`. */
static int remote_list_child(int parent, const char *local) {
  switch (parent) {
  case RL_ROOT:
    if (!strcmp(local, "Contents")) return RL_CONTENTS;
    if (!strcmp(local, "CommonPrefixes")) return RL_COMMON;
    if (!strcmp(local, "IsTruncated")) return RL_TRUNCATED;
    if (!strcmp(local, "NextContinuationToken")) return RL_TOKEN;
    if (!strcmp(local, "KeyCount")) return RL_COUNT;
    if (!strcmp(local, "EncodingType")) return RL_ENCODING;
    return RL_SKIP;
  case RL_CONTENTS:
    if (!strcmp(local, "Key")) return RL_KEY;
    if (!strcmp(local, "Size")) return RL_SIZE;
    if (!strcmp(local, "ETag")) return RL_ETAG;
    if (!strcmp(local, "LastModified")) return RL_MTIME;
    return RL_SKIP;
  case RL_COMMON:
    return !strcmp(local, "Prefix") ? RL_PREFIX : RL_SKIP;
  case RL_ERROR:
    if (!strcmp(local, "Code")) return RL_CODE;
    if (!strcmp(local, "Message")) return RL_MESSAGE;
    return RL_SKIP;
  default:
    return RL_SKIP;
  }
}

static void XMLCALL remote_list_start(void *ud, const XML_Char *name, const XML_Char **atts) {
  remote_list_state *s = ud;
  (void)atts;
  if (s->rc) return;
  const char *local = remote_list_local(name);
  int role;
  if (s->depth == 0) {
    const char *want = s->want_error ? "Error" : "ListBucketResult";
    if (strcmp(local, want) != 0) {
      remote_list_fail(s, BFEED_EIO, "the root element is <%.64s>, not <%s>", local, want);
      return;
    }
    role = s->want_error ? RL_ERROR : RL_ROOT;
  } else {
    int parent = s->role[s->depth - 1];
    if (remote_list_is_leaf(parent)) {
      remote_list_fail(s, BFEED_EIO, "an element <%.64s> inside <%s>", local, remote_list_names[parent]);
      return;
    }
    role = remote_list_child(parent, local);
  }
  if (s->depth == REMOTE_LIST_DEPTH_MAX) {
    remote_list_fail(s, BFEED_EIO, "elements nested over %d deep", REMOTE_LIST_DEPTH_MAX);
    return;
  }
  if (role == RL_CONTENTS) {
    memset(&s->cur, 0, sizeof s->cur);
    s->cur_seen = 0;
    s->size_text[0] = 0;
    s->size_cut = s->mtime_cut = 0;
  }
  s->role[s->depth++] = (unsigned char)role;
  s->tlen = 0;
}

static void XMLCALL remote_list_chars(void *ud, const XML_Char *t, int len) {
  remote_list_state *s = ud;
  if (s->rc || s->depth == 0 || len <= 0) return;
  if (s->tlen + (size_t)len > REMOTE_LIST_TEXT_MAX) {
    int role = s->role[s->depth - 1];
    if (remote_list_is_leaf(role))
      remote_list_fail(s, BFEED_EIO, "the text of <%s> runs over %d bytes", remote_list_names[role],
                       REMOTE_LIST_TEXT_MAX);
    else
      remote_list_fail(s, BFEED_EIO, "the text of an element runs over %d bytes", REMOTE_LIST_TEXT_MAX);
    return;
  }
  if (remote_list_is_leaf(s->role[s->depth - 1])) memcpy(s->text + s->tlen, t, (size_t)len);
  s->tlen += (size_t)len;
}

/* Copy src into dst[cap], cut to fit, always terminated (cap > 0). */
static void remote_list_copy(char *dst, size_t cap, const char *src, size_t n) {
  if (!dst || cap == 0) return;
  if (n >= cap) n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

/* text as an unsigned decimal (no sign, no space, no overflow); 0 or -1. */
static int remote_list_u64(const char *t, uint64_t *out) {
  uint64_t v = 0;
  if (!*t) return -1;
  for (; *t; t++) {
    if (*t < '0' || *t > '9' || v > (UINT64_MAX - (uint64_t)(*t - '0')) / 10) return -1;
    v = v * 10 + (uint64_t)(*t - '0');
  }
  *out = v;
  return 0;
}

/* Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic
 * Gregorian date, with no table and no timegm (which reads the process's
 * time zone state). */
static int64_t remote_list_days(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* n digits at *p as a number, *p moved past them; -1 unless all n are digits. */
static int remote_list_digits(const char **p, int n) {
  int v = 0;
  for (int i = 0; i < n; i++, (*p)++) {
    if (**p < '0' || **p > '9') return -1;
    v = v * 10 + (**p - '0');
  }
  return v;
}

/* An ISO-8601 time as S3 writes it, YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM),
 * to Unix seconds and nanoseconds (digits past the ninth dropped); 0 or -1. */
static int remote_list_time(const char *t, int64_t *sec, int64_t *nsec) {
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *p = t;
  int y = remote_list_digits(&p, 4);
  if (y < 0 || *p++ != '-') return -1;
  int mo = remote_list_digits(&p, 2);
  if (mo < 1 || mo > 12 || *p++ != '-') return -1;
  int d = remote_list_digits(&p, 2);
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || (*p != 'T' && *p != 't')) return -1;
  p++;
  int h = remote_list_digits(&p, 2);
  if (h < 0 || h > 23 || *p++ != ':') return -1;
  int mi = remote_list_digits(&p, 2);
  if (mi < 0 || mi > 59 || *p++ != ':') return -1;
  int s = remote_list_digits(&p, 2);
  if (s < 0 || s > 60) return -1; /* 60: a leap second, which Unix time folds into the next */
  int64_t ns = 0;
  if (*p == '.') {
    int nd = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, nd++)
      if (nd < 9) ns = ns * 10 + (*p - '0');
    if (nd == 0) return -1;
    for (; nd < 9; nd++) ns *= 10;
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1;
    int oh = remote_list_digits(&p, 2);
    if (oh < 0 || oh > 23 || *p++ != ':') return -1;
    int om = remote_list_digits(&p, 2);
    if (om < 0 || om > 59) return -1;
    off = sign * (oh * 3600 + om * 60);
  } else {
    return -1; /* a time without a zone is no time at all */
  }
  if (*p) return -1;
  *sec = remote_list_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off;
  *nsec = ns;
  return 0;
}

/* The closing </Contents>: check the entry and keep it. */
static int remote_list_end_contents(remote_list_state *s) {
  remote_list_entry *e = &s->cur;
  remote_list_page *pg = s->page;
  if (!(s->cur_seen & RL_SEEN(RL_KEY))) return remote_list_fail(s, BFEED_EIO, "<Contents> without a <Key>");
  if (!(s->cur_seen & RL_SEEN(RL_SIZE)))
    return remote_list_fail(s, BFEED_EIO, "object \"%s\": <Contents> without a <Size>", e->key);
  if (s->size_cut || remote_list_u64(s->size_text, &e->size) < 0)
    return remote_list_fail(s, BFEED_EIO, "object \"%s\": Size \"%s%s\" is not a number of bytes", e->key,
                            s->size_text, s->size_cut ? "..." : "");
  if ((s->cur_seen & RL_SEEN(RL_MTIME)) &&
      (s->mtime_cut || remote_list_time(e->last_modified, &e->mtime_s, &e->mtime_ns) < 0))
    return remote_list_fail(s, BFEED_EIO, "object \"%s\": LastModified \"%s%s\" is not an ISO-8601 time", e->key,
                            e->last_modified, s->mtime_cut ? "..." : "");
  if (!e->etag && !(e->etag = strdup(""))) return remote_list_nomem(s);
  if (pg->n_entries + pg->prefixes.n >= REMOTE_LIST_ITEMS_MAX)
    return remote_list_fail(s, BFEED_EIO, "over %d entries in one page", REMOTE_LIST_ITEMS_MAX);
  if (pg->n_entries == pg->cap_entries) {
    size_t cap = pg->cap_entries ? 2 * pg->cap_entries : 64;
    remote_list_entry *v = realloc(pg->entries, cap * sizeof *v);
    if (!v) return remote_list_nomem(s);
    pg->entries = v;
    pg->cap_entries = cap;
  }
  pg->entries[pg->n_entries++] = *e;
  memset(e, 0, sizeof *e); /* the page owns its strings now */
  return 0;
}

/* The closing </CommonPrefixes>: keep its prefix. */
static int remote_list_end_common(remote_list_state *s) {
  if (!s->cur_prefix) return remote_list_fail(s, BFEED_EIO, "<CommonPrefixes> without a <Prefix>");
  if (s->page->n_entries + s->page->prefixes.n >= REMOTE_LIST_ITEMS_MAX)
    return remote_list_fail(s, BFEED_EIO, "over %d entries in one page", REMOTE_LIST_ITEMS_MAX);
  char *p = s->cur_prefix;
  s->cur_prefix = NULL;
  return strlist_push(&s->page->prefixes, p) < 0 ? remote_list_nomem(s) : 0;
}

/* Whether the leaf `role` closing now is a second one where one is allowed
 * (an entry's fields, the page's): a response that says two things. */
static int remote_list_twice(remote_list_state *s, int role) {
  if (role == RL_PREFIX) return s->cur_prefix != NULL; /* one per <CommonPrefixes> */
  if (role == RL_CODE || role == RL_MESSAGE) return 0; /* an error body: the last one says it */
  unsigned *seen = role < RL_PREFIX ? &s->cur_seen : &s->page_seen;
  int twice = (*seen & RL_SEEN(role)) != 0;
  *seen |= RL_SEEN(role);
  return twice;
}

/* A leaf's text, s->text[0..s->tlen), where its role says. */
static int remote_list_end_leaf(remote_list_state *s, int role) {
  const char *t = s->text;
  size_t n = s->tlen;
  if (remote_list_twice(s, role)) return remote_list_fail(s, BFEED_EIO, "a second <%s>", remote_list_names[role]);
  s->text[n] = 0;
  switch (role) {
  case RL_KEY:
    return (s->cur.key = strndup(t, n)) ? 0 : remote_list_nomem(s);
  case RL_SIZE:
    s->size_cut = n >= sizeof s->size_text; /* cut, it could read as a number it is not */
    remote_list_copy(s->size_text, sizeof s->size_text, t, n);
    return 0;
  case RL_ETAG:
    if (n >= 2 && t[0] == '"' && t[n - 1] == '"') t++, n -= 2; /* &quot; is a '"' by now too */
    return (s->cur.etag = strndup(t, n)) ? 0 : remote_list_nomem(s);
  case RL_MTIME:
    s->mtime_cut = n >= REMOTE_LIST_TIME_MAX;
    remote_list_copy(s->cur.last_modified, REMOTE_LIST_TIME_MAX, t, n);
    return 0;
  case RL_PREFIX:
    return (s->cur_prefix = strndup(t, n)) ? 0 : remote_list_nomem(s);
  case RL_TRUNCATED:
    if (strcmp(t, "true") != 0 && strcmp(t, "false") != 0)
      return remote_list_fail(s, BFEED_EIO, "IsTruncated \"%.64s\" is neither true nor false", t);
    s->page->is_truncated = t[0] == 't';
    return 0;
  case RL_TOKEN:
    return (s->page->next_token = strndup(t, n)) ? 0 : remote_list_nomem(s);
  case RL_COUNT: {
    uint64_t v;
    if (remote_list_u64(t, &v) < 0 || v > INT64_MAX)
      return remote_list_fail(s, BFEED_EIO, "KeyCount \"%.64s\" is not a count", t);
    s->page->key_count = (int64_t)v;
    return 0;
  }
  case RL_ENCODING:
    /* Only url is defined; names in another encoding could not be read. */
    if (strcmp(t, "url") != 0) return remote_list_fail(s, BFEED_EIO, "EncodingType \"%.64s\" is not url", t);
    s->page->url_encoded = 1;
    return 0;
  case RL_CODE:
    remote_list_copy(s->code, s->codecap, t, n);
    return 0;
  case RL_MESSAGE:
    remote_list_copy(s->msg, s->msgcap, t, n);
    return 0;
  }
  return 0;
}

static void XMLCALL remote_list_end(void *ud, const XML_Char *name) {
  remote_list_state *s = ud;
  (void)name;
  if (s->rc || s->depth == 0) return;
  int role = s->role[--s->depth];
  if (remote_list_is_leaf(role)) remote_list_end_leaf(s, role);
  else if (role == RL_CONTENTS) remote_list_end_contents(s);
  else if (role == RL_COMMON) remote_list_end_common(s);
  s->tlen = 0;
}

static void XMLCALL remote_list_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                        const XML_Char *pubid, int has_internal_subset) {
  (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
  remote_list_fail(ud, BFEED_EIO, "a DOCTYPE declaration (refused: a listing has none, and its entities could "
                                  "expand without bound)");
}

/* Never reached while DOCTYPEs are refused; kept so that no entity is ever
 * declared even if the DOCTYPE handler were to change. */
static void XMLCALL remote_list_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                                       int value_len, const XML_Char *base, const XML_Char *sysid,
                                       const XML_Char *pubid, const XML_Char *notation) {
  (void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)sysid, (void)pubid, (void)notation;
  remote_list_fail(ud, BFEED_EIO, "an entity declaration (refused)");
}

/* Run expat over xml[0..len) with s's handlers; 0 or the failure, with its message. */
static int remote_list_run(remote_list_state *s, const char *xml, size_t len) {
  s->xp = XML_ParserCreateNS(NULL, REMOTE_LIST_NS_SEP);
  if (!s->xp) return snprintf(s->err, s->errlen, "%s: out of memory", REMOTE_LIST_WHERE), BFEED_ENOMEM;
  XML_SetUserData(s->xp, s);
  XML_SetElementHandler(s->xp, remote_list_start, remote_list_end);
  XML_SetCharacterDataHandler(s->xp, remote_list_chars);
  XML_SetStartDoctypeDeclHandler(s->xp, remote_list_doctype);
  XML_SetEntityDeclHandler(s->xp, remote_list_entity);
  XML_SetParamEntityParsing(s->xp, XML_PARAM_ENTITY_PARSING_NEVER);
  size_t off = 0;
  enum XML_Status st = XML_STATUS_OK;
  do {
    size_t n = len - off < REMOTE_LIST_CHUNK ? len - off : REMOTE_LIST_CHUNK;
    st = XML_Parse(s->xp, xml ? xml + off : "", (int)n, off + n == len);
    off += n;
  } while (st == XML_STATUS_OK && off < len);
  if (st != XML_STATUS_OK && !s->rc) {
    enum XML_Error e = XML_GetErrorCode(s->xp);
    s->rc = e == XML_ERROR_NO_MEMORY ? BFEED_ENOMEM : BFEED_EIO;
    if (s->err && s->errlen)
      snprintf(s->err, s->errlen, "%s: line %lu: %s", REMOTE_LIST_WHERE,
               (unsigned long)XML_GetCurrentLineNumber(s->xp), XML_ErrorString(e));
  }
  XML_ParserFree(s->xp);
  s->xp = NULL;
  free(s->cur.key);
  free(s->cur.etag);
  free(s->cur_prefix);
  s->cur.key = s->cur.etag = s->cur_prefix = NULL;
  return s->rc;
}

static int remote_list_hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode a name S3 sent with EncodingType url, in place: %XX, '+' a space
 * (botocore's unquote_plus). 0, or -1 for a bad escape or a NUL byte, the
 * name left as it was for the message. */
static int remote_list_unescape(char *s) {
  for (const char *r = s; *r; r++)
    if (*r == '%' && (remote_list_hexval(r[1]) < 0 || remote_list_hexval(r[2]) < 0 || (r[1] == '0' && r[2] == '0')))
      return -1;
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (*r == '%') {
      *w++ = (char)(remote_list_hexval(r[1]) * 16 + remote_list_hexval(r[2]));
      r += 2;
    } else {
      *w++ = *r == '+' ? ' ' : *r;
    }
  }
  *w = 0;
  return 0;
}

int remote_list_parse(const char *xml, size_t len, remote_list_page *page, char *err, size_t errlen) {
  memset(page, 0, sizeof *page);
  page->key_count = -1;
  remote_list_state *s = calloc(1, sizeof *s); /* 4 KiB of text buffer: off the caller's stack */
  if (!s) return snprintf(err, errlen, "%s: out of memory", REMOTE_LIST_WHERE), BFEED_ENOMEM;
  s->err = err;
  s->errlen = errlen;
  s->page = page;
  int rc = remote_list_run(s, xml, len);
  unsigned seen = s->page_seen;
  free(s);
  if (rc == 0 && !(seen & RL_SEEN(RL_TRUNCATED)))
    rc = errtext_set(err, errlen, BFEED_EIO, REMOTE_LIST_WHERE, ": no <IsTruncated> (is the listing complete?)");
  /* Without a token a truncated listing could not go on: its other pages
   * would be lost without a word. */
  if (rc == 0 && page->is_truncated && (!page->next_token || !page->next_token[0]))
    rc = errtext_set(err, errlen, BFEED_EIO, REMOTE_LIST_WHERE,
                     ": IsTruncated is true but there is no NextContinuationToken");
  /* After the whole document: EncodingType may come after the names. */
  for (size_t i = 0; rc == 0 && page->url_encoded && i < page->n_entries; i++)
    if (remote_list_unescape(page->entries[i].key) < 0)
      rc = errtext_set(err, errlen, BFEED_EIO, REMOTE_LIST_WHERE,
                       ": object \"%s\": a bad %%-escape in a url-encoded key", page->entries[i].key);
  for (size_t i = 0; rc == 0 && page->url_encoded && i < page->prefixes.n; i++)
    if (remote_list_unescape(page->prefixes.v[i]) < 0)
      rc = errtext_set(err, errlen, BFEED_EIO, REMOTE_LIST_WHERE,
                       ": prefix \"%s\": a bad %%-escape in a url-encoded prefix", page->prefixes.v[i]);
  if (rc < 0) remote_list_page_free(page);
  return rc;
}

void remote_list_page_free(remote_list_page *page) {
  for (size_t i = 0; i < page->n_entries; i++) free(page->entries[i].key), free(page->entries[i].etag);
  free(page->entries);
  strlist_free(&page->prefixes);
  free(page->next_token);
  memset(page, 0, sizeof *page);
  page->key_count = -1;
}

int remote_list_error(const char *xml, size_t len, char *code, size_t codecap, char *msg, size_t msgcap) {
  remote_list_copy(code, codecap, "", 0);
  remote_list_copy(msg, msgcap, "", 0);
  remote_list_state *s = calloc(1, sizeof *s);
  if (!s) return BFEED_ENOMEM;
  remote_list_page unused;
  memset(&unused, 0, sizeof unused);
  s->want_error = 1;
  s->page = &unused;
  s->code = code, s->codecap = codecap, s->msg = msg, s->msgcap = msgcap;
  int rc = remote_list_run(s, xml, len);
  free(s);
  remote_list_page_free(&unused);
  return rc == BFEED_ENOMEM ? rc : rc < 0 ? BFEED_EIO : 0;
}

/* RFC 3986's unreserved characters: the only ones SigV4 leaves as they are. */
static int remote_list_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

/* s percent-encoded onto out (room for 3 * strlen(s)); the end of what was written. */
static char *remote_list_pct(char *out, const char *s, int keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (remote_list_unreserved(*p) || (keep_slash && *p == '/')) {
      *out++ = (char)*p;
    } else {
      *out++ = '%';
      *out++ = hex[*p >> 4];
      *out++ = hex[*p & 15];
    }
  }
  return out;
}

int remote_list_query(const remote_list_request *rq, char **out, char *err, size_t errlen) {
  *out = NULL;
  size_t lp = rq->prefix ? strlen(rq->prefix) : 0, ld = rq->delimiter ? strlen(rq->delimiter) : 0;
  size_t lt = rq->continuation_token ? strlen(rq->continuation_token) : 0;
  if (lp > REMOTE_LIST_KEY_MAX)
    return snprintf(err, errlen, "ListObjectsV2 request: the prefix is %zu bytes, over S3's %d", lp,
                    REMOTE_LIST_KEY_MAX), BFEED_EINVAL;
  if (ld > REMOTE_LIST_KEY_MAX)
    return snprintf(err, errlen, "ListObjectsV2 request: the delimiter is %zu bytes, over %d", ld, REMOTE_LIST_KEY_MAX),
           BFEED_EINVAL;
  if (lt > REMOTE_LIST_TEXT_MAX)
    return snprintf(err, errlen, "ListObjectsV2 request: the continuation token is %zu bytes, over %d", lt,
                    REMOTE_LIST_TEXT_MAX), BFEED_EINVAL;
  /* Every value at most tripled, plus the names and separators (< 128). */
  char *q = malloc(3 * (lp + ld + lt) + 128), *w = q;
  if (!q) return snprintf(err, errlen, "ListObjectsV2 request: out of memory"), BFEED_ENOMEM;
  /* In SigV4's order: by name, bytewise. */
  if (rq->continuation_token) w = remote_list_pct(stpcpy(w, "continuation-token="), rq->continuation_token, 0);
  if (rq->delimiter) w = remote_list_pct(stpcpy(w, w > q ? "&delimiter=" : "delimiter="), rq->delimiter, 0);
  if (rq->url_encoding) w = stpcpy(w, w > q ? "&encoding-type=url" : "encoding-type=url");
  w = stpcpy(w, w > q ? "&list-type=2" : "list-type=2");
  if (rq->max_keys) w += sprintf(w, "&max-keys=%u", (unsigned)rq->max_keys);
  if (rq->prefix) w = remote_list_pct(stpcpy(w, "&prefix="), rq->prefix, 0);
  *w = 0;
  *out = q;
  return 0;
}

char *remote_list_encode_key(const char *key) {
  size_t n = strlen(key);
  char *out = n < SIZE_MAX / 3 ? malloc(3 * n + 1) : NULL;
  if (out) *remote_list_pct(out, key, 1) = 0;
  return out;
}
