/*
 * crop_dump -- the crop choices of transform.c, for tests/daemon/crop_oracle.py.
 *
 * Reads commands on stdin, one per line, and answers each with one line:
 *   rrc W H K1 ... Kn   -> "left top width height flip used"
 *                          (draw i is Ki * 2^-24, 0 <= Ki < 2^24, n <= 64)
 *   rrcs LO HI W H K... -> the same with scale=(LO, HI) (decimal, read as float32)
 *   rrcp SLO SHI RLO RHI P W H K...
 *                       -> the same with scale=(SLO, SHI), ratio=(RLO, RHI) and the
 *                          flip's p=P (float32 bit patterns in hex: what OPEN carries)
 *   eval W H SIZE       -> "resized_w resized_h left top"
 *   evalg W H RESIZE OW OH
 *                       -> the same for Resize(RESIZE) (0: the default) and
 *                          CenterCrop((OH, OW)); left or top negative where it pads
 *   aspects             -> 2^24 float32 values, binary: the aspect ratio of
 *                          every draw K * 2^-24, K = 0 .. 2^24-1
 *   logs A B            -> float32 values, binary: transform_logf_sleef of every
 *                          float32 whose bit pattern is in [A, B) (hex)
 * Exits non-zero on a malformed line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform.h"

#define MAX_DRAWS 64
#define DRAW_ONE (1L << 24)

/* p NULL: the defaults, through the function without parameters. */
static int do_rrc(char *args, const transform_rrc_params *p) {
  int w, h, off, nu = 0;
  float u[MAX_DRAWS];
  if (sscanf(args, "%d %d%n", &w, &h, &off) != 2 || w <= 0 || h <= 0) return -1;
  args += off;
  long k;
  while (sscanf(args, "%ld%n", &k, &off) == 1) {
    if (nu == MAX_DRAWS || k < 0 || k >= DRAW_ONE) return -1;
    u[nu++] = (float)k * 0x1p-24f;
    args += off;
  }
  transform_crop c;
  int used;
  if (p) transform_rrc_draws(w, h, p, u, nu, &used, &c);
  else transform_random_resized_crop_draws(w, h, u, nu, &used, &c);
  printf("%d %d %d %d %d %d\n", c.left, c.top, c.width, c.height, c.flip, used);
  return 0;
}

static int do_eval(const char *args) {
  int w, h, size;
  if (sscanf(args, "%d %d %d", &w, &h, &size) != 3 || w <= 0 || h <= 0 || size <= 0) return -1;
  transform_eval e;
  transform_eval_params(w, h, size, &e);
  printf("%d %d %d %d\n", e.resized_w, e.resized_h, e.left, e.top);
  return 0;
}

static int do_eval_geometry(const char *args) {
  int w, h, resize, ow, oh;
  if (sscanf(args, "%d %d %d %d %d", &w, &h, &resize, &ow, &oh) != 5 || w <= 0 || h <= 0 || resize < 0 || ow <= 0 ||
      oh <= 0)
    return -1;
  transform_eval e;
  transform_eval_geometry(w, h, resize, ow, oh, &e);
  printf("%d %d %d %d\n", e.resized_w, e.resized_h, e.left, e.top);
  return 0;
}

/* "rrcp": five float32 bit patterns, then what rrc takes. */
static int do_rrc_params(char *args) {
  uint32_t b[5];
  int off;
  if (sscanf(args, "%x %x %x %x %x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &off) != 5) return -1;
  float f[5];
  memcpy(f, b, sizeof f);
  transform_rrc_params p = {{f[0], f[1]}, {f[2], f[3]}, f[4]};
  return do_rrc(args + off, &p);
}

static int do_logs(const char *args) {
  enum { N = 4096 };
  uint32_t a, b;
  float buf[N];
  if (sscanf(args, "%x %x", &a, &b) != 2 || a > b) return -1;
  for (uint64_t k = a; k < b; k += N) {
    int n = b - k < N ? (int)(b - k) : N;
    for (int i = 0; i < n; i++) {
      uint32_t bits = (uint32_t)(k + (uint64_t)i);
      float x;
      memcpy(&x, &bits, sizeof x);
      buf[i] = transform_logf_sleef(x);
    }
    if (fwrite(buf, sizeof buf[0], (size_t)n, stdout) != (size_t)n) return -1;
  }
  return 0;
}

static int do_aspects(void) {
  enum { N = 4096 };
  float buf[N];
  for (long k = 0; k < DRAW_ONE; k += N) {
    for (int i = 0; i < N; i++) buf[i] = transform_aspect_from_draw((float)(k + i) * 0x1p-24f);
    if (fwrite(buf, sizeof buf[0], N, stdout) != N) return -1;
  }
  return 0;
}

int main(void) {
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    if (!strchr(line, '\n') && !feof(stdin)) {
      fprintf(stderr, "crop_dump: line too long\n");
      return 1;
    }
    int rc;
    transform_rrc_params p = transform_rrc_default;
    int off;
    if (strncmp(line, "rrc ", 4) == 0)
      rc = do_rrc(line + 4, NULL);
    else if (strncmp(line, "rrcs ", 5) == 0)
      rc = sscanf(line + 5, "%f %f%n", &p.scale[0], &p.scale[1], &off) == 2 ? do_rrc(line + 5 + off, &p) : -1;
    else if (strncmp(line, "rrcp ", 5) == 0)
      rc = do_rrc_params(line + 5);
    else if (strncmp(line, "eval ", 5) == 0)
      rc = do_eval(line + 5);
    else if (strncmp(line, "evalg ", 6) == 0)
      rc = do_eval_geometry(line + 6);
    else if (strcmp(line, "aspects\n") == 0)
      rc = do_aspects();
    else if (strncmp(line, "logs ", 5) == 0)
      rc = do_logs(line + 5);
    else
      rc = -1;
    if (rc != 0) {
      fprintf(stderr, "crop_dump: bad command: %s", line);
      return 1;
    }
  }
  return fflush(stdout) != 0;
}
