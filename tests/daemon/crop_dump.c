/*
 * crop_dump -- the crop choices of transform.c, for tests/daemon/crop_oracle.py.
 *
 * Reads commands on stdin, one per line, and answers each with one line:
 *   rrc W H K1 ... Kn   -> "left top width height flip used"
 *                          (draw i is Ki * 2^-24, 0 <= Ki < 2^24, n <= 64)
 *   rrcs LO HI W H K... -> the same with scale=(LO, HI) (decimal, read as float32)
 *   eval W H SIZE       -> "resized_w resized_h left top"
 *   aspects             -> 2^24 float32 values, binary: the aspect ratio of
 *                          every draw K * 2^-24, K = 0 .. 2^24-1
 * Exits non-zero on a malformed line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform.h"

#define MAX_DRAWS 64
#define DRAW_ONE (1L << 24)

/* scale NULL: the default (0.08, 1), through the function without one. */
static int do_rrc(char *args, const float *scale) {
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
  if (scale) transform_rrc_draws(w, h, scale[0], scale[1], u, nu, &used, &c);
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
    float scale[2];
    int off;
    if (strncmp(line, "rrc ", 4) == 0)
      rc = do_rrc(line + 4, NULL);
    else if (strncmp(line, "rrcs ", 5) == 0)
      rc = sscanf(line + 5, "%f %f%n", &scale[0], &scale[1], &off) == 2 ? do_rrc(line + 5 + off, scale) : -1;
    else if (strncmp(line, "eval ", 5) == 0)
      rc = do_eval(line + 5);
    else if (strcmp(line, "aspects\n") == 0)
      rc = do_aspects();
    else
      rc = -1;
    if (rc != 0) {
      fprintf(stderr, "crop_dump: bad command: %s", line);
      return 1;
    }
  }
  return fflush(stdout) != 0;
}
