/*
 * sample.h -- one image sample: JPEG, PNG or WebP bytes in, height x width RGB8 out.
 * Called by batch.c (a worker making a batch) and the tests' dump and bench tools.
 *
 * Decodes through image_decode.h to the pixels of Pillow's convert("RGB"):
 * a JPEG decoding only the rows and columns the crop (or eval's centre
 * window) needs, at full size unless asked (train_decode=fast: the IDCT
 * scales down (M/8) a crop much larger than the output; eval_decode=fast:
 * exactly when Pillow's Image.draft would), a PNG keeping only the rows it
 * needs, a WebP whole; then resamples with Pillow's filter (bilinear or
 * bicubic with antialias, the same coefficients and 8-bit fixed-point
 * arithmetic as Pillow's Resample.c; nearest as Image.resize maps it),
 * and mirrors.
 */
#ifndef BFEED_SAMPLE_H
#define BFEED_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "decode_mem.h"
#include "rng.h"
#include "transform.h"

enum sample_mode { SAMPLE_TRAIN = 0, SAMPLE_EVAL = 1 };

typedef struct sample_params {
  int size;            /* output height, and width unless width is set */
  int width;           /* output width; 0: size, a square */
  enum sample_mode mode;
  int allow_dct_scale; /* 1: let the IDCT shrink large train crops (train_decode=fast);
                          0: at full size, as torchvision (the streams' default) */
  int eval_draft;      /* 1: eval JPEGs at Pillow's draft scale (eval_decode=fast);
                          0 (default): at full size, as torchvision */
  uint64_t max_pixels; /* larger images are refused from their header; 0 = no limit */
  int defer_flip;      /* 1: leave a train flip to the caller (scratch.flip) instead of mirroring */
  transform_rrc_params rrc; /* train: RandomResizedCrop's scale and ratio, the flip's p;
                               zeroed (scale[1] == 0): torchvision's defaults */
  bfeed_interp interp; /* the train crop's and eval Resize's filter (0: bilinear) */
  int resize;          /* eval: Resize's shorter side; 0: round(max(H, W) * 256 / 224) */
} sample_params;

/* The output's width: p->width, or p->size for a square. */
static inline int sample_width(const sample_params *p) { return p->width ? p->width : p->size; }

/* Per-thread scratch memory reused across samples (grows as needed, so a
 * worker stops allocating once it has seen its largest ordinary image;
 * a buffer over DECODE_MEM_KEEP, for a large image, goes back after that
 * sample). Counted in decode_mem_held. Zero-initialise it; free it with
 * sample_scratch_free. */
struct image_decoder;
typedef struct sample_scratch {
  decode_mem_buf buf[2]; /* resize scratch, filter weights */
  struct image_decoder *dec; /* holds the decoded pixels; created on first use */
  int flip; /* with defer_flip: whether the last sample's pixels still need mirroring */
  transform_crop crop; /* the last train sample's crop box and flip */
  transform_eval eval; /* the last eval sample's resize and window */
  uint64_t resize_ns; /* time spent resizing (and mirroring), added up: the rest of a load decodes */
} sample_scratch;
void sample_scratch_free(sample_scratch *s);

/* Decode and transform one image, buf[0..len), whose format its first bytes
 * tell. out gets size*width*3 bytes, HWC, RGB. rng supplies the train-mode
 * crop and flip draws (unused in EVAL). Returns 0, or BFEED_EDATASET
 * (BFEED_ENOMEM, BFEED_EINTERNAL) with a one-line reason in err that starts
 * with name (a path, a record: "NAME: truncated data", "NAME: not a JPEG,
 * PNG or WebP image", "NAME: PNG of WxH = N pixels, over the max_pixels
 * limit ..."); never aborts on bad input. */
int sample_load(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                rng_t *rng, uint8_t *out, sample_scratch *scratch, char *err, size_t errlen);

/* The same pipeline with the train crop or the eval geometry given instead
 * of drawn or derived from the image size: for tests and tools that drive
 * exact crops. p->mode is ignored. A crop outside the image is an error,
 * as is an eval window that leaves the resized image on a side it does
 * not cover whole (only F.center_crop's padding goes past the image). */
int sample_load_crop(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                     const transform_crop *crop, uint8_t *out, sample_scratch *scratch, char *err,
                     size_t errlen);
int sample_load_eval(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                     const transform_eval *ev, uint8_t *out, sample_scratch *scratch, char *err,
                     size_t errlen);

/* The IDCT scale (M of M/8, M in 1, 2, 4, 8) used for a clip rectangle of
 * src_w x src_h source pixels that is resized to out_w x out_h: the
 * smallest that leaves at least twice the output pixels in each direction,
 * so Pillow's antialiasing filter still does the final reduction. */
int sample_dct_scale(int src_w, int src_h, int out_w, int out_h);

/* Eval's IDCT scale (M of M/8), for a whole src_w x src_h image resized to
 * out_w x out_h: the scale Pillow's Image.draft("RGB", (out_w, out_h))
 * gives, 1/s for the largest s in 8, 4, 2, 1 with s <= min(src_w / out_w,
 * src_h / out_h) (integer quotients); 8 when the output is more than half
 * the source in either direction. The scaled image (ceil(src_w / s) x
 * ceil(src_h / s)) is then resized to out_w x out_h whole, as Pillow
 * resizes the drafted image. */
int sample_draft_scale(int src_w, int src_h, int out_w, int out_h);

#endif
