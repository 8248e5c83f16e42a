/*
 * pack.h -- bfeed-pack, the writer of prepared datasets (`bfeed pack`,
 * PACK_FORMAT.md): what its three files share.
 *   pack_main.c   the command line, the source, the metadata, the summary
 *   pack_run.c    the shard threads, resuming, progress
 *   pack_image.c  one sample's image as the pack stores it
 * It reads its source through daemon/sources (dataset_open: any kind the
 * daemon serves) and writes with daemon/sources/packfile.c, so it links the
 * daemon's libraries; the bfeed CLI runs it as `bfeed pack` (git-style,
 * client/cli/cli.c), never links it.
 */
#ifndef BFEED_PACK_H
#define BFEED_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "image_decode.h"

/* The longer side's cap when --max-side is not given: the smallest of those
 * measured that keeps eval within 0.5 grey levels of the originals' (README
 * "Prepared datasets": 0.15 raw, 0.24 JPEG on ImageNet). */
#define PACK_DEFAULT_MAX_SIDE 512
#define PACK_DEFAULT_QUALITY 90
#define PACK_DEFAULT_SHARD_SAMPLES 1024

typedef enum pack_images { PACK_ORIGINAL = 0, PACK_JPEG = 1, PACK_RAW = 2 } pack_images;

typedef struct pack_opts {
  pack_images images;
  uint32_t max_side;   /* 0: no cap */
  uint32_t short_side; /* 0: no cap */
  uint32_t quality;
  uint32_t shard_samples;
  int jobs;
  int force;
} pack_opts;

/* "original", "jpeg", "raw" */
const char *pack_images_name(pack_images m);

/* One thread's decoder and buffers for pack_image_convert. */
typedef struct pack_image pack_image;
pack_image *pack_image_new(void);
void pack_image_free(pack_image *p);
/* The bytes to store for the image src[0..len): the original (--images
 * original; and a JPEG within the cap with --images jpeg), or decoded in
 * full as Pillow's convert("RGB"), shrunk when over short_side or
 * max_side (pack_image_capped) with Pillow's bilinear resample, then
 * encoded as JPEG or a raw record. *out is src or p's own memory, valid
 * until the next call. BFEED_EDATASET for an image that does not decode
 * (the sample is left out), BFEED_ENOMEM, BFEED_ECODEC. */
int pack_image_convert(pack_image *p, const pack_opts *o, const uint8_t *src, size_t len, const uint8_t **out,
                       size_t *out_len, char *err, size_t errlen);
/* The size a w x h image is stored at under the caps (0: none): first
 * short_side, as torchvision's Resize(short_side) sizes it (shorter side =
 * short_side, the longer int(short_side * long / short)) when the shorter
 * side is over it; then max_side: unchanged within it, else the longer
 * side = max_side and the other rounded as Pillow's
 * Image.thumbnail((max_side, max_side)) rounds it. */
void pack_image_capped(int w, int h, uint32_t max_side, uint32_t short_side, int *tw, int *th);

/* A packing job: the source, the options and where it goes. */
typedef struct pack_job {
  dataset *d;
  const pack_opts *o;
  const char *out;
  uint64_t key;      /* of the source's fingerprint and the options (shards carry it) */
  uint32_t nshards;
  uint32_t dim;      /* features per sample */
  /* Results, once pack_run returns: */
  uint64_t records, bytes_written, bytes_source, skipped, kept_shards;
  double seconds;
} pack_job;

/* Write every shard not already complete and valid for this key; the
 * metadata is the caller's. 0, or a negative code with err. */
int pack_run(pack_job *j, char *err, size_t errlen);

#endif
