/* config.c -- see config.h */
#include "config.h"

#include <ini.h>
#include <limits.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "image_decode.h"
#include "log.h"
#include "token.h"

const config_key config_keys[] = {
    {"listen", "ADDR", "unix:PATH or HOST:PORT to serve on (repeatable)"},
    {"metrics_listen", "HOST:PORT", "serve Prometheus metrics at http://HOST:PORT/metrics"},
    {"workers", "N", "decoding threads, 0 = one per core (0)"},
    {"cache_dir", "DIR", "where converted word-vector tables, shard indexes and remote blocks (DIR/remote) are kept"},
    {"cache_max_bytes", "BYTES", "bound of the remote objects' block cache: memory, or DIR/remote with cache_dir (256M)"},
    {"remote_parallel", "N", "read-ahead requests in flight to object stores and HTTP servers, 1..64 (8)"},
    {"remote_timeout", "SECONDS", "one try of a remote request, 1..3600 (30)"},
    {"remote_retries", "N", "tries after the first of a remote request that fails for a reason of the moment (5)"},
    {"max_clients", "N", "connections at once (64)"},
    {"max_streams", "N", "streams per connection (16)"},
    {"max_window", "N", "largest prefetch window a stream may ask for, 1..64 (64)"},
    {"share_horizon", "N", "batches a shared batch waits for identical streams behind, 0..4096; 0 = 2 x window (0)"},
    {"max_memory", "BYTES", "bytes held for clients at once, e.g. 2G; 0 = no limit (2G)"},
    {"max_decode_memory", "BYTES", "memory one image decode may take; larger images are skipped (256M)"},
    {"max_pixels", "N", "images with more pixels are skipped, from their header; 0 = no limit (178956970)"},
    {"log_level", "LEVEL", "error, warning, notice, info or debug (info)"},
    {"handshake_timeout", "SECONDS", "close a connection that sends no HELLO in time, 0 = never (10)"},
    {"idle_timeout", "SECONDS", "close a connection without streams silent this long, 0 = never (300)"},
    {"shutdown_timeout", "SECONDS", "on SIGTERM, wait this long for a batch being read, then exit anyway (5)"},
    {"socket_mode", "MODE", "file mode of the Unix sockets created, octal (0660)"},
    {"socket_group", "GROUP", "group of the Unix sockets created (default: the daemon's)"},
    {"auth_token_file", "FILE", "TCP clients must present the token in FILE (default: none)"},
    {"skipped_log", "FILE", "append each skipped sample (dataset, index, reason, file, message) to FILE; reopened on reload"},
    {NULL, NULL, NULL}};

void config_init(config *c) {
  memset(c, 0, sizeof *c);
  c->workers = 0;
  c->max_clients = 64;
  c->max_streams = 16;
  c->max_window = 64;
  c->max_memory = 2ull << 30;
  c->max_pixels = IMAGE_DECODE_MAX_PIXELS_DEFAULT; /* Pillow's decompression-bomb limit */
  c->max_decode_memory = 256ull << 20;
  c->log_level = LOG_INFO;
  c->handshake_timeout = 10;
  c->idle_timeout = 300;
  c->shutdown_timeout = 5;
  c->socket_mode = 0660;
  c->cache_max_bytes = 256ull << 20;
  c->remote_parallel = 8;
  c->remote_timeout = 30;
  c->remote_retries = 5;
}

/* 1234, 64K, 512M, 2G (powers of 1024); past 2^64 - 1 is refused, not
 * saturated (strtoull's ERANGE). */
static int parse_bytes(const char *v, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *v == '-' || end == v || errno == ERANGE) return BFEED_EINVAL;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  else if (*end == 'T' || *end == 't') shift = 40, end++;
  if (*end || x > (UINT64_MAX >> shift)) return BFEED_EINVAL;
  *out = (uint64_t)x << shift;
  return 0;
}

int config_dataset_same(const config *a, const config *b, const char *name) {
  const config_dataset *x = NULL, *y = NULL;
  for (size_t i = 0; i < a->ndatasets; i++)
    if (strcmp(a->datasets[i].name, name) == 0) x = &a->datasets[i];
  for (size_t i = 0; i < b->ndatasets; i++)
    if (strcmp(b->datasets[i].name, name) == 0) y = &b->datasets[i];
  if (!x || !y || x->nkv != y->nkv) return 0;
  for (size_t k = 0; k < x->nkv; k++)
    if (strcmp(x->keys[k], y->keys[k]) != 0 || strcmp(x->values[k], y->values[k]) != 0) return 0;
  return 1;
}

void config_clear_listen(config *c) {
  for (size_t i = 0; i < c->nlisten; i++) free(c->listen[i]);
  free(c->listen);
  c->listen = NULL;
  c->nlisten = 0;
}

static void dataset_clear(config_dataset *d) {
  for (size_t k = 0; k < d->nkv; k++) {
    free(d->keys[k]);
    free(d->values[k]);
    free(d->wheres[k]);
  }
  free(d->keys);
  free(d->values);
  free(d->wheres);
  d->keys = d->values = d->wheres = NULL;
  d->nkv = 0;
}

void config_free(config *c) {
  config_clear_listen(c);
  free(c->metrics_listen);
  free(c->cache_dir);
  free(c->socket_group);
  free(c->auth_token_file);
  free(c->skipped_log);
  for (size_t i = 0; i < c->ndatasets; i++) {
    dataset_clear(&c->datasets[i]);
    free(c->datasets[i].name);
  }
  free(c->datasets);
  memset(c, 0, sizeof *c);
}

static int parse_int(const char *v, int lo, int hi, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < lo || x > hi) return BFEED_EINVAL;
  *out = (int)x;
  return 0;
}

static int find_or_add(config *c, const char *name, config_dataset **out, char *err, size_t errlen) {
  if (!*name || strlen(name) >= 128 || strpbrk(name, "=[] \t"))
    return snprintf(err, errlen, "dataset name '%s' must be 1..127 characters without '=', brackets or blanks", name),
           BFEED_EINVAL;
  for (size_t i = 0; i < c->ndatasets; i++)
    if (strcmp(c->datasets[i].name, name) == 0) return *out = &c->datasets[i], 0;
  config_dataset *d = realloc(c->datasets, (c->ndatasets + 1) * sizeof *d);
  if (!d) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  c->datasets = d;
  d += c->ndatasets;
  memset(d, 0, sizeof *d);
  if (!(d->name = strdup(name))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  c->ndatasets++;
  *out = d;
  return 0;
}

/* Append a copy of s to v[n]; on failure v is still valid (and n items). */
static int push(char ***v, size_t n, const char *s) {
  char **nv = realloc(*v, (n + 1) * sizeof *nv);
  if (!nv) return BFEED_ENOMEM;
  *v = nv;
  return (nv[n] = strdup(s)) ? 0 : BFEED_ENOMEM;
}

int config_dataset_set(config *c, const char *name, const char *key, const char *value, const char *where,
                       char *err, size_t errlen) {
  config_dataset *d;
  int rc = find_or_add(c, name, &d, err, errlen);
  if (rc < 0) return rc;
  for (size_t k = 0; k < d->nkv; k++)
    if (strcmp(d->keys[k], key) == 0)
      return snprintf(err, errlen, "%s: dataset %s: key '%s' given twice", where, name, key), BFEED_EINVAL;
  if (push(&d->keys, d->nkv, key) < 0 || push(&d->values, d->nkv, value) < 0 || push(&d->wheres, d->nkv, where) < 0)
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  d->nkv++;
  return 0;
}

int config_dataset_flag(config *c, const char *arg, char *err, size_t errlen) {
  char buf[4096], where[160];
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg) return snprintf(err, errlen, "--dataset %s: expected NAME=DIR or NAME=KIND:PATH[,key=value...]", arg), BFEED_EINVAL;
  if (strlen(arg) >= sizeof buf) return snprintf(err, errlen, "--dataset: argument too long"), BFEED_EINVAL;
  snprintf(buf, sizeof buf, "%.*s", (int)(eq - arg), arg);
  snprintf(where, sizeof where, "--dataset %s", buf);
  config_dataset *d;
  int rc = find_or_add(c, buf, &d, err, errlen);
  if (rc < 0) return rc;
  dataset_clear(d); /* a flag replaces the file's settings of that dataset */
  char name[128];
  snprintf(name, sizeof name, "%s", buf);
  snprintf(buf, sizeof buf, "%s", eq + 1);
  /* KIND:PATH when what precedes the first ':' is a plain word (so that a
   * path such as ./a:b still works with kind = image by default). */
  char *spec = buf, *colon = strchr(spec, ':'), *comma = strchr(spec, ',');
  if (colon && (!comma || colon < comma) && colon > spec && strspn(spec, "abcdefghijklmnopqrstuvwxyz") == (size_t)(colon - spec)) {
    *colon = 0;
    if ((rc = config_dataset_set(c, name, "kind", spec, where, err, errlen)) < 0) return rc;
    spec = colon + 1;
  }
  char *rest = strchr(spec, ',');
  if (rest) *rest++ = 0;
  if ((rc = config_dataset_set(c, name, "path", spec, where, err, errlen)) < 0) return rc;
  while (rest && *rest) {
    char *item = rest;
    rest = strchr(rest, ',');
    if (rest) *rest++ = 0;
    char *e = strchr(item, '=');
    if (!e) return snprintf(err, errlen, "%s: '%s' is not key=value", where, item), BFEED_EINVAL;
    *e = 0;
    if ((rc = config_dataset_set(c, name, item, e + 1, where, err, errlen)) < 0) return rc;
  }
  return 0;
}

/* The whole-number keys: where each goes and the range it takes. */
typedef struct int_key {
  const char *key;
  int lo, hi;
  size_t offset;
  const char *range;
} int_key;

static const int_key int_keys[] = {
    {"workers", 0, 1024, offsetof(config, workers), "0 (all cores) to 1024"},
    {"max_clients", 1, 100000, offsetof(config, max_clients), "1 to 100000"},
    {"max_streams", 1, 64, offsetof(config, max_streams), "1 to 64"},
    {"max_window", 1, 64, offsetof(config, max_window), "1 to 64"},
    {"share_horizon", 0, 4096, offsetof(config, share_horizon), "0 (twice the window) to 4096 batches"},
    {"handshake_timeout", 0, 3600, offsetof(config, handshake_timeout), "0 (never) to 3600 seconds"},
    {"idle_timeout", 0, 86400, offsetof(config, idle_timeout), "0 (never) to 86400 seconds"},
    {"shutdown_timeout", 1, 3600, offsetof(config, shutdown_timeout), "1 to 3600 seconds"},
    {"remote_parallel", 1, 64, offsetof(config, remote_parallel), "1 to 64"},
    {"remote_timeout", 1, 3600, offsetof(config, remote_timeout), "1 to 3600 seconds"},
    {"remote_retries", 0, 100, offsetof(config, remote_retries), "0 to 100"},
};

/* The keys that hold a string, and where. */
static const struct {
  const char *key;
  size_t offset;
} str_keys[] = {
    {"metrics_listen", offsetof(config, metrics_listen)},
    {"cache_dir", offsetof(config, cache_dir)},
    {"socket_group", offsetof(config, socket_group)},
    {"auth_token_file", offsetof(config, auth_token_file)},
    {"skipped_log", offsetof(config, skipped_log)},
};

int config_set(config *c, const char *key, const char *value, const char *where, char *err, size_t errlen) {
  if (strcmp(key, "listen") == 0) {
    if (push(&c->listen, c->nlisten, value) < 0) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
    c->nlisten++;
    return 0;
  }
  for (size_t i = 0; i < sizeof str_keys / sizeof str_keys[0]; i++) {
    if (strcmp(key, str_keys[i].key) != 0) continue;
    char **slot = (char **)((char *)c + str_keys[i].offset), *v = strdup(value);
    if (!v) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
    free(*slot);
    *slot = v;
    return 0;
  }
  if (strcmp(key, "socket_mode") == 0) {
    char *end;
    long m = strtol(value, &end, 8);
    if (!*value || *end || m < 0 || m > 0777)
      return snprintf(err, errlen, "%s: socket_mode = '%s': expected an octal mode such as 0660", where, value),
             BFEED_EINVAL;
    c->socket_mode = (int)m;
    return 0;
  }
  for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
    const int_key *k = &int_keys[i];
    if (strcmp(key, k->key) != 0) continue;
    if (parse_int(value, k->lo, k->hi, (int *)((char *)c + k->offset)) < 0)
      return snprintf(err, errlen, "%s: %s = '%s': expected %s", where, key, value, k->range), BFEED_EINVAL;
    return 0;
  }
  if (strcmp(key, "cache_max_bytes") == 0) {
    if (parse_bytes(value, &c->cache_max_bytes) < 0 || c->cache_max_bytes < REMOTE_CACHE_MIN_BYTES)
      return snprintf(err, errlen, "%s: cache_max_bytes = '%s': expected bytes, at least 16M, e.g. 256M or 20G", where,
                      value), BFEED_EINVAL;
    return 0;
  }
  if (strcmp(key, "max_memory") == 0 || strcmp(key, "max_decode_memory") == 0) {
    if (parse_bytes(value, key[4] == 'm' ? &c->max_memory : &c->max_decode_memory) < 0)
      return snprintf(err, errlen, "%s: %s = '%s': expected bytes, e.g. 536870912, 512M or 2G", where, key, value), BFEED_EINVAL;
    return 0;
  }
  if (strcmp(key, "max_pixels") == 0) {
    if (parse_bytes(value, &c->max_pixels) < 0)
      return snprintf(err, errlen, "%s: max_pixels = '%s': expected a number of pixels, e.g. 178956970 or 256M; 0 = no limit",
                      where, value), BFEED_EINVAL;
    return 0;
  }
  if (strcmp(key, "log_level") == 0) {
    int lv = log_level_parse(value);
    if (lv < 0)
      return snprintf(err, errlen, "%s: log_level = '%s': expected error, warning, notice, info or debug",
                      where, value), BFEED_EINVAL;
    c->log_level = lv;
    return 0;
  }
  return snprintf(err, errlen, "%s: unknown key '%s'", where, key), BFEED_EINVAL;
}

int config_read_token(const config *c, char *token, size_t cap, char *err, size_t errlen) {
  token[0] = 0;
  if (!c->auth_token_file) return 0;
  char why[160];
  int rc = token_read_file(c->auth_token_file, token, cap, why, sizeof why);
  if (rc < 0) snprintf(err, errlen, "auth_token_file %s: %s", c->auth_token_file, why);
  return rc;
}

typedef struct ini_ctx {
  config *c;
  const char *path;
  FILE *f;
  int lineno;
  char *err;
  size_t errlen;
  int failed; /* 0, or the BFEED_E* code of the first problem */
  char *line;  /* getline's buffer */
  size_t line_cap;
  char **longs; /* values too long for inih's line, handed over by number (ini_reader_long) */
  size_t nlongs;
} ini_ctx;

/* Marks a value kept aside: "\x01" then its number in x->longs. */
#define INI_LONG_MARK '\x01'

/* A `key = value` line longer than inih's fixed line buffer (200 bytes in
 * Debian's build: a deep dataset path or a long URL): the value is kept
 * here and inih gets `key = <mark><number>`, which on_ini swaps back. The
 * value is what inih would have made of it: trimmed, cut at an inline
 * " ;" comment. 0, or -1 when the line is no such line (a long section
 * header or a key with no '='), or out of memory. */
static int ini_reader_long(ini_ctx *x, char *line, char *str, int num) {
  char *eq = strpbrk(line, "=:");
  if (!eq || line[strspn(line, " \t")] == '[') return -1;
  char *v = eq + 1, *end;
  v += strspn(v, " \t");
  for (end = v; *end && *end != '\n' && *end != '\r'; end++)
    if (*end == ';' && end > v && (end[-1] == ' ' || end[-1] == '\t')) break;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
  char **grown = realloc(x->longs, (x->nlongs + 1) * sizeof *grown);
  if (!grown) return -1;
  x->longs = grown;
  if (!(x->longs[x->nlongs] = strndup(v, (size_t)(end - v)))) return -1;
  int n = snprintf(str, (size_t)num, "%.*s= %c%zu\n", (int)(eq - line), line, INI_LONG_MARK, x->nlongs);
  x->nlongs++;
  return n < num ? 0 : -1;
}

/* Debian builds inih without INI_HANDLER_LINENO, so the handler is not told
 * the line; inih reads one line per reader call and calls the handler right
 * after, so counting reader calls gives the line for error messages. */
static char *ini_reader_counting(char *str, int num, void *stream) {
  ini_ctx *x = stream;
  ssize_t n = getline(&x->line, &x->line_cap, x->f);
  if (n < 0) return NULL;
  x->lineno++;
  if (n < num) return memcpy(str, x->line, (size_t)n + 1);
  /* A line longer than inih's buffer would reach it in pieces, each read
   * as a line of its own: a value is handed over aside; anything else is
   * named here, where the line is known, and ends the parse (NULL reads as
   * the end of the file). */
  if (ini_reader_long(x, x->line, str, num) == 0) return str;
  if (!x->failed) {
    snprintf(x->err, x->errlen, "%s:%d: line of %zd bytes, longer than the %d a section header may hold", x->path,
             x->lineno, n, num - 2);
    x->failed = BFEED_EINVAL;
  }
  return NULL;
}

static int on_ini(void *user, const char *section, const char *key, const char *value) {
  ini_ctx *x = user;
  char where[512];
  snprintf(where, sizeof where, "%s:%d", x->path, x->lineno);
  if (x->failed) return 0;
  size_t k;
  if (value[0] == INI_LONG_MARK && sscanf(value + 1, "%zu", &k) == 1 && k < x->nlongs) value = x->longs[k];
  if (strcmp(section, "bfeedd") == 0) {
    x->failed = config_set(x->c, key, value, where, x->err, x->errlen);
  } else if (strncmp(section, "dataset ", 8) == 0) {
    /* Keys are checked by the dataset's kind when it loads. */
    x->failed = config_dataset_set(x->c, section + 8, key, value, where, x->err, x->errlen);
  } else if (!*section) {
    /* inih reports a header without its ']' only at the end, and keys
     * after it arrive with no section: say what is likely wrong. */
    snprintf(x->err, x->errlen, "%s: key '%s' is outside any section (expected a [bfeedd] or [dataset NAME] line "
             "before it; is a ']' missing?)", where, key);
    x->failed = BFEED_EINVAL;
  } else {
    snprintf(x->err, x->errlen, "%s: unknown section [%s] (expected [bfeedd] or [dataset NAME])", where,
             section);
    x->failed = BFEED_EINVAL;
  }
  return !x->failed;
}

int config_load_file(config *c, const char *path, char *err, size_t errlen) {
  ini_ctx x = {.c = c, .path = path, .f = fopen(path, "r"), .err = err, .errlen = errlen};
  if (!x.f) return snprintf(err, errlen, "cannot read config file %s: %m", path), BFEED_EIO;
  int rc = ini_parse_stream(ini_reader_counting, &x, on_ini, &x);
  fclose(x.f);
  free(x.line);
  for (size_t i = 0; i < x.nlongs; i++) free(x.longs[i]);
  free(x.longs);
  if (x.failed) return x.failed;
  if (rc > 0) return snprintf(err, errlen, "%s:%d: syntax error", path, rc), BFEED_EINVAL;
  if (rc < 0) return snprintf(err, errlen, "%s: cannot parse (out of memory?)", path), BFEED_ENOMEM;
  return 0;
}
