/*
 * bfeed.h -- client library for bfeedd, the bf16 input-pipeline daemon.
 *
 * A training loop connects to a daemon, opens a *stream* on a dataset and
 * takes batches that are already preprocessed and cast to bfloat16:
 *
 *     bfeed_client *c;  bfeed_stream *s;  bfeed_batch *b;  bfeed_error err;
 *     bfeed_stream_opts o;
 *     bfeed_connect("unix:/run/bfeed/bfeedd.sock", &c, &err);
 *     bfeed_stream_opts_init(&o);   o.batch = 64;  o.size = 224;
 *     bfeed_stream_open(c, "imagenet", &o, &s, &err);
 *     while (bfeed_stream_next(s, &b, &err) == 0) {
 *         bfeed_tensor img;
 *         bfeed_batch_find(b, "image", &img);    // bf16 [B,3,H,W]
 *         ...train on img.data...
 *         bfeed_batch_release(b);
 *     }
 *     bfeed_stream_close(s);  bfeed_close(c);
 *
 * Errors: every call that can fail returns 0 or a negative BFEED_E* code;
 * bfeed_strerror() names the code, and when the caller passes a bfeed_error
 * the message says what exactly went wrong (which file, field, limit).
 *
 * Determinism: a batch is a pure function of (dataset, options, seed, epoch,
 * batch index). Reopening a stream with .epoch/.batch_index set resumes it
 * exactly; any daemon with the same dataset serves the same bytes.
 *
 * Faults: when the connection to the daemon is lost (the daemon crashed or
 * restarted, the network dropped), the client reconnects by itself, with
 * backoff, for up to bfeed_connect_opts.reconnect_deadline seconds, and
 * reopens every stream at the first batch not yet handed to the caller:
 * bfeed_stream_next just waits a little longer, and the batches it returns
 * are exactly those of an uninterrupted run, none missing, none twice.
 * Errors that another try would not cure (an unknown dataset, a refused
 * option or token) are reported at once.
 *
 * Several daemons: an address may name several endpoints, comma-separated
 * ("10.0.0.5:7070,10.0.0.6:7070,unix:/run/bfeed/bfeedd.sock"), or a DNS
 * name that resolves to several addresses (a Kubernetes headless Service;
 * one address family: IPv4 when the name has any). Each is a member, and
 * every stream fans out over them: it opens an on-demand sub-stream on each
 * member (its own connection per member and stream), checks that all
 * report the same shape and dataset fingerprint (else BFEED_EDATASET naming
 * both endpoints), and asks each for batch positions, the next one from
 * the member expected to finish it first (its outstanding requests times
 * its average time per batch), so a slow host gets proportionally less.
 * The window is the stream's: at most `window` batches in flight or
 * waiting across all members. bfeed_stream_next returns exactly the
 * batches, order and bytes one daemon would. A member whose connection
 * fails, or that has had requests outstanding without a batch for
 * stall_timeout seconds, is dropped and its positions asked of the others;
 * a head-of-line batch outstanding for over 4x its member's average (and
 * 1 s) is asked of a second member too. Every batch reaches the caller
 * once (a second copy is dropped). A dropped member is retried in the
 * background with backoff, names resolved again (new addresses join), and
 * rejoins when it answers; when every member has been gone for
 * reconnect_deadline seconds, next returns the error. bfeed_stream_stats
 * sums the members' counters and adds member<i>_batches, how many batches
 * each served. A single endpoint is one connection, as described above.
 *
 * Thread safety: a bfeed_client may be shared by threads; each bfeed_stream
 * must be used by one thread at a time (different streams of one client may
 * be used from different threads at once). A bfeed_batch is independent of
 * its stream once returned and may be released from any thread, also after
 * the stream and the client are closed. bfeed_close may be called while
 * other threads are inside calls on the client or its streams: those calls
 * return BFEED_ECLOSED, and bfeed_close returns once they have all
 * returned; no call on the client or its streams may begin after
 * bfeed_close has begun. Each client runs one background thread that reads
 * from the socket, checks and decompresses batches (the prefetch), and
 * reconnects.
 *
 * After fork: a client belongs to the process that connected it. A child
 * made by fork() gets a copy of it without its threads (and maybe with
 * locks they held), so in the child every call on that client or its
 * streams fails at once with BFEED_EFORKED (bfeed_stream_wait returns 1,
 * as next would not block) -- none waits, none takes a lock, none sends
 * anything on the inherited sockets, which stay the parent's: the parent
 * streams on undisturbed. In the child, bfeed_stream_close does nothing
 * (the parent's stream stays open), bfeed_close frees the child's copy
 * (its duplicates of the sockets closed, never shut down; memory a
 * parent's thread was changing at the fork is left), a batch taken before
 * the fork is still readable (a shared-memory one while the parent holds
 * it too: the slot is the daemon's again once the parent releases it) and
 * bfeed_batch_release frees the child's copy without telling the daemon,
 * and bfeed_client_endpoints is 0. A
 * child connects again with bfeed_connect (a worker process per
 * connection: a DataLoader with the fork start method).
 */
#ifndef BFEED_H
#define BFEED_H

#include <stddef.h>
#include <stdint.h>

/* Error codes (BFEED_E*), bfeed_error, dtypes, BFEED_MAX_DIMS, and the
 * stream options with their enums and defaults: read them there. Installed
 * beside this header. */
#include "bfeed_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The name of an error code, e.g. "BFEED_ECHECKSUM: frame checksum mismatch". */
BFEED_API const char *bfeed_strerror(int code);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */

/* A view into a batch. data stays valid until the batch is released;
 * it is aligned to 64 bytes and little-endian, C (row-major) order. The
 * batch is the caller's: writing into data (its const cast away) changes
 * that batch only, never a later one nor another client's, also when it
 * is in a shared-memory ring (PROTOCOL.md "Shared memory"). */
typedef struct bfeed_tensor {
  const char *name;
  bfeed_dtype dtype;
  int ndim;
  int64_t shape[BFEED_MAX_DIMS];
  const void *data;
  size_t nbytes;
} bfeed_tensor;

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
BFEED_API size_t bfeed_dtype_size(int dtype);
/* "bf16", "f32", "i32", "i64", "u8", or "?" */
BFEED_API const char *bfeed_dtype_name(int dtype);

/* ------------------------------------------------------------------ */
/* Stream options                                                      */

/* Fill o with the defaults noted in bfeed_types.h; start every
 * bfeed_stream_opts here, then change what you need. */
BFEED_API void bfeed_stream_opts_init(bfeed_stream_opts *o);

/* ------------------------------------------------------------------ */
/* Connections and streams                                             */

typedef struct bfeed_client bfeed_client;
typedef struct bfeed_stream bfeed_stream;
typedef struct bfeed_batch bfeed_batch;

/* How to connect. Start from bfeed_connect_opts_init(), which sets the
 * defaults noted here, then change what you need. */
typedef struct bfeed_connect_opts {
  /* 1 (default): after a lost connection, reconnect and resume every stream
   * exactly (see "Faults" above); 0: the error reaches the caller. */
  int reconnect;
  /* Seconds to keep trying once a connection is lost, > 0 (60). Tries come
   * quickly at first, then about once a second. The first connection is
   * tried once: a wrong address fails at once. */
  double reconnect_deadline;
  /* The access token that a daemon with auth_token_file asks TCP clients
   * for (1..255 bytes): the token itself, or a file holding it on its first
   * line (trailing blanks and the line end dropped, as bfeedd reads its
   * own). Both NULL (default): the file named by the environment variable
   * BFEED_TOKEN_FILE when it is set, else no token. Read during
   * bfeed_connect2, not kept; sent again on every reconnect. */
  const char *token;
  const char *token_file;
  /* Several endpoints only: seconds a member may have requests outstanding
   * without sending a batch before it is dropped (10; > 0). */
  double stall_timeout;
  /* 1 (default): on a unix: address, ask the daemon to put batches in a
   * shared-memory ring the client maps (no socket copies; the batch's
   * tensors point into it until it is released; a daemon that cannot
   * serves over the socket); 0: always the socket. The environment
   * variable BFEED_SHM=0 turns it off too. TCP never uses it. Releasing
   * such a batch tells the daemon its slot is free (a small ACK sent from
   * the releasing thread); a caller may hold batches as long as it likes:
   * with every slot held, the next batches come over the socket. */
  int shm;
} bfeed_connect_opts;
BFEED_API void bfeed_connect_opts_init(bfeed_connect_opts *o);

/* Connect and perform the version handshake. addr is "unix:/path/to.sock"
 * or "HOST:PORT" ("[::1]:7070" for IPv6). Blocks until connected or failed
 * (a daemon that does not answer the handshake within 10 s fails it).
 * bfeed_connect is bfeed_connect2 with the default options; o may be NULL
 * for them too. */
BFEED_API int bfeed_connect(const char *addr, bfeed_client **out, bfeed_error *err);
BFEED_API int bfeed_connect2(const char *addr, const bfeed_connect_opts *o, bfeed_client **out,
                             bfeed_error *err);

/* Close the connection; streams still open are closed and freed (do not
 * close them again). Batches already returned stay valid until released.
 * See "Thread safety" above for calls in progress in other threads. While
 * reconnecting it stops at once, unless a TCP connect is under way (that
 * takes up to 10 s to give up on a host that does not answer). */
BFEED_API void bfeed_close(bfeed_client *c);

/* How many times the client has connected again after losing its
 * connection (whether or not the try succeeded in the end). Several
 * daemons: how many times a dropped member rejoined a stream. */
BFEED_API uint64_t bfeed_client_reconnects(bfeed_client *c);

/* The endpoints behind the client's address: 1 for a single one, else the
 * members (names resolved; see "Several daemons"). bfeed_client_endpoint
 * copies the i-th ("unix:/p" or "host:port") into buf[cap]: 0, or
 * BFEED_EINVAL past the last. Connect to one with bfeed_connect to ask it
 * for bfeed_daemon_stats. */
BFEED_API size_t bfeed_client_endpoints(bfeed_client *c);
BFEED_API int bfeed_client_endpoint(bfeed_client *c, size_t i, char *buf, size_t cap);

/* Protocol version agreed with the daemon, and the daemon's name/version. */
BFEED_API uint32_t bfeed_client_version(const bfeed_client *c);
BFEED_API const char *bfeed_client_server(const bfeed_client *c);

/* Open a stream on a dataset the daemon serves. Blocks for the daemon's
 * answer: an unknown dataset or bad option fails here, with the reason. */
BFEED_API int bfeed_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o,
                                bfeed_stream **out, bfeed_error *err);

/* What the daemon told us about the stream when it opened. */
typedef struct bfeed_stream_info {
  uint64_t samples;           /* samples per epoch in this shard */
  uint64_t batches_per_epoch; /* after dropping (or keeping) the short batch */
  uint32_t classes;           /* number of labels */
} bfeed_stream_info;
BFEED_API int bfeed_stream_get_info(const bfeed_stream *s, bfeed_stream_info *info);

/* The dataset's class names, in label order (names[i] is label i's): an
 * image folder's class folders, a list's or text's distinct labels sorted,
 * "0".."max" where those labels are numbers; none (*count 0) for npy,
 * tfrecord and tar. Asks the daemon (pages of 64 KiB, again after a
 * reconnect), also before any batch; *names is a NULL-terminated array of
 * *count strings (UTF-8 as the files name them), freed with
 * bfeed_class_names_free. BFEED_EUNSUPPORTED from a daemon older than the
 * call (its connection and streams unharmed). */
BFEED_API int bfeed_stream_class_names(bfeed_stream *s, char ***names, size_t *count, bfeed_error *err);
BFEED_API void bfeed_class_names_free(char **names, size_t count);

/* Next batch, in order. Blocks until it has arrived (usually it already has:
 * the client keeps `window` batches in flight; after a lost connection,
 * until the stream is resumed). Returns BFEED_EEOF once the requested
 * epochs are done. The caller owns *out until bfeed_batch_release. */
BFEED_API int bfeed_stream_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err);

/* Ask the daemon for the stream's counters. out[i].name/value are filled
 * for up to max entries; *count gets the number filled. The client's own
 * (client_batches, client_wait_us, client_step_us, client_wait_p50_us,
 * client_wait_p99_us, client_first_wait_us, client_expand_us and
 * wait_fraction_ppm: bfeed_stream_get_timing's) are as of the call. The names are
 * owned by the stream and stay valid until it is closed, also across later
 * calls (a name is kept once and handed out again). */
typedef struct bfeed_counter {
  const char *name;
  uint64_t value;
} bfeed_counter;
BFEED_API int bfeed_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count,
                                 bfeed_error *err);

/* Is the job input-bound? What the caller of bfeed_stream_next has seen on
 * this stream since it opened, measured in the client: the time spent
 * waiting for a batch (from the first bfeed_stream_wait or next that asks
 * for it until next returns it), and the time between a next's return and
 * the following call (the caller's own work: the training step). The
 * first batch's wait (the pipeline filling) is kept apart. The totals also
 * go to the daemon (every 250 ms, with a batch), whose bfeed stats and
 * /metrics show them per stream beside a verdict on what limits it. A
 * fan-out stream's are the whole stream's, passed to every member. Quick:
 * asks the daemon nothing. 0, or BFEED_ECLOSED / BFEED_EFORKED. */
typedef struct bfeed_stream_timing {
  uint64_t batches;                  /* batches next returned, the first excepted */
  uint64_t wait_ns;                  /* time spent waiting for them (wait and next calls) */
  uint64_t step_ns;                  /* time between a call's return and the next call */
  uint64_t wait_p50_ns, wait_p99_ns; /* median and 99th percentile of those waits (within 1/16) */
  uint64_t first_wait_ns;            /* the first batch's wait */
  uint64_t expand_ns;                /* the client's reader thread checking and decompressing them */
  double wait_fraction;              /* wait_ns / (wait_ns + step_ns): 0 (never waits) .. 1; 0 before the 2nd batch */
  double batches_per_s;              /* batches / (wait + step) */
} bfeed_stream_timing;
BFEED_API int bfeed_stream_get_timing(bfeed_stream *s, bfeed_stream_timing *out);

/* The job's loop, timed where the training step runs (a loader's main process; the stream opened with its `job`):
 * t's batches, wait, step, p50/p99 and first wait (the rest ignored) go to the daemon now, one TIMING frame a call,
 * and from now on instead of this stream's own (bfeed_stream_get_timing still gives those). Works on a stream that
 * never asks for batches (select on-demand, no request); a daemon without TIMING ignores it. 0, or BFEED_EINVAL
 * (t NULL), BFEED_ECLOSED, BFEED_EFORKED. */
BFEED_API int bfeed_stream_report_timing(bfeed_stream *s, const bfeed_stream_timing *t, bfeed_error *err);

/* Stop the stream and free it. Pending batches are dropped. */
BFEED_API void bfeed_stream_close(bfeed_stream *s);

/* The daemon's statistics: groups of named counters, one "daemon" group,
 * one "dataset" group per dataset (id: its name), one "stream" group per
 * open stream (id: "client/stream:dataset") and one "job" group per job
 * (streams opened with the same `job` option; id: "JOB:DATASET", the job in
 * hex). Blocks for the answer; free the result with bfeed_daemon_stats_free. */
typedef struct bfeed_stat_group {
  const char *kind;
  const char *id;
  size_t ncounters;
  const bfeed_counter *counters;
} bfeed_stat_group;
BFEED_API int bfeed_daemon_stats(bfeed_client *c, bfeed_stat_group **groups, size_t *ngroups, bfeed_error *err);
BFEED_API void bfeed_daemon_stats_free(bfeed_stat_group *groups, size_t ngroups);

/* ------------------------------------------------------------------ */
/* Batches                                                             */

BFEED_API uint64_t bfeed_batch_epoch(const bfeed_batch *b);
BFEED_API uint64_t bfeed_batch_index(const bfeed_batch *b); /* within the epoch */
BFEED_API int bfeed_batch_ntensors(const bfeed_batch *b);
/* The i-th tensor (0 <= i < ntensors), or BFEED_EINVAL. */
BFEED_API int bfeed_batch_tensor(const bfeed_batch *b, int i, bfeed_tensor *out);
/* The tensor called name, or BFEED_EINVAL when the batch has none. */
BFEED_API int bfeed_batch_find(const bfeed_batch *b, const char *name, bfeed_tensor *out);
/* Bytes on the wire (after compression) and decompressed, for this batch. */
BFEED_API size_t bfeed_batch_wire_bytes(const bfeed_batch *b);
BFEED_API size_t bfeed_batch_raw_bytes(const bfeed_batch *b);
BFEED_API void bfeed_batch_release(bfeed_batch *b);

/* ------------------------------------------------------------------ */
/* bfloat16 helpers                                                    */

/* Round a float to bf16, to nearest even; NaN stays a (quiet) NaN. */
BFEED_API uint16_t bfeed_bf16_from_f32(float f);
BFEED_API float bfeed_bf16_to_f32(uint16_t h);

/* ------------------------------------------------------------------ */
/* Bindings: options by name, waiting with a timeout (options.c, api_stream.c) */

/* Set one stream option by the command line's name ("batch", "start-batch",
 * "shard", "keep-partial"; '_' may stand for '-') from its text ("64",
 * "3/8", "zstd:5", "eval"; for the flags keep-partial and fixed-len "1",
 * "0", "true", "false" or NULL for 1). Checks the range as the command line
 * does. BFEED_EINVAL for an unknown name or a bad value, err saying which.
 * Bindings use this instead of copying the struct's layout. */
BFEED_API int bfeed_stream_opts_set(bfeed_stream_opts *o, const char *name, const char *value, bfeed_error *err);
/* 1 if the option takes a value, 0 for a flag, -1 for an unknown name. */
BFEED_API int bfeed_stream_opt_takes_value(const char *name);
/* The i-th option's name (0, 1, ...), NULL past the last: for help and
 * completion in bindings. */
BFEED_API const char *bfeed_stream_opt_name(int i);
/* sizeof(bfeed_stream_opts) in the library, for a binding built against a
 * different header to refuse to run rather than misread the struct. */
BFEED_API size_t bfeed_stream_opts_size(void);

/* Wait up to timeout_ms (< 0: forever) until bfeed_stream_next() would
 * return without blocking: a batch, the end of the stream or an error is
 * there. 1 if so, 0 on timeout. Lets a caller that must react to signals
 * (an interpreter's Ctrl-C) wait in short slices. */
BFEED_API int bfeed_stream_wait(bfeed_stream *s, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* BFEED_H */
