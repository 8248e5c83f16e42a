/*
 * pack_image.c -- one sample's image as the pack stores it (pack.h):
 * decoded by the daemon's own decoder (so the pixels are those the folder
 * would give), capped with the daemon's Pillow-exact bilinear resample,
 * encoded by TurboJPEG or as a raw record (raw_decode.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "bfeed_types.h"
#include "pack.h"
#include "raw_decode.h"
#include "resize.h"

struct pack_image {
  image_decoder *dec;
  tjhandle tj;
  uint8_t *rgb, *out, *mem;
  size_t rgb_cap, out_cap, mem_cap;
};

const char *pack_images_name(pack_images m) {
  static const char *const names[] = {"original", "jpeg", "raw"};
  return (unsigned)m < 3 ? names[m] : "?";
}

pack_image *pack_image_new(void) {
  pack_image *p = calloc(1, sizeof *p);
  if (p && !(p->dec = image_decode_new())) {
    free(p);
    return NULL;
  }
  return p;
}

void pack_image_free(pack_image *p) {
  if (!p) return;
  image_decode_free(p->dec);
  if (p->tj) tjDestroy(p->tj);
  free(p->rgb);
  free(p->out);
  free(p->mem);
  free(p);
}

static int pack_image_grow(uint8_t **b, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  uint8_t *n = realloc(*b, need);
  if (!n) return -1;
  *b = n;
  *cap = need;
  return 0;
}

/* Pillow's thumbnail: of floor and ceil, the one whose aspect ratio is
 * nearer the image's (the first on a tie), at least 1. */
static int pack_image_round(double number, double aspect, double cap, int height) {
  double lo = floor(number), hi = ceil(number);
  double klo = height ? (lo == 0 ? 0 : fabs(aspect - cap / lo)) : fabs(aspect - lo / cap);
  double khi = height ? (hi == 0 ? 0 : fabs(aspect - cap / hi)) : fabs(aspect - hi / cap);
  double pick = khi < klo ? hi : lo;
  return pick < 1 ? 1 : (int)pick;
}

/* torchvision 0.14's F.resize(img, [n]) (_compute_resized_output_size):
 * the shorter side becomes n, the longer int(n * long / short), so that a
 * pack capped at n holds exactly what eval's Resize(n) makes of the
 * original (round(S * 256 / 224) = n: eval at S is exact from the pack). */
static void pack_image_short(int *w, int *h, uint32_t n) {
  int s = *w <= *h ? *w : *h, l = *w <= *h ? *h : *w;
  if (n == 0 || (uint32_t)s <= n) return;
  int nl = (int)((double)n * l / s);
  if (*w <= *h) *w = (int)n, *h = nl;
  else *h = (int)n, *w = nl;
}

void pack_image_capped(int w, int h, uint32_t max_side, uint32_t short_side, int *tw, int *th) {
  pack_image_short(&w, &h, short_side);
  uint32_t cap = max_side;
  *tw = w;
  *th = h;
  if (cap == 0 || ((uint32_t)w <= cap && (uint32_t)h <= cap)) return;
  double aspect = (double)w / h, c = cap;
  if (1.0 >= aspect) {
    *tw = pack_image_round(c * aspect, aspect, c, 0);
    *th = (int)cap;
  } else {
    *tw = (int)cap;
    *th = pack_image_round(c / aspect, aspect, c, 1);
  }
}

/* The decoded image (RGBX at px) as tw x th RGB in p->rgb. */
static int pack_image_resample(pack_image *p, const uint8_t *px, size_t stride, int w, int h, int tw, int th) {
  if (pack_image_grow(&p->rgb, &p->rgb_cap, (size_t)tw * th * 3) < 0) return BFEED_ENOMEM;
  if (tw == w && th == h) {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) memcpy(p->rgb + ((size_t)y * w + x) * 3, px + (size_t)y * stride + (size_t)x * 4, 3);
    return 0;
  }
  size_t ah = resize_axis_size(0, w, tw, tw), av = resize_axis_size(0, h, th, th);
  size_t need = ((ah + 15) & ~(size_t)15) + ((av + 15) & ~(size_t)15);
  resize_axis axh, axv;
  if (pack_image_grow(&p->mem, &p->mem_cap, need) < 0) return BFEED_ENOMEM;
  resize_axis_init(&axh, p->mem, w, 0, w, tw, 0, tw);
  resize_axis_init(&axv, p->mem + ((ah + 15) & ~(size_t)15), h, 0, h, th, 0, th);
  void *tmp = malloc(resize_tmp_size(&axh, &axv));
  if (!tmp) return BFEED_ENOMEM;
  resize_rgb8(&axh, &axv, px + (size_t)axv.lo * stride + (size_t)axh.lo * 4, stride, p->rgb, (size_t)tw * 3, tmp);
  free(tmp);
  return 0;
}

static int pack_image_encode(pack_image *p, const pack_opts *o, int tw, int th, char *err, size_t errlen) {
  size_t n = (size_t)tw * th * 3;
  if (o->images == PACK_RAW) {
    if (pack_image_grow(&p->out, &p->out_cap, RAW_DECODE_HEADER + n) < 0) return BFEED_ENOMEM;
    raw_decode_header(p->out, (uint32_t)tw, (uint32_t)th);
    memcpy(p->out + RAW_DECODE_HEADER, p->rgb, n);
    return (int)(RAW_DECODE_HEADER + n);
  }
  if (!p->tj && !(p->tj = tjInitCompress()))
    return snprintf(err, errlen, "cannot start TurboJPEG: %s", tjGetErrorStr()), BFEED_ECODEC;
  unsigned long bound = tjBufSize(tw, th, TJSAMP_420);
  if (pack_image_grow(&p->out, &p->out_cap, bound) < 0) return BFEED_ENOMEM;
  unsigned char *dst = p->out;
  unsigned long len = bound;
  /* Into our own buffer (TJFLAG_NOREALLOC): 4:2:0, the same flags every
   * call, so one handle per thread gives every image the same bytes. */
  if (tjCompress2(p->tj, p->rgb, tw, tw * 3, th, TJPF_RGB, &dst, &len, TJSAMP_420, (int)o->quality,
                  TJFLAG_NOREALLOC) != 0)
    return snprintf(err, errlen, "JPEG encoding failed: %s", tjGetErrorStr2(p->tj)), BFEED_ECODEC;
  return (int)len;
}

int pack_image_convert(pack_image *p, const pack_opts *o, const uint8_t *src, size_t len, const uint8_t **out,
                       size_t *out_len, char *err, size_t errlen) {
  *out = src;
  *out_len = len;
  if (o->images == PACK_ORIGINAL) return 0;
  image_decode_info info;
  int rc = image_decode_header(p->dec, src, len, IMAGE_DECODE_MAX_PIXELS_DEFAULT, &info, err, errlen);
  if (rc < 0) return image_decode_done(p->dec), rc;
  int tw, th;
  pack_image_capped(info.width, info.height, o->max_side, o->short_side, &tw, &th);
  /* A JPEG already within the cap keeps its bytes: encoding it again
   * would only lose quality. */
  if (o->images == PACK_JPEG && info.format == IMAGE_DECODE_JPEG && tw == info.width && th == info.height)
    return image_decode_done(p->dec), 0;
  const uint8_t *px;
  size_t stride;
  rc = image_decode_start(p->dec, 8, err, errlen);
  if (rc == 0) rc = image_decode_read(p->dec, 0, info.width, 0, info.height, &px, &stride, err, errlen);
  if (rc == 0 && (rc = pack_image_resample(p, px, stride, info.width, info.height, tw, th)) < 0)
    snprintf(err, errlen, "out of memory for %dx%d pixels", tw, th);
  image_decode_done(p->dec);
  if (rc < 0) return rc;
  if ((rc = pack_image_encode(p, o, tw, th, err, errlen)) < 0) {
    if (rc == BFEED_ENOMEM) snprintf(err, errlen, "out of memory encoding %dx%d pixels", tw, th);
    return rc;
  }
  *out = p->out;
  *out_len = (size_t)rc;
  return 0;
}
