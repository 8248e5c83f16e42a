/* preview_sheet.c -- see preview_sheet.h */
#include "preview_sheet.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preview_font.h"

int preview_sheet_init(preview_sheet *s, int w, int h) {
  memset(s, 0, sizeof *s);
  if (w < 1 || h < 1 || w > (1 << 15) || h > (1 << 15)) return -1;
  if (!(s->px = malloc((size_t)w * h * 3))) return -1;
  memset(s->px, 255, (size_t)w * h * 3);
  s->w = w;
  s->h = h;
  return 0;
}

void preview_sheet_free(preview_sheet *s) {
  free(s->px);
  memset(s, 0, sizeof *s);
}

void preview_sheet_blit(preview_sheet *s, int x, int y, const uint8_t *rgb, int w, int h) {
  for (int r = 0; r < h; r++) {
    if (y + r < 0 || y + r >= s->h) continue;
    for (int c = 0; c < w; c++)
      if (x + c >= 0 && x + c < s->w) memcpy(s->px + ((size_t)(y + r) * s->w + x + c) * 3, rgb + ((size_t)r * w + c) * 3, 3);
  }
}

static void preview_sheet_dot(preview_sheet *s, int x, int y) {
  static const uint8_t ink[3] = {20, 20, 20};
  if (x >= 0 && y >= 0 && x < s->w && y < s->h) memcpy(s->px + ((size_t)y * s->w + x) * 3, ink, 3);
}

void preview_sheet_text(preview_sheet *s, int x, int y, const char *text, int max_chars) {
  for (int i = 0; text[i] && i < max_chars; i++) {
    unsigned char ch = (unsigned char)text[i];
    const uint8_t *g = preview_font[(ch < PREVIEW_FONT_FIRST || ch > PREVIEW_FONT_LAST ? '?' : ch) - PREVIEW_FONT_FIRST];
    for (int r = 0; r < PREVIEW_FONT_H; r++)
      for (int c = 0; c < PREVIEW_FONT_W; c++)
        if (g[r] >> (PREVIEW_FONT_W - 1 - c) & 1) preview_sheet_dot(s, x + i * PREVIEW_CHAR_W + c, y + r);
  }
}

int preview_sheet_write_png(const preview_sheet *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "wb");
  if (!f) return snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno)), -1;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  png_bytep *rows = malloc(sizeof *rows * (size_t)s->h);
  int ok = png && info && rows;
  if (ok && setjmp(png_jmpbuf(png))) ok = 0; /* libpng reports its errors by longjmp */
  else if (ok) {
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    for (int y = 0; y < s->h; y++) rows[y] = s->px + (size_t)y * s->w * 3;
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
  }
  png_destroy_write_struct(&png, &info);
  free(rows);
  if (fclose(f) != 0) ok = 0;
  if (!ok) return snprintf(err, errlen, "cannot write %s: %s", path, errno ? strerror(errno) : "PNG error"), -1;
  return 0;
}
