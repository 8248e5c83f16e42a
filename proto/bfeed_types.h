/*
 * bfeed_types.h -- the vocabulary the daemon and the client share: error
 * codes, dtypes, stream options. Included by bfeed.h and by proto/, daemon/.
 *
 * Self-contained (C99, <stddef.h>/<stdint.h> only) and installed beside
 * bfeed.h, so a program builds against the installed headers alone. The
 * numbers here travel on the wire (see proto/PROTOCOL.md): values are only
 * ever appended, never renumbered.
 */
#ifndef BFEED_TYPES_H
#define BFEED_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BFEED_API __attribute__((visibility("default")))
#else
#define BFEED_API
#endif

/* BFEED_VERSION_MAJOR, _MINOR, _PATCH and BFEED_VERSION_STRING ("M.m.p"):
 * generated from the project's version (proto/VERSION, the one place it
 * is written) and installed beside this header. */
#include "bfeed_version.h"

/* Error codes (bfeed_errors.h lists them, with what each means). They
 * travel on the wire in error frames, so the numbers are fixed: new codes
 * are only ever appended. */
typedef enum bfeed_errcode {
  BFEED_OK = 0,
#define BFEED_ERRORS_ENUM(name, num, pyclass, words, meaning) BFEED_##name = num,
  BFEED_ERRORS(BFEED_ERRORS_ENUM)
#undef BFEED_ERRORS_ENUM
} bfeed_errcode;

/* Where a call that failed puts its explanation. Optional everywhere (pass
 * NULL). message is always NUL-terminated. */
typedef struct bfeed_error {
  int code;
  char message[256];
} bfeed_error;

/* ------------------------------------------------------------------ */
/* Tensors                                                             */

typedef enum bfeed_dtype {
  BFEED_DTYPE_BF16 = 1, /* bfloat16 as uint16 bit patterns */
  BFEED_DTYPE_F32 = 2,
  BFEED_DTYPE_I32 = 3,
  BFEED_DTYPE_I64 = 4,
  BFEED_DTYPE_U8 = 5
} bfeed_dtype;

#define BFEED_MAX_DIMS 8

/* ------------------------------------------------------------------ */
/* Stream options                                                      */

typedef enum { BFEED_MODE_TRAIN = 0, BFEED_MODE_EVAL = 1 } bfeed_mode;
typedef enum { BFEED_LAYOUT_NCHW = 0, BFEED_LAYOUT_NHWC = 1 } bfeed_layout;
typedef enum { BFEED_NORM_IMAGENET = 0, BFEED_NORM_NONE = 1, BFEED_NORM_CUSTOM = 2 } bfeed_norm;
/* U8: image tensors travel as 8-bit pixels plus the stream's bf16 table and
 * libbfeed expands them, bit-identical to NONE; U8_ZSTD compresses that. */
/* AUTO (what bfeed_stream_opts_init gives) is libbfeed's choice, made when
 * the stream opens and never sent: U8 over TCP, where the network is what
 * it saves; NONE over a Unix socket, where the bytes cost no network and
 * the expansion would cost the trainer's CPU. */
/* U8_LZ4 and LZ4: the same with LZ4 (fast links: compression at memory
 * speed). On a batch without an image tensor the u8 form does not apply:
 * U8 travels as NONE, U8_ZSTD as ZSTD, U8_LZ4 as LZ4; ZSTD and LZ4 on an
 * image batch compress its u8 form. */
typedef enum {
  BFEED_CODEC_NONE = 0,
  BFEED_CODEC_ZSTD = 1,
  BFEED_CODEC_U8 = 2,
  BFEED_CODEC_U8_ZSTD = 3,
  BFEED_CODEC_U8_LZ4 = 4,
  BFEED_CODEC_LZ4 = 5,
  BFEED_CODEC_AUTO = 255
} bfeed_codec;
typedef enum { BFEED_SHUFFLE_AUTO = 0, BFEED_SHUFFLE_ON = 1, BFEED_SHUFFLE_OFF = 2 } bfeed_shuffle;
typedef enum { BFEED_POOL_NONE = 0, BFEED_POOL_MEAN = 1 } bfeed_pool;
/* Which of the stream's batches a daemon serves (several daemons behind one
 * stream): ALL; RESIDUE, those whose global number g = epoch * batches per
 * epoch + index has g mod select_mod == select_rem; ON_DEMAND, the ones the
 * client asks for by (epoch, index) (PROTOCOL.md, REQUEST). */
/* How a stream's batches travel (PROTOCOL.md "Shared memory"): SHM asks
 * for a shared-memory ring over a Unix socket; a daemon that cannot (TCP,
 * an older daemon) serves over the socket. */
typedef enum { BFEED_TRANSPORT_SOCKET = 0, BFEED_TRANSPORT_SHM = 1 } bfeed_transport;

/* How eval decodes a JPEG: EXACT, at full size, as torchvision's
 * ImageFolder + Resize + CenterCrop do (bit for bit); FAST, at the reduced
 * IDCT scale Pillow's Image.draft would pick (faster on large images, and
 * not exact: README "Decoding"). */
typedef enum { BFEED_EVAL_DECODE_EXACT = 0, BFEED_EVAL_DECODE_FAST = 1 } bfeed_eval_decode;

/* How train decodes a JPEG: EXACT, at full size, so that a crop is
 * torchvision's RandomResizedCrop on ImageFolder's image bit for bit; FAST,
 * a crop at least 4 times the output at the reduced IDCT scale that keeps
 * twice the output's pixels (what daemons before the option did: faster,
 * not exact; README "Decoding"). FAST is 0 because it is what those
 * daemons served (the fingerprint counts EXACT: PROTOCOL.md). */
typedef enum { BFEED_TRAIN_DECODE_FAST = 0, BFEED_TRAIN_DECODE_EXACT = 1 } bfeed_train_decode;

/* The resampling filter of the train crop's resize and eval's Resize, as
 * torchvision's InterpolationMode on a PIL image (Pillow 9.4's filters,
 * antialiased; NEAREST as Pillow's Image.resize maps it). */
typedef enum { BFEED_INTERP_BILINEAR = 0, BFEED_INTERP_BICUBIC = 1, BFEED_INTERP_NEAREST = 2 } bfeed_interp;
/* The augmentation policy of a train stream: none, torchvision's
 * AutoAugment(IMAGENET), RandAugment or TrivialAugmentWide. */
typedef enum { BFEED_AA_NONE = 0, BFEED_AA_IMAGENET = 1, BFEED_AA_RAND = 2, BFEED_AA_TA_WIDE = 3 } bfeed_auto_augment;

/* Whether a stream takes batches the daemon built for another stream that
 * wants the same bytes (ON, default), or has its own built (OFF: a job
 * that must measure its own cost). Either way the bytes are the same. */
typedef enum { BFEED_SHARE_ON = 0, BFEED_SHARE_OFF = 1 } bfeed_share;

/* STRIDE: every select_mod-th batch from the stream's start (epoch,
 * batch_index) on, whatever the epoch's length (DataLoader workers of one
 * reader: worker w of W opens at start + w with stride W). */
typedef enum {
  BFEED_SELECT_ALL = 0,
  BFEED_SELECT_RESIDUE = 1,
  BFEED_SELECT_ON_DEMAND = 2,
  BFEED_SELECT_STRIDE = 3
} bfeed_select;

/* How an eval shard ends (PROTOCOL.md "Equal-length evaluation"): NONE, its
 * own samples only; MASK, every shard padded to the same number of whole
 * batches, the padding marked 0 in a `valid` tensor (u8 [B]). */
typedef enum { BFEED_EVAL_PAD_NONE = 0, BFEED_EVAL_PAD_MASK = 1 } bfeed_eval_pad;

/* What a stream serves. Always start from bfeed_stream_opts_init(), which
 * sets the defaults noted below, then change what you need. */
typedef struct bfeed_stream_opts {
  uint32_t batch;        /* samples per batch, 1..65536 (default 64) */
  uint32_t size;         /* output height (and width, unless width is set) in pixels, 8..4096 (224) */
  bfeed_mode mode;       /* TRAIN: RandomResizedCrop + flip; EVAL: resize + centre crop */
  bfeed_layout layout;   /* NCHW (default) or NHWC for the image tensor */
  bfeed_norm normalize;  /* IMAGENET mean/std (default), NONE: raw 0..255,
                            CUSTOM: mean[] and std[] below, on the 0..1 scale */
  float mean[3], std[3];
  uint64_t seed;         /* keys every random choice (default 0) */
  uint64_t epoch;        /* first epoch to serve (resume), default 0 */
  uint64_t batch_index;  /* first batch within that epoch (resume), default 0 */
  uint32_t shard_index;  /* this reader's shard, 0..shard_count-1 (0) */
  uint32_t shard_count;  /* number of shards, >= 1 (1) */
  bfeed_codec codec;     /* AUTO (libbfeed's default), NONE (the protocol's), ZSTD, U8, U8_ZSTD,
                            U8_LZ4 or LZ4 */
  int codec_level;       /* zstd level of ZSTD and U8_ZSTD, 1..19 (3); LZ4 takes none */
  uint32_t window;       /* batches prefetched ahead of the consumer, 1..64 (4) */
  bfeed_shuffle shuffle; /* AUTO: shuffle in TRAIN, dataset order in EVAL */
  int keep_partial;      /* 1: serve the last, short batch of an epoch (0) */
  uint64_t epochs;       /* epochs to serve before end of stream, 0 = forever (0) */
  /* Text datasets (kinds text and manifest; a daemon refuses them on others).
   * The image options above do not apply to text. */
  bfeed_pool pool;       /* NONE: `tokens` bf16 [B,T,D]; MEAN: `pooled` bf16 [B,D], the
                            mean of each sample's token vectors (NONE) */
  uint32_t max_len;      /* tokens served per sample, 0..1048576; 0 = the dataset's
                            max_len setting (0: all) */
  int fixed_len;         /* 1: every batch has T = max_len; 0: T = the longest
                            sample in the batch, capped by max_len (0) */
  uint32_t bucket;       /* length bucketing: order each run of `bucket` batches by
                            sample length, 0..65536, 0 = off (0) */
  /* Subsets of the stream's batches, for several daemons behind one stream;
   * the bytes of each batch do not change. */
  bfeed_select select;   /* ALL (default), RESIDUE, ON_DEMAND or STRIDE */
  uint64_t select_mod;   /* RESIDUE, STRIDE: >= 1 (1) */
  uint64_t select_rem;   /* RESIDUE: < select_mod (0) */
  /* Set by libbfeed from bfeed_connect_opts.shm on Unix sockets; the bytes
   * of each batch do not change. */
  bfeed_transport transport; /* SOCKET (default) or SHM */
  /* Fields are only ever appended below, taken from `reserved` so that the
   * struct keeps its size (bfeed_stream_opts_size() tells a binding built
   * against another header; libbfeed's soname changes when it grows). */
  float crop_scale[2];   /* TRAIN: RandomResizedCrop's scale range, the crop's share of the
                            image's area, 0 < lo <= hi <= 1 ({0.08, 1}) */
  bfeed_eval_decode eval_decode; /* EVAL: EXACT (default) or FAST, JPEGs at reduced scale */
  bfeed_share share;     /* ON (default): batches built once for every identical stream; OFF */
  bfeed_eval_pad eval_pad; /* EVAL: NONE (default) or MASK, equal-length shards with `valid` */
  uint64_t start_sample; /* the first epoch begins after this many samples of its order,
                            consumed before (elastic resume; needs epochs = 1), 0 */
  uint64_t job;          /* the training job the stream belongs to, 0 = none (0): the daemon
                            shows a job's streams, on any connection, as one (PROTOCOL.md) */
  uint32_t width;        /* output width, 8..4096; 0 = size, a square (0) */
  bfeed_interp interpolation; /* BILINEAR (default), BICUBIC or NEAREST: the train crop's and
                            eval's resampling, torchvision's InterpolationMode on PIL */
  uint32_t resize;       /* EVAL: Resize's shorter side, 0..65535, before CenterCrop(size,
                            width); 0 = round(max(size, width) * 256 / 224) (0) */
  float crop_ratio[2];   /* TRAIN: RandomResizedCrop's ratio range, 0 < lo <= hi ({3/4, 4/3}) */
  float hflip;           /* TRAIN: RandomHorizontalFlip's p, 0..1 (0.5) */
  bfeed_train_decode train_decode; /* TRAIN: EXACT (default) or FAST, JPEG crops at reduced scale */
  uint32_t reserved_geometry; /* zero: the four bytes left before the struct grew (below) */
  /* The recipes' augmentation (README "Recipes"): the struct grew from 256
   * to 384 bytes here (soname libbfeed.so.2). */
  float color_jitter[4]; /* TRAIN: ColorJitter's brightness, contrast, saturation (>= 0) and
                            hue (0..0.5); 0 turns one off ({0, 0, 0, 0}) */
  bfeed_auto_augment auto_augment; /* TRAIN: NONE (default), IMAGENET, RAND or TA_WIDE */
  uint32_t aa_num_ops;   /* RandAugment's num_ops, 1..16 (2) */
  uint32_t aa_magnitude; /* RandAugment's magnitude: a bin, below aa_bins (9) */
  uint32_t aa_bins;      /* num_magnitude_bins of RandAugment and TrivialAugmentWide, 2..256 (31) */
  bfeed_interp aa_interpolation; /* the policies' rotate/affine filter (NEAREST) */
  float aa_fill[3];      /* the policies' fill, 0..255 ({0, 0, 0}) */
  float random_erase;    /* TRAIN: RandomErasing's p, after Normalize (0) */
  float erase_scale[2];  /* its scale= ({0.02, 0.33}) */
  float erase_ratio[2];  /* its ratio= ({0.3, 3.3}) */
  float erase_value[3];  /* its value= per channel, normalised ({0, 0, 0}) */
  int erase_random;      /* 1: value="random", standard normal values (0) */
  float mixup_alpha;     /* TRAIN: MixUp over each batch, lam ~ Beta(a, a); 0 = off (0) */
  float cutmix_alpha;    /* TRAIN: CutMix over each batch; with MixUp, one of the two (0) */
  uint32_t mix_classes;  /* width of the mixed `target` tensor, 0 = the dataset's classes (0) */
  int explain;           /* 1: each batch carries what was drawn for it (`explain`, JSON) (0) */
  uint32_t reserved[15]; /* zero (bfeed_stream_opts_init): room for options to come */
} bfeed_stream_opts;

#ifdef __cplusplus
}
#endif
#endif /* BFEED_TYPES_H */
