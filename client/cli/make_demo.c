/*
 * make_demo.c -- the synthetic stripes dataset (see make_demo.h).
 *
 * Each image is a stripe pattern: bands of the class colour on a dark
 * background, horizontal or vertical, under a linear illumination ramp, plus
 * luminance noise. Everything random is drawn from a splitmix64 stream keyed
 * by (seed, split, class, index), so no image depends on any other.
 */
#include "cli_util.h"
#include "make_demo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "bfeed.h"
#include "demo_files.h"
#include "demo_rng.h"
#include "make_demo_shards.h"

#define DEMO_MAX_PER_CLASS 10000 /* file names are %04d */
#define DEMO_SIDE_MIN 32         /* below this the stripes stop being stripes */
#define DEMO_SIDE_MAX 4096

enum { DEMO_RED, DEMO_GREEN, DEMO_BLUE, DEMO_GRAY };

static const char *const demo_class_names[MAKE_DEMO_NCLASSES] = {
    "red_horizontal",  "red_vertical",  "green_horizontal", "green_vertical",
    "blue_horizontal", "blue_vertical", "gray_horizontal",  "gray_vertical",
};

/* Base band colours, before per-image brightness and tint. */
static const float demo_colours[4][3] = {
    {205, 45, 40}, {45, 175, 60}, {45, 80, 210}, {200, 200, 200}};

static const char *const demo_splits[2] = {"train", "val"};


#define DEMO_SALT 0x6d616b652d64656dULL /* "make-dem" */

/* ------------------------------------------------------------------ */
/* Rendering */

typedef struct demo_image {
  int w, h;
  int ncomp;      /* 1: a grayscale JPEG, 3: RGB */
  int subsamp;    /* TJSAMP_* */
  int progressive;
  int vertical;   /* stripes vary along x */
  float period;   /* in pixels */
  float duty;     /* fraction of a period that is band */
  float centre;   /* where a band is centred, in pixels along the varying axis */
  float band[3], bg[3];
  float ramp_x, ramp_y, ramp_c; /* illumination = ramp_c + ramp_x*x + ramp_y*y */
  int noise;      /* luminance noise amplitude, +-noise */
} demo_image;

static void demo_pick_colour(demo_rng *r, int colour, float brightness, float tint,
                             float base, float out[3]) {
  float t[3];
  for (int c = 0; c < 3; c++) t[c] = demo_uniform(r, -tint, tint);
  for (int c = 0; c < 3; c++) {
    /* Gray stays exactly gray, so its 3-channel files are truly R=G=B. */
    float tc = colour == DEMO_GRAY ? t[0] : t[c];
    out[c] = (base >= 0 ? base : demo_colours[colour][c]) * brightness + tc;
  }
}

static void demo_draw_params(demo_rng *r, int cls, const make_demo_opts *o, demo_image *im) {
  int colour = cls / 2;
  im->vertical = cls % 2;
  im->w = demo_int(r, o->min_side, o->max_side);
  im->h = demo_int(r, o->min_side, o->max_side);
  im->ncomp = colour == DEMO_GRAY && (demo_next(r) & 1) ? 1 : 3;
  static const int samps[4] = {TJSAMP_420, TJSAMP_420, TJSAMP_444, TJSAMP_422};
  im->subsamp = im->ncomp == 1 ? TJSAMP_GRAY : samps[demo_next(r) & 3];
  im->progressive = (demo_next(r) & 7) == 0;

  /* 2.5 to 5 periods across the short side: after a resize to 32 pixels a
   * band is still 2 or more pixels wide. */
  int short_side = im->w < im->h ? im->w : im->h;
  im->period = (float)short_side / demo_uniform(r, 2.5f, 5.0f);
  im->duty = demo_uniform(r, 0.35f, 0.6f);
  /* A band sits near the centre, up to a fifth of a period off: random
   * crops in training see every phase, yet centre crops of one class
   * share a layout, which is what makes the classes separable by even a
   * linear model (the oracle test checks this). */
  float axis = (float)(im->vertical ? im->w : im->h);
  im->centre = axis / 2 + demo_uniform(r, -0.2f, 0.2f) * im->period;

  demo_pick_colour(r, colour, demo_uniform(r, 0.75f, 1.2f), 14.0f, -1.0f, im->band);
  demo_pick_colour(r, colour, 1.0f, 6.0f, demo_uniform(r, 15.0f, 65.0f), im->bg);

  /* Uneven lighting, up to +-35% at the corners, in a random direction. */
  float g = demo_uniform(r, 0.0f, 0.5f);
  float theta = demo_uniform(r, 0.0f, 6.2831853f);
  im->ramp_x = g * cosf(theta) / (float)im->w;
  im->ramp_y = g * sinf(theta) / (float)im->h;
  im->ramp_c = 1.0f - 0.5f * g * (cosf(theta) + sinf(theta));
  im->noise = demo_int(r, 4, 20);
}

static int demo_in_band(const demo_image *im, int pos) {
  float t = ((float)pos + 0.5f - im->centre) / im->period + im->duty / 2;
  return t - floorf(t) < im->duty;
}

static unsigned char demo_clamp(float v) {
  return v <= 0 ? 0 : v >= 255 ? 255 : (unsigned char)(v + 0.5f);
}

/* Fill px (w*h*ncomp bytes, rows packed) from im, drawing noise from r. */
static void demo_render(const demo_image *im, demo_rng *r, unsigned char *px) {
  uint64_t bits = 0;
  int nbits = 0;
  int span = 2 * im->noise + 1;
  for (int y = 0; y < im->h; y++) {
    int row_band = demo_in_band(im, y);
    float light = im->ramp_c + im->ramp_y * (float)y;
    unsigned char *p = px + (size_t)y * (size_t)im->w * (size_t)im->ncomp;
    for (int x = 0; x < im->w; x++, light += im->ramp_x) {
      const float *col = (im->vertical ? demo_in_band(im, x) : row_band) ? im->band : im->bg;
      if (nbits == 0) {
        bits = demo_next(r);
        nbits = 8;
      }
      float noise = (float)((int)((bits & 0xff) * (uint64_t)span >> 8) - im->noise);
      bits >>= 8;
      nbits--;
      for (int c = 0; c < im->ncomp; c++) *p++ = demo_clamp(col[c] * light + noise);
    }
  }
}

/* ------------------------------------------------------------------ */
/* Files */

/* 1 if dir exists and holds anything, 0 if not, negative on error. */
static int dir_nonempty(const char *dir, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return 0;
    return cli_fail(err, errlen, BFEED_EIO, "%s: cannot open directory: %s", dir,
                     strerror(errno));
  }
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL)
    found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return found;
}

int demo_dir_check(const char *dir, int overwrite, char *err, size_t errlen) {
  int nonempty = dir_nonempty(dir, err, errlen);
  if (nonempty < 0) return nonempty;
  if (nonempty && !overwrite)
    return cli_fail(err, errlen, BFEED_EINVAL,
                    "%s: directory is not empty; refusing to write a dataset into it (--force writes over it)", dir);
  return 0;
}

/* Write buf to path via path.tmp and a rename. */
int demo_write_file(const char *path, const unsigned char *buf, size_t len, char *err,
                           size_t errlen) {
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: path too long", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return cli_fail(err, errlen, BFEED_EIO, "%s: cannot create: %s", tmp, strerror(errno));
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, buf + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) break;
    done += (size_t)w;
  }
  int saved = errno;
  if (close(fd) != 0 && done == len) {
    saved = errno;
    done = 0;
  }
  if (done != len) {
    unlink(tmp);
    return cli_fail(err, errlen, BFEED_EIO, "%s: write failed: %s", tmp, strerror(saved));
  }
  if (rename(tmp, path) != 0) {
    saved = errno;
    unlink(tmp);
    return cli_fail(err, errlen, BFEED_EIO, "%s: cannot rename into place: %s", path,
                     strerror(saved));
  }
  return 0;
}

/* ------------------------------------------------------------------ */

void make_demo_opts_init(make_demo_opts *o) {
  *o = (make_demo_opts){.train_per_class = 80, .val_per_class = 20, .seed = 1, .quality = 90,
                        .min_side = 96, .max_side = 320, .format = MAKE_DEMO_FOLDER};
}

const char *make_demo_class_name(int i) {
  return i >= 0 && i < MAKE_DEMO_NCLASSES ? demo_class_names[i] : NULL;
}

static int demo_check_opts(const make_demo_opts *o, char *err, size_t errlen) {
  if (o->train_per_class < 1 || o->train_per_class > DEMO_MAX_PER_CLASS)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: train images per class %d is outside 1..%d",
                     o->train_per_class, DEMO_MAX_PER_CLASS);
  if (o->val_per_class < 0 || o->val_per_class > DEMO_MAX_PER_CLASS)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: val images per class %d is outside 0..%d",
                     o->val_per_class, DEMO_MAX_PER_CLASS);
  if (o->quality < 1 || o->quality > 100)
    return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: JPEG quality %d is outside 1..100",
                     o->quality);
  if (o->min_side < DEMO_SIDE_MIN || o->min_side > o->max_side || o->max_side > DEMO_SIDE_MAX)
    return cli_fail(err, errlen, BFEED_EINVAL,
                     "make-demo: image sides %d..%d must satisfy %d <= min <= max <= %d",
                     o->min_side, o->max_side, DEMO_SIDE_MIN, DEMO_SIDE_MAX);
  return 0;
}

/* What make_demo() carries from image to image. Not a TurboJPEG handle:
 * libjpeg-turbo 2.1 keeps the progressive setting of one tjCompress2() call
 * into the next on the same handle, which would make each file depend on
 * the ones before it. A handle per image is cheap. */
typedef struct demo_ctx {
  const make_demo_opts *o;
  unsigned char *px; /* max_side^2 * 3 */
  make_demo_stats st;
  make_demo_shards *shards; /* tfrecord, tar: the split's writer */
} demo_ctx;

static int demo_one(demo_ctx *x, const char *cls_dir, int split, int cls, int label, int index, char *err,
                    size_t errlen) {
  demo_rng r;
  demo_image im;
  demo_rng_init(&r, DEMO_SALT, x->o->seed, split, cls, index);
  demo_draw_params(&r, cls, x->o, &im);
  demo_render(&im, &r, x->px);

  unsigned char *jpeg = NULL;
  unsigned long jpeg_len = 0;
  int flags = im.progressive ? TJFLAG_PROGRESSIVE : 0;
  int pf = im.ncomp == 1 ? TJPF_GRAY : TJPF_RGB;
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/%04d.jpg", cls_dir, index) >= sizeof path)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: path too long", cls_dir);
  tjhandle tj = tjInitCompress();
  if (!tj)
    return cli_fail(err, errlen, BFEED_ECODEC, "%s: cannot start TurboJPEG: %s", path,
                     tjGetErrorStr2(NULL));
  if (tjCompress2(tj, x->px, im.w, 0, im.h, pf, &jpeg, &jpeg_len, im.subsamp, x->o->quality,
                  flags) != 0) {
    int rc = cli_fail(err, errlen, BFEED_ECODEC, "%s: JPEG encoding failed: %s", path,
                       tjGetErrorStr2(tj));
    tjFree(jpeg);
    tjDestroy(tj);
    return rc;
  }
  tjDestroy(tj);
  int rc = x->shards ? make_demo_shards_add(x->shards, jpeg, jpeg_len, label, err, errlen)
                     : demo_write_file(path, jpeg, jpeg_len, err, errlen);
  tjFree(jpeg);
  if (rc == 0) {
    x->st.files++;
    x->st.bytes += jpeg_len;
  }
  return rc;
}

static int demo_cmp_class(const void *a, const void *b) {
  return strcmp(demo_class_names[*(const int *)a], demo_class_names[*(const int *)b]);
}

/* Classes in the order of their sorted names, which is how a folder's
 * labels are numbered: shards then hold the samples in the folder's
 * (class, path) order with the same labels, so all formats serve the same
 * batches. */
static int demo_split(demo_ctx *x, const char *dir, int split, int count, char *err,
                      size_t errlen) {
  static const char *const shard_splits[2][2] = {{"train", "validation"}, {"train", "val"}};
  int order[MAKE_DEMO_NCLASSES];
  for (int c = 0; c < MAKE_DEMO_NCLASSES; c++) order[c] = c;
  qsort(order, MAKE_DEMO_NCLASSES, sizeof order[0], demo_cmp_class);
  int rc = 0, tar = x->o->format == MAKE_DEMO_TAR;
  if (x->o->format != MAKE_DEMO_FOLDER) {
    int total = count * MAKE_DEMO_NCLASSES, nshards = split == 0 ? MAKE_DEMO_TRAIN_SHARDS : 1;
    rc = cli_mkdirs(dir, err, errlen);
    if (rc == 0) rc = make_demo_shards_open(&x->shards, tar, dir, shard_splits[tar][split], total, nshards, err, errlen);
  }
  char cls_dir[PATH_MAX];
  for (int label = 0; rc == 0 && label < MAKE_DEMO_NCLASSES; label++) {
    int cls = order[label];
    if ((size_t)snprintf(cls_dir, sizeof cls_dir, "%s/%s/%s", dir, demo_splits[split],
                         demo_class_names[cls]) >= sizeof cls_dir)
      rc = cli_fail(err, errlen, BFEED_EINVAL, "%s: path too long", dir);
    if (rc == 0 && !x->shards) rc = cli_mkdirs(cls_dir, err, errlen);
    for (int i = 0; rc == 0 && i < count; i++) rc = demo_one(x, cls_dir, split, cls, label, i, err, errlen);
  }
  if (x->shards) rc = make_demo_shards_close(x->shards, rc, err, errlen);
  x->shards = NULL;
  return rc;
}

int make_demo(const char *dir, const make_demo_opts *o, make_demo_stats *stats, char *err,
              size_t errlen) {
  make_demo_opts defaults;
  if (!o) {
    make_demo_opts_init(&defaults);
    o = &defaults;
  }
  if (!dir || !*dir) return cli_fail(err, errlen, BFEED_EINVAL, "make-demo: no directory given");
  int rc = demo_check_opts(o, err, errlen);
  if (rc != 0) return rc;
  if ((rc = demo_dir_check(dir, o->overwrite, err, errlen)) != 0) return rc;

  demo_ctx x = {.o = o};
  x.px = malloc((size_t)o->max_side * (size_t)o->max_side * 3);
  if (!x.px) rc = cli_fail(err, errlen, BFEED_ENOMEM, "make-demo: out of memory");
  int counts[2] = {o->train_per_class, o->val_per_class};
  for (int split = 0; rc == 0 && split < 2; split++)
    if (counts[split] > 0) rc = demo_split(&x, dir, split, counts[split], err, errlen);

  free(x.px);
  if (stats) *stats = x.st;
  return rc;
}
