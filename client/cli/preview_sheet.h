/*
 * preview_sheet.h -- a contact sheet: an RGB canvas that images are copied
 * onto and 5x7 text is written on (preview_font.h), saved as a PNG.
 * Called by cmd_preview.c (`bfeed preview`).
 */
#ifndef BFEED_PREVIEW_SHEET_H
#define BFEED_PREVIEW_SHEET_H

#include <stddef.h>
#include <stdint.h>

/* A text line's height and a character's advance, in pixels. */
#define PREVIEW_LINE_H 9
#define PREVIEW_CHAR_W 6

typedef struct preview_sheet {
  uint8_t *px; /* w * h RGB pixels, row after row */
  int w, h;
} preview_sheet;

/* A white w x h sheet (each at most 1 << 15). 0, or -1 out of memory. */
int preview_sheet_init(preview_sheet *s, int w, int h);
void preview_sheet_free(preview_sheet *s);
/* Copy a w x h RGB image (row after row) with its top left at (x, y);
 * what falls outside the sheet is left out. */
void preview_sheet_blit(preview_sheet *s, int x, int y, const uint8_t *rgb, int w, int h);
/* Write text from (x, y), at most max_chars of it (characters outside
 * ASCII 32..126 as '?'). */
void preview_sheet_text(preview_sheet *s, int x, int y, const char *text, int max_chars);
/* Save as an 8-bit RGB PNG. 0, or -1 with the reason (naming path) in err. */
int preview_sheet_write_png(const preview_sheet *s, const char *path, char *err, size_t errlen);

#endif
