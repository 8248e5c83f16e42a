/*
 * msg.h -- the messages carried in frames: encode and decode.
 * Called by the daemon's connections and batch assembly, and by libbfeed.
 *
 * Encoders append a complete frame (header + payload) to a wbuf: call
 * msg_begin(), write the payload with a msg_*_encode, then msg_finish(),
 * which fills in the header and checksum (or, into memory of a fixed
 * capacity, through fwriter.h). Decoders take a verified payload
 * and return 0 or BFEED_EPROTO / BFEED_EINVAL / BFEED_ETOOBIG with a static
 * reason; they never read outside the payload and check every count and
 * length against the payload and the limits below before using it.
 */
#ifndef BFEED_MSG_H
#define BFEED_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "frame.h"
#include "tlv.h"

#define MSG_NAME_MAX 128   /* dataset names, agent strings (with NUL) */
#define MSG_ERROR_MAX 256  /* error messages (with NUL) */
#define MSG_TOKEN_MAX 256  /* HELLO's access token (with NUL) */
#define MSG_MAX_TENSORS 16
#define MSG_TENSOR_NAME_MAX 32
#define MSG_MAX_COUNTERS 64

/* Start a frame: reserves the header. Returns the offset of the frame. */
size_t msg_begin(wbuf *w);
/* Finish the frame started at `at`: fills its header for the payload that
 * follows it. Fails (returns BFEED_ETOOBIG/ENOMEM) if it cannot. */
int msg_finish(wbuf *w, size_t at, int type, uint32_t stream);

/* HELLO / HELLO_OK: the version handshake. HELLO's optional extensions
 * follow the agent as TLV items (PROTOCOL.md); the only one so far is the
 * access token a daemon with auth_token_file asks TCP clients for. */
typedef struct msg_hello {
  uint32_t min_version, max_version;
  char agent[MSG_NAME_MAX];
  char token[MSG_TOKEN_MAX]; /* "" = none: encoded only when set */
} msg_hello;
void msg_hello_encode(wbuf *w, const msg_hello *m);
int msg_hello_decode(const void *p, size_t n, msg_hello *m, char *err, size_t errlen);

typedef struct msg_hello_ok {
  uint32_t version;   /* chosen by the daemon */
  uint32_t max_frame; /* the largest frame the daemon will send */
  char server[MSG_NAME_MAX];
} msg_hello_ok;
void msg_hello_ok_encode(wbuf *w, const msg_hello_ok *m);
int msg_hello_ok_decode(const void *p, size_t n, msg_hello_ok *m, char *err, size_t errlen);

/* OPEN: dataset name and stream options, as TLV items. */
typedef struct msg_open {
  char dataset[MSG_NAME_MAX];
  bfeed_stream_opts opts;
} msg_open;
void msg_open_encode(wbuf *w, const msg_open *m);
/* Missing options keep msg_opts_defaults' values. */
int msg_open_decode(const void *p, size_t n, msg_open *m, char *err, size_t errlen);
/* The defaults of every option (bfeed_types.h notes them); what
 * bfeed_stream_opts_init gives a client, and what OPEN leaves unsaid. */
void msg_opts_defaults(bfeed_stream_opts *o);
/* Range-check options; 0 or BFEED_EINVAL with a reason in err. */
int msg_opts_check(const bfeed_stream_opts *o, char *err, size_t errlen);

typedef struct msg_open_ok {
  uint64_t samples;           /* per epoch, in this shard */
  uint64_t batches_per_epoch;
  uint32_t classes;
  uint64_t fingerprint;       /* of what decides the stream's bytes; 0: not sent (an older daemon) */
  uint32_t features;          /* MSG_FEATURE_*; 0: not sent (an older daemon) */
} msg_open_ok;
/* OPEN_OK's features: what the daemon takes on this stream beside version 1's frames. */
#define MSG_FEATURE_TIMING 1u /* TIMING frames */
#define MSG_FEATURE_CLASSES 2u /* CLASSES_REQ frames */
void msg_open_ok_encode(wbuf *w, const msg_open_ok *m);
int msg_open_ok_decode(const void *p, size_t n, msg_open_ok *m, char *err, size_t errlen);

/* REQUEST: the batches an on-demand stream is to serve next, in order. */
#define MSG_MAX_REQUEST 1024
typedef struct msg_request {
  uint32_t count; /* 1..MSG_MAX_REQUEST */
  struct {
    uint64_t epoch, index;
  } b[MSG_MAX_REQUEST];
} msg_request;
void msg_request_encode(wbuf *w, const msg_request *m);
int msg_request_decode(const void *p, size_t n, msg_request *m, char *err, size_t errlen);

/* ACK: the client has consumed `consumed` batches of the stream in all. */
void msg_u64_encode(wbuf *w, uint64_t v);
int msg_u64_decode(const void *p, size_t n, uint64_t *v, char *err, size_t errlen);

/* ERROR */
typedef struct msg_error {
  int32_t code;
  char message[MSG_ERROR_MAX];
} msg_error;
void msg_error_encode(wbuf *w, int32_t code, const char *message);
int msg_error_decode(const void *p, size_t n, msg_error *m, char *err, size_t errlen);

/* STATS: named counters. */
typedef struct msg_counter {
  char name[MSG_TENSOR_NAME_MAX];
  uint64_t value;
} msg_counter;
void msg_stats_encode(wbuf *w, const msg_counter *c, size_t n);
int msg_stats_decode(const void *p, size_t n, msg_counter *c, size_t max, size_t *count,
                     char *err, size_t errlen);

/* BATCH: fixed fields, tensor descriptors, then the data (raw tensors laid
 * out at their offsets, or a zstd frame of them) up to the end of the
 * payload. */
typedef struct msg_tensor {
  char name[MSG_TENSOR_NAME_MAX];
  uint8_t dtype;
  uint8_t ndim;
  uint64_t shape[BFEED_MAX_DIMS];
  uint64_t offset; /* into the raw (decompressed) data */
  uint64_t nbytes;
} msg_tensor;

typedef struct msg_batch {
  uint64_t epoch, index; /* which batch of which epoch */
  uint64_t seq;          /* position in the stream, from 0 at open */
  uint8_t codec;         /* bfeed_codec */
  uint32_t ntensors;
  msg_tensor t[MSG_MAX_TENSORS];
  uint64_t raw_size;     /* bytes of the decompressed data */
  const uint8_t *data;   /* decode: points into the payload */
  size_t data_size;
} msg_batch;
/* Everything but the data; the caller appends the data after it. */
void msg_batch_encode_head(wbuf *w, const msg_batch *m);
/* The bytes msg_batch_encode_head writes for m, so that a sender can size
 * the frame (fwriter.h) and place the data before writing anything. */
size_t msg_batch_head_size(const msg_batch *m);
/* raw_limit bounds raw_size (memory the receiver will allocate). */
int msg_batch_decode(const void *p, size_t n, uint64_t raw_limit, msg_batch *m, char *err, size_t errlen);
/* The fixed fields that open every BATCH payload (epoch .. raw_size), and
 * what a receiver needs from them before reading the rest: where the data
 * will start lets it place the payload so the tensors land aligned. */
#define MSG_BATCH_PREFIX 36
void msg_batch_peek(const uint8_t prefix[MSG_BATCH_PREFIX], uint8_t *codec, uint64_t *raw_size);

/* Codec u8's form (PROTOCOL.md "Codec u8"; codec.h is the codecs' table): the data is a head -- u8 layout (0
 * NCHW, 1 NHWC), 3 bytes 0, the 3 x 256 bf16 table (little-endian) -- then
 * the image tensor's B x H x W x 3 pixels, then the raw bytes after the
 * image tensor (the other tensors and their padding) as they are. */
#define MSG_U8_HEAD (4 + 3 * 256 * 2)
/* Bytes of m's u8 data (before zstd), or 0 when m's first tensor is not a
 * bf16 image [B,3,H,W] or [B,H,W,3] at offset 0. */
uint64_t msg_batch_u8_size(const msg_batch *m);


/* Shared memory (PROTOCOL.md "Shared memory"). SHM_RING announces a
 * stream's ring, the memfd riding with it as SCM_RIGHTS: `slots` slots of
 * `slot_size` bytes (a multiple of 64), `size` = slots x slot_size bytes in
 * all. BATCH_SHM is BATCH's fixed fields and tensor table (codec none, no
 * data) then u32 slot: the raw tensors are in that slot. The decoder checks
 * the slot against the ring and every tensor's extent against slot_size,
 * so a daemon cannot make a client read outside its mapping. */
#define MSG_SHM_MAX_SLOTS 64
typedef struct msg_shm_ring {
  uint32_t slots;
  uint64_t slot_size, size;
} msg_shm_ring;
void msg_shm_ring_encode(wbuf *w, const msg_shm_ring *m);
int msg_shm_ring_decode(const void *p, size_t n, msg_shm_ring *m, char *err, size_t errlen);
size_t msg_batch_shm_size(const msg_batch *m);
void msg_batch_shm_encode(wbuf *w, const msg_batch *m, uint32_t slot);
int msg_batch_shm_decode(const void *p, size_t n, const msg_shm_ring *ring, msg_batch *m, uint32_t *slot,
                         char *err, size_t errlen);
/* ACK on a shared-memory stream: `consumed` as in every ACK, then
 * optionally u32 count (1..64) and count x u64: the seqs of BATCH_SHM
 * batches the caller has released, whose slots the daemon may reuse. A
 * plain 8-byte ACK has none. */
#define MSG_ACK_MAX_RELEASED 64
typedef struct msg_ack {
  uint64_t consumed;
  uint32_t nreleased;
  uint64_t released[MSG_ACK_MAX_RELEASED];
} msg_ack;
void msg_ack_encode(wbuf *w, const msg_ack *m);
int msg_ack_decode(const void *p, size_t n, msg_ack *m, char *err, size_t errlen);

/* TIMING: what the stream's caller has seen since the stream opened,
 * cumulative (PROTOCOL.md "Is the job input-bound?"). Sent only on a
 * stream whose OPEN_OK had MSG_FEATURE_TIMING. Fields may be added at the
 * end: a decoder reads the ones it knows. */
typedef struct msg_timing {
  uint64_t batches;       /* next calls that returned a batch, the first excepted */
  uint64_t wait_us;       /* time spent waiting for those batches (in wait and next calls) */
  uint64_t step_us;       /* time between a call's return and the next call (the training step) */
  uint64_t wait_p50_us;   /* the median and 99th percentile of those waits */
  uint64_t wait_p99_us;
  uint64_t first_wait_us; /* the first call's wait: the pipeline filling, apart */
  uint64_t expand_us;     /* the client's reader thread checking and decompressing batches */
  uint64_t flags;         /* MSG_TIMING_LOOP; 0 when the frame has no whole flags (a client that predates them) */
} msg_timing;
#define MSG_TIMING_SIZE 56      /* the least a TIMING holds: the seven totals */
#define MSG_TIMING_FLAGS_SIZE 64 /* with flags: what this version sends */
/* The totals are the stream's job's loop, measured where the training
 * step runs (a loader's main process), not this stream's own next calls. */
#define MSG_TIMING_LOOP 1u
void msg_timing_encode(wbuf *w, const msg_timing *m);
int msg_timing_decode(const void *p, size_t n, msg_timing *m, char *err, size_t errlen);

/* CLASSES_REQ / CLASSES (msg_classes.c; PROTOCOL.md "Class names"): the
 * names of the stream's dataset's classes, in label order, a page at a
 * time. CLASSES_REQ is u32 first (fields a later client adds after it are
 * skipped). CLASSES is u32 total (0: the dataset has no names), u32 first,
 * u32 count, then count names, each u16 length + bytes (no NUL); the
 * daemon fills a page up to MSG_CLASSES_MAX bytes, the frame limit a
 * client takes for control frames, and the client asks again from first +
 * count until it has total. Sent only on a stream whose OPEN_OK had
 * MSG_FEATURE_CLASSES: an older daemon would end the connection at the
 * unknown type. */
#define MSG_CLASSES_MAX FRAME_MAX_CONTROL
#define MSG_CLASSES_HEAD 12
typedef struct msg_classes_req {
  uint32_t first;
} msg_classes_req;
void msg_classes_req_encode(wbuf *w, const msg_classes_req *m);
int msg_classes_req_decode(const void *p, size_t n, msg_classes_req *m, char *err, size_t errlen);
typedef struct msg_classes {
  uint32_t total, first, count;
  const uint8_t *names; /* decode: the count names as sent (checked), in the payload */
  size_t names_len;
} msg_classes;
/* names[0..avail) are the dataset's names from first on: as many as fit a
 * payload of max bytes go, at least one while avail > 0 (a name too long
 * for a page alone is cut to fit). Returns how many went. */
uint32_t msg_classes_encode(wbuf *w, uint32_t total, uint32_t first, const char *const *names, uint32_t avail,
                            size_t max);
/* EPROTO for a short or long payload, count past total, a name with a
 * NUL, or no name in a page while names remain (a client would ask for
 * the same page forever). */
int msg_classes_decode(const void *p, size_t n, msg_classes *m, char *err, size_t errlen);
/* The name at *off in a decoded CLASSES' names (*off 0: the first): its
 * bytes, not NUL-terminated, and length; *off moves past it. */
const char *msg_classes_name(const msg_classes *m, size_t *off, size_t *len);

#endif
