/*
 * sample_dump -- run the sample pipeline on commands read from stdin, for
 * the Pillow oracle (tests/daemon/image_oracle.py).
 *
 * One command per line. With crop and eval the geometry is explicit, so
 * the oracle decides it:
 *   crop SIZE DCT LEFT TOP WIDTH HEIGHT FLIP PATH
 *   eval SIZE DCT RESIZED_W RESIZED_H LEFT TOP PATH
 * load goes through sample_load itself, with rng(SEED, sample domain,
 * epoch 0, INDEX); MODE is train or eval:
 *   load SIZE DCT MODE SEED INDEX PATH
 * full decodes a whole image without resampling, to check the decoders
 * (JPEG, PNG, WebP) against Pillow's convert("RGB"):
 *   full PATH                 answers "ok N WIDTH HEIGHT\n" and HWC RGB
 * limit sets the pixel limit (max_pixels) of the commands after it; it
 * starts at the daemon's default:
 *   limit N                   answers "ok 0\n"
 * geom and rrcp set the geometry of the commands after them (the stream
 * options width, interpolation, resize; crop_scale, crop_ratio, hflip),
 * answering "ok 0\n"; they start at the defaults (0 0 0: a square,
 * bilinear, Resize(round(max(H, W) * 256 / 224)); torchvision's draws):
 *   geom WIDTH INTERP RESIZE  INTERP 0 bilinear, 1 bicubic, 2 nearest
 *   rrcp SLO SHI RLO RHI P    float32 bit patterns in hex
 * SIZE is the output's height, its width SIZE too unless geom set one.
 * DCT is 1 to let the IDCT scale down (train's large crops, as
 * train_decode=fast; eval as eval_decode=fast, at Pillow's draft scale), 0
 * to forbid it. Each answer is "ok N\n" followed by N bytes (SIZE x WIDTH x
 * 3, HWC RGB), or "err REASON\n". A train load answers "ok N LEFT TOP WIDTH
 * HEIGHT FLIP\n": the crop that the same generator gives transform_rrc,
 * which sample_load must have used. One process serves the whole run so the
 * scratch buffers are reused across images, as in a worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_decode.h"
#include "sample.h"

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* The crop sample_load draws for this image and generator: the same
 * header read and the same call, made here to tell the oracle. */
static int drawn_crop(const uint8_t *buf, size_t len, const rng_t *rng, const transform_rrc_params *p,
                      transform_crop *crop) {
  image_decoder *d = image_decode_new();
  image_decode_info info;
  char err[128];
  int rc = d ? image_decode_header(d, buf, len, 0, &info, err, sizeof(err)) : -1;
  if (rc == 0) {
    rng_t r = *rng;
    transform_rrc(info.width, info.height, p, &r, crop);
  }
  image_decode_free(d);
  return rc;
}

/* The whole image at full scale, RGBX to RGB, into *out (grown). */
static int full_decode(const uint8_t *buf, size_t len, const char *path, uint64_t max_pixels,
                       uint8_t **out, size_t *outcap, int *w, int *h, char *err, size_t errlen) {
  image_decoder *d = image_decode_new();
  image_decode_info info;
  const uint8_t *px;
  size_t stride;
  int rc = -1;
  if (!d)
    return snprintf(err, errlen, "out of memory"), -1;
  if (image_decode_header(d, buf, len, max_pixels, &info, err, errlen) == 0 &&
      image_decode_start(d, 8, err, errlen) == 0 &&
      image_decode_read(d, 0, info.width, 0, info.height, &px, &stride, err, errlen) == 0) {
    size_t need = (size_t)info.width * info.height * 3;
    if (need > *outcap) {
      free(*out);
      *outcap = (*out = malloc(need)) ? need : 0;
    }
    if (*out) {
      for (int y = 0; y < info.height; y++)
        for (int x = 0; x < info.width; x++)
          memcpy(*out + ((size_t)y * info.width + x) * 3, px + (size_t)y * stride + (size_t)x * 4, 3);
      *w = info.width;
      *h = info.height;
      rc = 0;
    } else {
      snprintf(err, errlen, "out of memory");
    }
  }
  if (rc != 0) {
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "%s: %s", path, why);
  }
  image_decode_free(d);
  return rc;
}

/* geom and rrcp: the settings every later command takes (g). */
static int set_geometry(const char *line, sample_params *g, char *err, size_t errlen) {
  int w, interp, resize;
  uint32_t b[5];
  if (sscanf(line, "geom %d %d %d", &w, &interp, &resize) == 3 && w >= 0 && w <= 4096 && interp >= 0 &&
      interp <= BFEED_INTERP_NEAREST && resize >= 0) {
    g->width = w, g->interp = (bfeed_interp)interp, g->resize = resize;
    return 0;
  }
  if (sscanf(line, "rrcp %x %x %x %x %x", &b[0], &b[1], &b[2], &b[3], &b[4]) == 5) {
    float f[5];
    memcpy(f, b, sizeof f);
    g->rrc = (transform_rrc_params){{f[0], f[1]}, {f[2], f[3]}, f[4]};
    return 0;
  }
  return snprintf(err, errlen, "bad command"), -1;
}

/* Parses one command line and runs it; returns what to print. */
static int run(char *line, sample_scratch *scratch, uint8_t **out, size_t *outcap, int *size,
               transform_crop *drawn, uint64_t *max_pixels, sample_params *g, char *err, size_t errlen) {
  char cmd[8], mode[8];
  int dct, a, b, c, d, flip, used = 0;
  unsigned long long seed, index;
  sample_params p = *g;
  transform_crop crop;
  transform_eval ev;
  rng_t rng;
  int load = 0;

  if (sscanf(line, "%7s", cmd) != 1)
    return snprintf(err, errlen, "bad command"), -1;
  drawn->width = 0;
  if (strcmp(cmd, "geom") == 0 || strcmp(cmd, "rrcp") == 0) {
    *size = 0;
    return set_geometry(line, g, err, errlen);
  }
  if (strcmp(cmd, "limit") == 0) {
    *size = 0;
    return sscanf(line, "limit %llu", &seed) == 1 ? (*max_pixels = seed, 0)
                                                   : (snprintf(err, errlen, "bad command"), -1);
  }
  if (strcmp(cmd, "full") == 0) {
    char *path = line + 5;
    path[strcspn(path, "\n")] = 0;
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (!buf)
      return snprintf(err, errlen, "cannot read %s", path), -1;
    int w = 0, h = 0;
    int rc = full_decode(buf, len, path, *max_pixels, out, outcap, &w, &h, err, errlen);
    free(buf);
    drawn->left = w; /* reported by main as the image size */
    drawn->top = h;
    *size = -1;
    return rc;
  }
  p.max_pixels = *max_pixels;
  if (strcmp(cmd, "crop") == 0 &&
      sscanf(line, "crop %d %d %d %d %d %d %d %n", &p.size, &dct, &a, &b, &c, &d, &flip,
             &used) == 7) {
    crop = (transform_crop){a, b, c, d, flip};
  } else if (strcmp(cmd, "eval") == 0 &&
             sscanf(line, "eval %d %d %d %d %d %d %n", &p.size, &dct, &a, &b, &c, &d, &used) ==
                 6) {
    ev = (transform_eval){a, b, c, d};
    p.mode = SAMPLE_EVAL;
  } else if (strcmp(cmd, "load") == 0 &&
             sscanf(line, "load %d %d %7s %llu %llu %n", &p.size, &dct, mode, &seed, &index,
                    &used) == 5) {
    load = 1;
    p.mode = strcmp(mode, "eval") == 0 ? SAMPLE_EVAL : SAMPLE_TRAIN;
    rng_init(&rng, seed, RNG_DOMAIN_SAMPLE, 0, index);
  } else {
    return snprintf(err, errlen, "bad command"), -1;
  }
  if (p.size < 1 || p.size > 4096 || used == 0)
    return snprintf(err, errlen, "bad command"), -1;
  p.allow_dct_scale = dct;
  p.eval_draft = dct;

  char *path = line + used;
  path[strcspn(path, "\n")] = 0;
  size_t len;
  uint8_t *jpeg = read_file(path, &len);
  if (!jpeg)
    return snprintf(err, errlen, "cannot read %s", path), -1;
  size_t need = (size_t)p.size * sample_width(&p) * 3;
  if (need > *outcap) {
    free(*out);
    *outcap = 0;
    if (!(*out = malloc(need))) {
      free(jpeg);
      return snprintf(err, errlen, "out of memory"), -1;
    }
    *outcap = need;
  }
  int rc;
  if (load) {
    if (p.mode == SAMPLE_TRAIN && drawn_crop(jpeg, len, &rng, &p.rrc, drawn) != 0)
      drawn->width = 0;
    rc = sample_load(jpeg, len, path, &p, &rng, *out, scratch, err, errlen);
  } else if (p.mode == SAMPLE_EVAL) {
    rc = sample_load_eval(jpeg, len, path, &p, &ev, *out, scratch, err, errlen);
  } else {
    rc = sample_load_crop(jpeg, len, path, &p, &crop, *out, scratch, err, errlen);
  }
  free(jpeg);
  *size = p.size * sample_width(&p); /* the caller multiplies by 3 */
  return rc;
}

int main(void) {
  sample_scratch scratch = {0};
  uint8_t *out = NULL;
  size_t outcap = 0;
  char line[8192], err[8192 + 256];
  uint64_t max_pixels = IMAGE_DECODE_MAX_PIXELS_DEFAULT;
  sample_params geometry = {.mode = SAMPLE_TRAIN, .rrc = transform_rrc_default};

  while (fgets(line, sizeof(line), stdin)) {
    int size = 0;
    transform_crop c;
    if (run(line, &scratch, &out, &outcap, &size, &c, &max_pixels, &geometry, err, sizeof(err)) == 0) {
      size_t n = size < 0 ? (size_t)c.left * c.top * 3 : (size_t)size * 3;
      if (size < 0)
        printf("ok %zu %d %d\n", n, c.left, c.top);
      else if (c.width > 0)
        printf("ok %zu %d %d %d %d %d\n", n, c.left, c.top, c.width, c.height, c.flip);
      else
        printf("ok %zu\n", n);
      if (n) fwrite(out, 1, n, stdout); /* a geometry answer of no pixels has no buffer (NULL) */
    } else {
      printf("err %s\n", err);
    }
    fflush(stdout);
  }
  free(out);
  sample_scratch_free(&scratch);
  return 0;
}
