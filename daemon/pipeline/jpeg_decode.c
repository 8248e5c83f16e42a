/*
 * jpeg_decode.c -- libjpeg with a longjmp error manager and partial decoding.
 */
#include "jpeg_decode.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "bfeed_types.h"
#include "decode_mem.h"

/* jpeg_crop_scanline treats the edges of the cropped region as image
 * edges, so fancy upsampling replicates chroma there instead of reading the
 * neighbour: the outermost columns would differ from a full decode. Asking
 * for a few more columns on each side keeps the ones we use interior. */
#define JPEG_DECODE_CROP_MARGIN 4

struct jdec {
  struct jpeg_decompress_struct cinfo; /* first, so the error hooks can cast */
  struct jpeg_error_mgr jerr;
  jmp_buf jump;
  int code;                   /* libjpeg message code of the failure */
  char msg[JMSG_LENGTH_MAX];  /* its text */
  decode_mem_buf row;         /* one decoded scanline (3 or 4 bytes/pixel) */
  uint64_t held;              /* libjpeg's working memory for this image, in decode_mem_held */
};

/* main.c's name for max_decode_memory, which now bounds every format's decodes. */
void jpeg_decode_set_limit(uint64_t bytes) { decode_mem_set_limit(bytes); }

/* The image is done with (read, failed or abandoned): its buffers go. */
static void release(jdec *d) { decode_mem_put(&d->held); }

void jpeg_decode_abort(jdec *d) {
  jpeg_abort_decompress(&d->cinfo);
  release(d);
}

static void on_error(j_common_ptr cinfo) {
  jdec *d = (jdec *)cinfo;
  d->code = cinfo->err->msg_code;
  cinfo->err->format_message(cinfo, d->msg);
  longjmp(d->jump, 1);
}

/* Warnings that only concern metadata. Every other warning means libjpeg
 * lost or invented pixel data (a truncated file is padded with grey and only
 * warned about), and serving that image would be worse than skipping it. */
static int harmless_warning(int code) {
  return code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM || code == JWRN_BOGUS_ICC;
}

static void on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && !harmless_warning(cinfo->err->msg_code))
    on_error(cinfo);
}

/* Turn the failure recorded by on_error into the caller's message, and reset
 * the decoder so it can take the next image. */
static int fail(jdec *d, char *err, size_t errlen) {
  switch (d->code) {
  case JERR_NO_SOI:
    snprintf(err, errlen, "not a JPEG");
    break;
  case JERR_INPUT_EMPTY:
  case JERR_INPUT_EOF:
  case JWRN_JPEG_EOF:
    snprintf(err, errlen, "truncated data");
    break;
  case JERR_OUT_OF_MEMORY: /* malloc failed: the machine's fault, not the file's */
    snprintf(err, errlen, "out of memory decoding");
    jpeg_abort_decompress(&d->cinfo);
    release(d);
    return BFEED_ENOMEM;
  case JERR_NO_BACKING_STORE: /* libjpeg's max_memory_to_use was reached */
    snprintf(err, errlen, "decoding needs more memory than max_decode_memory (%llu bytes) allows",
             (unsigned long long)decode_mem_limit());
    break;
  default:
    snprintf(err, errlen, "corrupt data: %s", d->msg);
    break;
  }
  jpeg_abort_decompress(&d->cinfo);
  release(d);
  return BFEED_EDATASET;
}

static int fail_code(jdec *d, char *err, size_t errlen, const char *what, int code) {
  snprintf(err, errlen, "%s", what);
  jpeg_abort_decompress(&d->cinfo);
  release(d);
  return code;
}

static int fail_msg(jdec *d, char *err, size_t errlen, const char *what) {
  return fail_code(d, err, errlen, what, BFEED_EDATASET);
}

/* What libjpeg allocates for one image, from its header. A progressive
 * image is decoded whole into coefficients first: 64 of 2 bytes per block
 * of every component, whatever the scale or crop. Every image also has
 * strips of rows in its buffers (the main buffer's context rows, the
 * upsampler's), a few MCU rows of every component: bounded here by four
 * bytes per sample of 8 x max_v_samp_factor full-width rows. */
static uint64_t working_bytes(const struct jpeg_decompress_struct *c) {
  uint64_t n = (uint64_t)c->image_width * (uint64_t)c->num_components * (uint64_t)c->max_v_samp_factor * DCTSIZE * 4;
  if (!c->progressive_mode) return n;
  for (int i = 0; i < c->num_components; i++)
    n += (uint64_t)c->comp_info[i].width_in_blocks * c->comp_info[i].height_in_blocks * DCTSIZE2 * sizeof(JCOEF);
  return n;
}

/* Separate from jpeg_decode_new so that no local of the caller lives across the
 * setjmp. jpeg_create_decompress fails only when out of memory. */
static int create(jdec *d) {
  d->cinfo.err = jpeg_std_error(&d->jerr);
  d->jerr.error_exit = on_error;
  d->jerr.emit_message = on_message;
  if (setjmp(d->jump))
    return BFEED_ENOMEM;
  jpeg_create_decompress(&d->cinfo);
  return 0;
}

/* A crop stops decoding at its last row, so libjpeg never reaches the end
 * of a truncated file and would not notice. Pillow refuses such files, and a
 * file that fails or not depending on the random crop would be worse still,
 * so the end marker is looked for up front. Entropy-coded data cannot
 * contain FF D9 (a data FF is always followed by 00), so any FF D9 after the
 * first scan header is the end of the image. */
static int has_eoi(const uint8_t *p, size_t n) {
  for (size_t i = n; i >= 2; i--)
    if (p[i - 2] == 0xFF && p[i - 1] == 0xD9)
      return 1;
  return 0;
}

jdec *jpeg_decode_new(void) {
  jdec *d = calloc(1, sizeof(*d));
  if (d && create(d) != 0) {
    free(d);
    return NULL;
  }
  return d;
}

void jpeg_decode_free(jdec *d) {
  if (!d)
    return;
  release(d);
  jpeg_destroy_decompress(&d->cinfo);
  decode_mem_release(&d->row);
  free(d);
}

/* libjpeg guesses the colour space from the markers and the number of
 * components; anything but these five is neither what Pillow decodes nor
 * what a dataset holds. */
static int color_of(J_COLOR_SPACE cs) {
  switch (cs) {
  case JCS_GRAYSCALE:
    return JPEG_DECODE_GRAY;
  case JCS_YCbCr:
    return JPEG_DECODE_YCBCR;
  case JCS_RGB:
    return JPEG_DECODE_RGB;
  case JCS_CMYK:
    return JPEG_DECODE_CMYK;
  case JCS_YCCK:
    return JPEG_DECODE_YCCK;
  default:
    return -1;
  }
}

int jpeg_decode_header(jdec *d, const uint8_t *buf, size_t len, jpeg_decode_info *info, char *err,
                size_t errlen) {
  struct jpeg_decompress_struct *c = &d->cinfo;

  /* A fresh decoder for every image: libjpeg keeps Huffman and quantization
   * tables from one image to the next (for abbreviated streams), so a file
   * that uses a table it does not define would decode with the tables of
   * whatever this worker decoded before, and a batch would depend on which
   * worker made it (found by fuzz_image). */
  release(d);
  jpeg_destroy_decompress(c);
  if (create(d) != 0)
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  /* libjpeg would say the same, but without a source the message is about
   * an empty file rather than the data. */
  if (len < 3 || buf[0] != 0xFF || buf[1] != 0xD8)
    return fail_msg(d, err, errlen, "not a JPEG");
  if (len > ULONG_MAX)
    return fail_msg(d, err, errlen, "corrupt data: file too large");
  if (setjmp(d->jump))
    return fail(d, err, errlen);
  jpeg_mem_src(c, buf, (unsigned long)len);
  jpeg_read_header(c, TRUE);

  if (!has_eoi(buf + (len - c->src->bytes_in_buffer), c->src->bytes_in_buffer))
    return fail_msg(d, err, errlen, "truncated data");
  if (color_of(c->jpeg_color_space) < 0)
    return fail_msg(d, err, errlen, "corrupt data: unsupported colour space");
  info->width = (int)c->image_width;
  info->height = (int)c->image_height;
  info->components = c->num_components;
  info->color = color_of(c->jpeg_color_space);
  info->progressive = c->progressive_mode ? 1 : 0;
  return 0;
}

void jpeg_decode_scaled_size(const jpeg_decode_info *info, int scale_num, int *w, int *h) {
  *w = (int)(((int64_t)info->width * scale_num + 7) / 8);
  *h = (int)(((int64_t)info->height * scale_num + 7) / 8);
}

int jpeg_decode_start(jdec *d, int scale_num, char *err, size_t errlen) {
  struct jpeg_decompress_struct *c = &d->cinfo;

  if (scale_num < 1 || scale_num > 8)
    return fail_msg(d, err, errlen, "internal: bad scale");
  if (setjmp(d->jump))
    return fail(d, err, errlen);
  c->scale_num = (unsigned)scale_num;
  c->scale_denom = 8;
  /* Pillow asks libjpeg for CMYK whenever there are four components (and
   * then assumes Adobe's inverted polarity); libjpeg turns YCCK into CMYK.
   * Everything else comes out as RGBX, grayscale replicated as Pillow's
   * convert("RGB") does. */
  c->out_color_space = c->num_components == 4 ? JCS_CMYK : JCS_EXT_RGBX;
  /* Refused before libjpeg allocates, with the reason; libjpeg's own limit
   * (max_memory_to_use, which its memory manager checks before a whole-
   * image buffer) stands behind the estimate. */
  uint64_t limit = decode_mem_limit(), need = working_bytes(c);
  char why[200];
  if (decode_mem_check(c->progressive_mode ? "progressive JPEG" : "JPEG", (int)c->image_width, (int)c->image_height,
                       need, why, sizeof why) < 0)
    return fail_code(d, err, errlen, why, BFEED_ELIMIT);
  c->mem->max_memory_to_use = limit ? (long)(limit < LONG_MAX ? limit : LONG_MAX) : 0;
  decode_mem_take(&d->held, need);
  jpeg_start_decompress(c);

  jpeg_decode_info info = {.width = (int)c->image_width, .height = (int)c->image_height};
  int w, h;
  jpeg_decode_scaled_size(&info, scale_num, &w, &h);
  if ((int)c->output_width != w || (int)c->output_height != h)
    return fail_msg(d, err, errlen, "internal: libjpeg scaled size differs");
  return 0;
}

/* Pillow reads four-component JPEGs as "CMYK;I" (every channel inverted)
 * and then applies cmyk2rgb from libImaging/Convert.c; this is both steps,
 * with the same rounding (MULDIV255). */
static void cmyk_to_rgbx(uint8_t *out, const JSAMPLE *in, int n) {
  for (int i = 0; i < n; i++, in += 4, out += 4) {
    int nk = in[3]; /* 255 - (255 - raw k) */
    for (int ch = 0; ch < 3; ch++) {
      int t = (255 - in[ch]) * nk + 128;
      int v = nk - (((t >> 8) + t) >> 8);
      out[ch] = (uint8_t)(v < 0 ? 0 : v);
    }
    out[3] = 255;
  }
}

int jpeg_decode_read(jdec *d, int x0, int x1, int y0, int y1, uint8_t *out, size_t stride, char *err,
              size_t errlen) {
  struct jpeg_decompress_struct *c = &d->cinfo;

  if (x0 < 0 || x1 > (int)c->output_width || x0 >= x1 || y0 < 0 ||
      y1 > (int)c->output_height || y0 >= y1)
    return fail_msg(d, err, errlen, "internal: region outside the image");
  if (setjmp(d->jump))
    return fail(d, err, errlen);

  int lo = x0 > JPEG_DECODE_CROP_MARGIN ? x0 - JPEG_DECODE_CROP_MARGIN : 0;
  int hi = x1 + JPEG_DECODE_CROP_MARGIN < (int)c->output_width ? x1 + JPEG_DECODE_CROP_MARGIN
                                                         : (int)c->output_width;
  JDIMENSION xoff = (JDIMENSION)lo, width = (JDIMENSION)(hi - lo);
  jpeg_crop_scanline(c, &xoff, &width); /* moves xoff down to an iMCU edge */

  JSAMPLE *row = decode_mem_reserve(&d->row, (size_t)c->output_width * (size_t)c->output_components);
  if (!row)
    return fail_code(d, err, errlen, "out of memory", BFEED_ENOMEM);

  if (y0 > 0 && jpeg_skip_scanlines(c, (JDIMENSION)y0) != (JDIMENSION)y0)
    return fail_msg(d, err, errlen, "truncated data");
  const JSAMPLE *first = row + (size_t)(x0 - (int)xoff) * c->output_components;
  size_t n = (size_t)(x1 - x0);
  for (int y = y0; y < y1; y++) {
    JSAMPROW rows[1] = {row};
    if (jpeg_read_scanlines(c, rows, 1) != 1)
      return fail_msg(d, err, errlen, "truncated data");
    uint8_t *dst = out + (size_t)(y - y0) * stride;
    if (c->out_color_space == JCS_CMYK)
      cmyk_to_rgbx(dst, first, (int)n);
    else
      memcpy(dst, first, n * 4);
  }
  jpeg_abort_decompress(c); /* the rows below y1 are not needed */
  release(d);
  return 0;
}
