/*
 * codec.h -- the wire codecs: one table, what each does to a batch's data.
 * Called by msg.c (checking a BATCH), opts.c (the option's text form and
 * range), the daemon's batch.c (encoding) and libbfeed (decoding, `auto`).
 *
 * A codec (bfeed_codec, PROTOCOL.md "Codecs") is two independent choices:
 * the data's form -- the raw tensors, or codec u8's form (an image batch's
 * pixels as bytes plus the stream's bf16 table, msg.h) -- and a
 * compressor over that data, or none. Each compressor lives in a file of
 * its own (codec_zstd.c, codec_lz4.c) and names its two wire ids: the raw
 * tensors compressed, and the u8 form compressed. Adding one is that file
 * plus a line in codec.c's list and its ids in bfeed_types.h.
 *
 * Whatever codec a stream asks for, a batch travels as what fits it
 * (codec_for_batch): the u8 form only where there is an image tensor, and
 * a compressor asked for on an image batch compresses its u8 form (half
 * the bytes to compress and no bf16 noise in them: smaller and faster);
 * batch.c asks for the u8 form only where the pixels are the values (no
 * erasing or mixing after Normalize).
 */
#ifndef BFEED_CODEC_H
#define BFEED_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "msg.h"

/* A compressor. Its functions return 0 or a negative BFEED_E* code with a
 * message in err. */
typedef struct codec_comp {
  const char *name;                   /* "zstd": its codecs are "zstd" and "u8+zstd" */
  uint8_t id, id_u8;                  /* the wire ids: raw tensors, and the u8 form, compressed */
  int level_lo, level_hi, level_def;  /* what NAME:L accepts; 0, 0: it takes no level */
  size_t (*bound)(size_t n);          /* the most n bytes can compress to */
  /* src[n] into dst[cap] (cap >= bound(n)), *out the bytes written. *state
   * is the caller's per-thread state for this compressor (NULL at first,
   * kept between calls, freed by state_free). */
  int (*compress)(void **state, int level, const void *src, size_t n, void *dst, size_t cap, size_t *out, char *err,
                  size_t errlen);
  /* src[srcn] into exactly n bytes at dst: anything else is BFEED_ECODEC. */
  int (*decompress)(const void *src, size_t srcn, void *dst, size_t n, char *err, size_t errlen);
  void (*state_free)(void *state);
} codec_comp;

/* The compressors codec.c lists (codec_zstd.c, codec_lz4.c). */
extern const codec_comp codec_comp_zstd, codec_comp_lz4;
#define CODEC_MAX_COMPS 4

/* A wire codec: its id, its name (as options spell it), its form, its compressor. */
typedef struct codec_info {
  uint8_t id;
  char name[24];            /* "none", "u8", "zstd", "u8+zstd", ... */
  int u8;                   /* the data is codec u8's form */
  const codec_comp *comp;   /* NULL: not compressed */
} codec_info;

/* The codec with wire id `id`, or NULL for an unknown one (AUTO is not a
 * wire codec). */
const codec_info *codec_get(int id);
/* Whether batches of codec id carry their raw tensors as they are (none). */
int codec_is_plain(int id);

/* The text form: auto, none, u8, NAME or u8+NAME, with :LEVEL where the
 * compressor takes one ("zstd:3"). 0, or BFEED_EINVAL with a message. */
int codec_parse(const char *text, int *id, int *level, char *err, size_t errlen);
/* Every name codec_parse takes, sep between them, level after those that
 * take one: ("|", "[:L]") gives "auto|none|u8|zstd[:L]|u8+zstd[:L]|...". */
void codec_list(const char *sep, const char *level, char *buf, size_t n);
/* codec_parse's form of (id, level): "u8+zstd:3", "auto", "none". */
void codec_format(int id, int level, char *buf, size_t n);
/* Whether (id, level) is a codec a stream may ask for (AUTO included):
 * 0, or BFEED_EINVAL saying what is wrong ("zstd level 20 out of range 1..19"). */
int codec_check(int id, int level, char *err, size_t errlen);
/* What AUTO means on a connection: u8 over TCP, where it halves the
 * network's bytes; none over a Unix socket, where expanding would only
 * cost the trainer's CPU. */
int codec_auto(int tcp);
/* The codec a batch of a stream asking for `requested` travels as. */
int codec_for_batch(int requested, int has_image);

/* Bytes of m's data before compression: codec u8's form, or the raw
 * tensors; 0 when m's codec is u8 and its first tensor is not an image
 * (msg_batch_u8_size). */
uint64_t codec_plain_size(const msg_batch *m);
/* The most bytes m's data can take on the wire for a plain size of n. */
size_t codec_bound(int id, size_t n);

/* Per-thread compressor states (a worker's), zero-initialised. */
typedef struct codec_state {
  void *s[CODEC_MAX_COMPS];
} codec_state;
void codec_state_free(codec_state *st);
/* Compress plain[n] with id's compressor into dst[cap]; *out the bytes
 * written. For a codec without one this is an internal error. */
int codec_compress(codec_state *st, int id, int level, const void *plain, size_t n, void *dst, size_t cap,
                   size_t *out, char *err, size_t errlen);
/* m's data decompressed into dst, exactly codec_plain_size(m) bytes. */
int codec_decompress(const msg_batch *m, void *dst, size_t n, char *err, size_t errlen);

/* Codec u8's head (msg.h): layout byte and the stream's table, at data. */
void codec_u8_head(uint8_t *data, int nhwc, const uint16_t lut[3][256]);
/* Codec u8's data (head, pixels, the other tensors' bytes) into m's raw
 * tensors at raw (m->raw_size bytes, 64-byte aligned): every pixel through
 * its channel's table into the layout the head names (tobf16.h, SIMD),
 * byte for byte what codec none carries. BFEED_EPROTO for a head that does
 * not fit the image tensor. */
int codec_u8_expand(const msg_batch *m, const uint8_t *data, uint8_t *raw, char *err, size_t errlen);

#endif
