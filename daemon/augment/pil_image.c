/* pil_image.c -- see pil_image.h */
#include "pil_image.h"

#include <stdint.h>

#include "bfeed_types.h"

static int pil_image_usable(const pil_rgb *img) {
  return img && img->px && img->w >= 1 && img->h >= 1 && img->w <= PIL_IMAGE_MAX_SIDE &&
         img->h <= PIL_IMAGE_MAX_SIDE && (uint64_t)img->w * (uint64_t)img->h * 3 <= SIZE_MAX;
}

int pil_image_check(const pil_rgb *src, const pil_rgb *dst, int in_place_ok) {
  if (!pil_image_usable(src) || !pil_image_usable(dst) || src->w != dst->w || src->h != dst->h)
    return BFEED_EINVAL;
  /* Compared as integers: pointers into different objects have no order in C. */
  uintptr_t s = (uintptr_t)src->px, d = (uintptr_t)dst->px, n = pil_image_bytes(src);
  if (s == d) return in_place_ok ? 0 : BFEED_EINVAL;
  return (s < d + n && d < s + n) ? BFEED_EINVAL : 0;
}
