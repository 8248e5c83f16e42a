/*
 * sample_dump -- run the sample pipeline on commands read from stdin, for
 * the Pillow oracle (tests/oracle/image_oracle.py).
 *
 * One command per line; the geometry is explicit so the oracle decides it:
 *   crop SIZE DCT LEFT TOP WIDTH HEIGHT FLIP PATH
 *   eval SIZE DCT RESIZED_W RESIZED_H LEFT TOP PATH
 * DCT is 1 to let the IDCT scale down, 0 to forbid it. Each answer is
 * "ok N\n" followed by N bytes (SIZE x SIZE x 3, HWC RGB), or
 * "err REASON\n". One process serves the whole run so the scratch buffers
 * are reused across images, as in a worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Parses one command line and runs it; returns what to print. */
static int run(char *line, sample_scratch *scratch, uint8_t **out, size_t *outcap, int *size,
               char *err, size_t errlen) {
  char cmd[8];
  int dct, a, b, c, d, flip, used = 0;
  sample_params p = {0, SAMPLE_TRAIN, 0};
  xform_crop crop;
  xform_eval ev;

  if (sscanf(line, "%7s", cmd) != 1)
    return snprintf(err, errlen, "bad command"), -1;
  if (strcmp(cmd, "crop") == 0 &&
      sscanf(line, "crop %d %d %d %d %d %d %d %n", &p.size, &dct, &a, &b, &c, &d, &flip,
             &used) == 7) {
    crop = (xform_crop){a, b, c, d, flip};
  } else if (strcmp(cmd, "eval") == 0 &&
             sscanf(line, "eval %d %d %d %d %d %d %n", &p.size, &dct, &a, &b, &c, &d, &used) ==
                 6) {
    ev = (xform_eval){a, b, c, d};
    p.mode = SAMPLE_EVAL;
  } else {
    return snprintf(err, errlen, "bad command"), -1;
  }
  if (p.size < 1 || p.size > 4096 || used == 0)
    return snprintf(err, errlen, "bad command"), -1;
  p.allow_dct_scale = dct;

  char *path = line + used;
  path[strcspn(path, "\n")] = 0;
  size_t len;
  uint8_t *jpeg = read_file(path, &len);
  if (!jpeg)
    return snprintf(err, errlen, "cannot read %s", path), -1;
  size_t need = (size_t)p.size * p.size * 3;
  if (need > *outcap) {
    free(*out);
    *outcap = 0;
    if (!(*out = malloc(need))) {
      free(jpeg);
      return snprintf(err, errlen, "out of memory"), -1;
    }
    *outcap = need;
  }
  int rc = p.mode == SAMPLE_EVAL
               ? sample_load_eval(jpeg, len, &p, &ev, *out, scratch, err, errlen)
               : sample_load_crop(jpeg, len, &p, &crop, *out, scratch, err, errlen);
  free(jpeg);
  *size = p.size;
  return rc;
}

int main(void) {
  sample_scratch scratch = {0};
  uint8_t *out = NULL;
  size_t outcap = 0;
  char line[8192], err[256];

  while (fgets(line, sizeof(line), stdin)) {
    int size = 0;
    if (run(line, &scratch, &out, &outcap, &size, err, sizeof(err)) == 0) {
      size_t n = (size_t)size * size * 3;
      printf("ok %zu\n", n);
      fwrite(out, 1, n, stdout);
    } else {
      printf("err %s\n", err);
    }
    fflush(stdout);
  }
  free(out);
  sample_scratch_free(&scratch);
  return 0;
}
