/*
 * config.h -- bfeedd's settings: defaults, the config file, the flags.
 * Called by main.c (start, --check-config, SIGHUP reload).
 *
 * The file is INI (parsed by inih); see conf/bfeedd.conf for every key.
 * Each key has a flag of the same name (max_clients <-> --max-clients) and
 * flags win over the file: a repeatable key given as flags (listen) replaces
 * the file's list; a dataset given as a flag replaces the file's dataset of
 * that name. Errors name the file, line and key.
 */
#ifndef BFEED_CONFIG_H
#define BFEED_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* A dataset's settings, in the order given; see dataset_kv. */
typedef struct config_dataset {
  char *name;
  size_t nkv;
  char **keys, **values, **wheres;
} config_dataset;

/* The least cache_max_bytes: a few batches' blocks. */
#define REMOTE_CACHE_MIN_BYTES (16ull << 20)

typedef struct config {
  char **listen;
  size_t nlisten;
  char *metrics_listen; /* HOST:PORT, or NULL */
  char *cache_dir;      /* for converted word-vector tables, shard indexes, remote blocks; or NULL */
  uint64_t cache_max_bytes; /* the remote block cache's bound */
  int remote_parallel, remote_timeout, remote_retries;
  int workers;     /* 0: one per core */
  int max_clients;
  int max_streams;
  int max_window;
  int share_horizon; /* batches (share.h); 0: twice the stream's window */
  uint64_t max_memory; /* bytes of finished batches held at once */
  uint64_t max_pixels; /* images with more are skipped; 0 = no limit */
  uint64_t max_decode_memory; /* what one image decode may take (decode_mem.h); 0 = no limit */
  int handshake_timeout; /* seconds from accept to HELLO; 0 = none */
  int idle_timeout;      /* seconds a connection without a stream may stay silent; 0 = none */
  int shutdown_timeout;  /* seconds a shutdown waits for workers (and a reload) in I/O */
  int socket_mode;       /* of the Unix sockets the daemon creates */
  char *socket_group;    /* their group (name or number), or NULL */
  char *auth_token_file; /* the token TCP clients must show, or NULL */
  char *skipped_log;     /* where skipped samples are appended (skips.h), or NULL */
  int log_level;   /* syslog priority, see log.h */
  config_dataset *datasets;
  size_t ndatasets;
} config;

/* The keys of [bfeedd], each also a flag --KEY with '_' as '-'. */
typedef struct config_key {
  const char *key, *arg, *help;
} config_key;
extern const config_key config_keys[]; /* ends with a NULL key */

void config_init(config *c);
void config_free(config *c);
int config_load_file(config *c, const char *path, char *err, size_t errlen);
/* Apply one key = value (from the file or a flag). where names the origin
 * for messages ("bfeedd.conf:12" or "--workers"). */
int config_set(config *c, const char *key, const char *value, const char *where, char *err, size_t errlen);
/* Set one key of dataset NAME (created if new). */
int config_dataset_set(config *c, const char *name, const char *key, const char *value, const char *where,
                       char *err, size_t errlen);
/* A --dataset flag: NAME=DIR, or NAME=KIND:PATH[,key=value]...; it replaces
 * any dataset of that name. */
int config_dataset_flag(config *c, const char *arg, char *err, size_t errlen);
/* 1 if the two configurations give dataset `name` the same settings. */
int config_dataset_same(const config *a, const config *b, const char *name);
/* The token of c's auth_token_file ("" without one): the file's first
 * line, 1..255 bytes. 0, or BFEED_EIO / BFEED_EINVAL with err naming it. */
int config_read_token(const config *c, char *token, size_t cap, char *err, size_t errlen);
/* Forget the listeners (flags replace the file's list). */
void config_clear_listen(config *c);

#endif
