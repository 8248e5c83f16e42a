/*
 * augment_pil_dump.c -- the pil_* pixel ops (daemon/augment) driven over a
 * pipe, for tests/daemon/augment_oracle.py to compare with Pillow and
 * torchvision byte for byte.
 *
 * Reads commands on stdin, one a line; numbers are decimal or C99 hex
 * floats (Python's float.hex(), exact). `load W H` is followed by W*H*3
 * bytes, the RGB image every later command reads. Each other command is
 * answered with a little-endian int32 return code, a uint32 length and that
 * many bytes (the output image, unless said otherwise):
 *   transform R F0 F1 F2 M0..M5       pil_affine_transform
 *   rotate R F0 F1 F2 ANGLE           pil_affine_rotate
 *   affine R F0 F1 F2 ANGLE TX TY SCALE SHX SHY CX CY   pil_affine_tv
 *                                     (CX CY as "- -": centre None)
 *   geom OP R F0 F1 F2 MAGNITUDE      pil_affine_apply_op, OP as _apply_op
 *                                     names it (ShearX, ..., Rotate)
 *   matrix CX CY ANGLE TX TY SCALE SHX SHY   6 doubles: the inverse matrix
 *   brightness|saturation|contrast|sharpness|solarize|hue X
 *   posterize BITS
 *   autocontrast | equalize | invert
 *   inplace CMD ...                   a point op run with dst == src
 *   tohsv | fromhsv                   the image's pixels through
 *                                     pil_hsv_from_rgb / pil_hsv_to_rgb
 *   luma                              W*H bytes, pil_enhance_luma
 *   round15 X                         1 double
 *   hueshift X                        1 byte, pil_hsv_hue_shift
 * Exits 0 at end of input, 1 on a malformed line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pil_affine.h"
#include "pil_enhance.h"
#include "pil_hsv.h"

#define MAX_ARGS 16

static pil_rgb src, dst;

static void reply(int32_t rc, const void *data, uint32_t n) {
  fwrite(&rc, 4, 1, stdout);
  fwrite(&n, 4, 1, stdout);
  if (n) fwrite(data, 1, n, stdout);
  fflush(stdout);
}

static void reply_image(int rc) { reply(rc, dst.px, rc == 0 ? (uint32_t)pil_image_bytes(&dst) : 0); }

static int load(char **a, int na) {
  if (na != 2) return -1;
  int w = atoi(a[0]), h = atoi(a[1]);
  if (w < 1 || h < 1 || w > 1 << 14 || h > 1 << 14) return -1;
  size_t n = (size_t)w * (size_t)h * 3;
  free(src.px);
  free(dst.px);
  src = (pil_rgb){malloc(n), w, h};
  dst = (pil_rgb){malloc(n), w, h};
  if (!src.px || !dst.px || fread(src.px, 1, n, stdin) != n) return -1;
  reply(0, "", 0);
  return 0;
}

/* R F0 F1 F2, the arguments every geometric command starts with. */
static void geometry_args(char **a, int *resample, uint8_t fill[3]) {
  *resample = atoi(a[0]);
  for (int i = 0; i < 3; i++) fill[i] = (uint8_t)atoi(a[1 + i]);
}

static int geom_op(const char *name, enum pil_affine_op *op) {
  static const char *const names[] = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"};
  for (int i = 0; i < 5; i++)
    if (strcmp(name, names[i]) == 0) return *op = (enum pil_affine_op)i, 0;
  return -1;
}

/* The geometric commands; -1 for a malformed one, 1 for another command. */
static int geometric(const char *cmd, char **a, int na) {
  int resample;
  uint8_t fill[3];
  double d[MAX_ARGS];
  for (int i = 0; i < na; i++) d[i] = strtod(a[i], NULL);
  if (strcmp(cmd, "transform") == 0 && na == 10) {
    geometry_args(a, &resample, fill);
    reply_image(pil_affine_transform(&src, &dst, d + 4, resample, fill));
  } else if (strcmp(cmd, "rotate") == 0 && na == 5) {
    geometry_args(a, &resample, fill);
    reply_image(pil_affine_rotate(&src, &dst, d[4], resample, fill));
  } else if (strcmp(cmd, "affine") == 0 && na == 12) {
    geometry_args(a, &resample, fill);
    const double *center = strcmp(a[10], "-") == 0 ? NULL : d + 10;
    reply_image(pil_affine_tv(&src, &dst, d[4], d + 5, d[7], d + 8, center, resample, fill));
  } else if (strcmp(cmd, "geom") == 0 && na == 6) {
    enum pil_affine_op op;
    if (geom_op(a[0], &op) != 0) return -1;
    geometry_args(a + 1, &resample, fill);
    reply_image(pil_affine_apply_op(&src, &dst, op, d[5], resample, fill));
  } else {
    return strcmp(cmd, "transform") && strcmp(cmd, "rotate") && strcmp(cmd, "affine") && strcmp(cmd, "geom") ? 1
                                                                                                              : -1;
  }
  return 0;
}

typedef int (*factor_op)(const pil_rgb *, pil_rgb *, double);
typedef int (*plain_op)(const pil_rgb *, pil_rgb *);

/* The colour commands, into dst (from src, or from dst itself when in
 * place); -100 for another command. */
static int colour(const char *cmd, char **a, int na, int inplace) {
  static const struct {
    const char *name;
    factor_op f;
  } factors[] = {{"brightness", pil_enhance_brightness}, {"saturation", pil_enhance_saturation},
                 {"contrast", pil_enhance_contrast},     {"sharpness", pil_enhance_sharpness},
                 {"solarize", pil_enhance_solarize},     {"hue", pil_hsv_adjust_hue}};
  static const struct {
    const char *name;
    plain_op f;
  } plains[] = {{"autocontrast", pil_enhance_autocontrast}, {"equalize", pil_enhance_equalize},
                {"invert", pil_enhance_invert}};
  const pil_rgb *in = inplace ? &dst : &src;
  pil_rgb *out = &dst;
  for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++)
    if (strcmp(cmd, factors[i].name) == 0) return na == 1 ? factors[i].f(in, out, strtod(a[0], NULL)) : -100;
  for (size_t i = 0; i < sizeof plains / sizeof plains[0]; i++)
    if (strcmp(cmd, plains[i].name) == 0) return na == 0 ? plains[i].f(in, out) : -100;
  if (strcmp(cmd, "posterize") == 0 && na == 1) return pil_enhance_posterize(in, out, atoi(a[0]));
  return -100;
}

/* matrix, round15, hueshift, which need no image; 1 for another command. */
static int values(const char *cmd, char **a, int na) {
  double d[MAX_ARGS];
  for (int i = 0; i < na; i++) d[i] = strtod(a[i], NULL);
  if (strcmp(cmd, "matrix") == 0 && na == 8) {
    double m[6];
    pil_affine_inverse_matrix(d, d[2], d + 3, d[5], d + 6, m);
    reply(0, m, sizeof m);
  } else if (strcmp(cmd, "round15") == 0 && na == 1) {
    double r = pil_affine_round15(d[0]);
    reply(0, &r, sizeof r);
  } else if (strcmp(cmd, "hueshift") == 0 && na == 1) {
    uint8_t s = pil_hsv_hue_shift(d[0]);
    reply(0, &s, 1);
  } else {
    return strcmp(cmd, "matrix") && strcmp(cmd, "round15") && strcmp(cmd, "hueshift") ? 1 : -1;
  }
  return 0;
}

/* tohsv, fromhsv, luma. */
static int pixels(const char *cmd, char **a, int na) {
  size_t n = pil_image_bytes(&src);
  if (strcmp(cmd, "tohsv") == 0 || strcmp(cmd, "fromhsv") == 0) {
    int to = cmd[0] == 't';
    for (size_t i = 0; i < n; i += 3) (to ? pil_hsv_from_rgb : pil_hsv_to_rgb)(src.px + i, dst.px + i);
    reply_image(0);
  } else if (strcmp(cmd, "luma") == 0) {
    for (size_t i = 0; i < n; i += 3) dst.px[i / 3] = pil_enhance_luma(src.px + i);
    reply(0, dst.px, (uint32_t)(n / 3));
  } else {
    return -1;
  }
  return 0;
}

static int command(char *line) {
  char *a[MAX_ARGS + 2];
  int na = 0;
  for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n")) {
    if (na == MAX_ARGS + 2) return -1;
    a[na++] = t;
  }
  if (na == 0) return -1;
  if (strcmp(a[0], "load") == 0) return load(a + 1, na - 1);
  int rc = values(a[0], a + 1, na - 1);
  if (rc <= 0) return rc;
  if (!src.px) return -1;
  int inplace = strcmp(a[0], "inplace") == 0;
  char **cmd = a + inplace;
  int nargs = na - 1 - inplace;
  if (!inplace && (rc = geometric(cmd[0], cmd + 1, nargs)) <= 0) return rc;
  if (inplace) memcpy(dst.px, src.px, pil_image_bytes(&src));
  rc = colour(cmd[0], cmd + 1, nargs, inplace);
  if (rc != -100) {
    reply_image(rc);
    return 0;
  }
  return inplace ? -1 : pixels(cmd[0], cmd + 1, nargs);
}

int main(void) {
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    if (command(line) != 0) {
      fprintf(stderr, "augment_pil_dump: bad command: %s", line);
      return 1;
    }
  }
  free(src.px);
  free(dst.px);
  return 0;
}
