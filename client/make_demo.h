/*
 * make_demo.h -- write a small synthetic ImageFolder dataset of JPEGs.
 *
 * `bfeed make-demo DIR` uses it so that the daemon, the benchmark and a toy
 * training run can be tried without ImageNet:
 *
 *     DIR/train/<class>/0000.jpg ...     DIR/val/<class>/0000.jpg ...
 *
 * Eight classes: four colours (red, green, blue, gray) x two stripe
 * orientations (horizontal, vertical), e.g. "red_horizontal". The images are
 * made to be *learnable* -- a small MLP on 32x32 crops tells the classes
 * apart -- but not trivial: sizes (and aspect ratios) vary, the stripes'
 * period, width and phase vary, and brightness, tint, illumination and pixel
 * noise are jittered, so colour alone cannot tell the orientations apart.
 * Half of the gray classes' images are single-channel (grayscale) JPEGs, and
 * chroma subsampling and progressive coding vary, so a decoder meets the
 * kinds of files a real dataset holds.
 *
 * Deterministic: each image is a pure function of (seed, split, class,
 * index), the size range and the quality, so the same options write
 * byte-identical files (on one platform, with the same libjpeg-turbo and
 * libm: the drawing uses float arithmetic), and fewer images per class
 * write a prefix of the same images.
 */
#ifndef BFEED_MAKE_DEMO_H
#define BFEED_MAKE_DEMO_H

#include <stddef.h>
#include <stdint.h>

#define MAKE_DEMO_NCLASSES 8

typedef struct make_demo_opts {
  int train_per_class; /* images per class under train/ (default 80) */
  int val_per_class;   /* images per class under val/ (default 20) */
  uint64_t seed;       /* default 1 */
  int quality;         /* JPEG quality, 1..100 (default 90) */
  int min_side;        /* each side is drawn from [min_side, max_side] */
  int max_side;        /* (defaults 96 and 320; 32 <= min <= max <= 4096) */
  int overwrite;       /* nonzero: write into DIR even if it is not empty;
                          files of the same names are replaced, others kept */
} make_demo_opts;

typedef struct make_demo_stats {
  int files;      /* JPEGs written */
  uint64_t bytes; /* their total size */
} make_demo_stats;

void make_demo_opts_init(make_demo_opts *o);

/* The folder name of class i in 0..MAKE_DEMO_NCLASSES-1, e.g.
 * "red_horizontal"; NULL outside that range. */
const char *make_demo_class_name(int i);

/*
 * Write the dataset into dir, creating it (and its parents) if needed.
 * Refuses a dir that exists and is not empty unless o->overwrite. Each
 * file is written under a temporary name and renamed into place, so an
 * interrupted run leaves only whole JPEGs behind.
 *
 * o may be NULL for the defaults; stats may be NULL. Returns 0, or a
 * negative BFEED_E* code (BFEED_EINVAL for bad options or a non-empty dir,
 * BFEED_EIO for a file system error, BFEED_ECODEC if encoding fails,
 * BFEED_ENOMEM) with a message naming the path in err[0..errlen).
 */
int make_demo(const char *dir, const make_demo_opts *o, make_demo_stats *stats, char *err,
              size_t errlen);

#endif
