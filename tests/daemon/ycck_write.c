/*
 * ycck_write -- write a YCCK JPEG (Adobe transform 2) for the Pillow oracle.
 * Used by tests/daemon/format_oracle.py: neither Pillow nor cjpeg writes YCCK.
 *
 *   ycck_write WIDTH HEIGHT QUALITY OUT.jpg < CMYK
 *
 * stdin holds WIDTH x HEIGHT x 4 bytes of CMYK as they are to be stored
 * (Adobe's inverted convention); libjpeg converts them to YCCK on the way
 * in, and any decoder turns them back into (nearly) the same CMYK.
 */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s WIDTH HEIGHT QUALITY OUT.jpg < CMYK\n", argv[0]);
    return 2;
  }
  int w = atoi(argv[1]), h = atoi(argv[2]), q = atoi(argv[3]);
  if (w < 1 || h < 1 || w > 4096 || h > 4096 || q < 1 || q > 100)
    return 2;
  size_t n = (size_t)w * h * 4;
  unsigned char *px = malloc(n);
  if (!px || fread(px, 1, n, stdin) != n) {
    fprintf(stderr, "ycck_write: expected %zu bytes on stdin\n", n);
    return 1;
  }
  FILE *out = fopen(argv[4], "wb");
  if (!out) {
    perror(argv[4]);
    return 1;
  }
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr); /* errors exit: fine for a test tool */
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, out);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, JCS_YCCK); /* writes the Adobe marker, transform 2 */
  jpeg_set_quality(&c, q, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = px + (size_t)c.next_scanline * w * 4;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  fclose(out);
  free(px);
  return 0;
}
