/*
 * test_image_memory.c -- what PNG and WebP decodes may take, through the
 * real daemon under --max-memory 256M --max-decode-memory 64M.
 *
 * The images are written here: a 13000 x 13000 PNG of zeros (libpng, 0.5
 * MB of zlib, under max_pixels; decoding it whole would take 676 MB) and
 * a 3000 x 3000 lossless WebP (libwebp: 36 MB of pixels and as much
 * again inside libwebp), both over the decode limit, beside a 3500 x 3500
 * PNG and a 2100 x 2100 lossy WebP under it and make_demo's JPEGs:
 *  - the two over it are skipped from their headers, each logged with its
 *    name and the limit, and the daemon's peak RSS (VmHWM, printed: the
 *    figure quoted for the issue) stays far below what decoding them takes;
 *  - while the large PNG decodes, the daemon's report counts it
 *    (decode_memory_bytes, within memory_held_bytes);
 *  - after it, the worker gives that memory back: the count drops to the
 *    small images' buffers, and RSS returns near where it was;
 *  - under --max-memory 160M (and a max_decode_memory of 1G), four
 *    workers decode four 5000 x 5000 PNGs (100 MB each as RGBX) one at a
 *    time, and the 13000 x 13000 one is refused naming max_memory
 *    (issue 31: 8 such decodes took 796 MB at once under 256M).
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <webp/encode.h>

#include "memsuite.h"

#define IMG_MIB MEMSUITE_MIB
#define IMG_PEAK_BOUND (256 * IMG_MIB) /* decoding the large PNG alone would take 676 MB */
#define IMG_MID_PNG 3500
/* The eval window of the 3500-pixel PNG, as RGBX: what its decode holds. */
#define IMG_MID_HELD (32 * IMG_MIB)

static char img_data[192], img_arg[224]; /* the folder, "img=DIR" */
static char conc_arg[224];               /* "conc=DIR": the 5000-pixel PNGs and the 13000 one */
#define IMG_CONC_SIDE 5000
#define IMG_CONC_N 4

/* A w x h RGB PNG of zeros, unfiltered, at zlib's best compression: rows
 * of zeros deflate a thousandfold. 0, or -1. */
static int img_write_png(const char *path, int w, int h) {
  FILE *f = fopen(path, "wb");
  png_structp p = f ? png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL) : NULL;
  png_infop info = p ? png_create_info_struct(p) : NULL;
  uint8_t *row = calloc((size_t)w, 3);
  int rc = -1;
  if (info && row && !setjmp(png_jmpbuf(p))) {
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(p, 0, PNG_FILTER_NONE);
    png_set_compression_level(p, 9);
    png_write_info(p, info);
    for (int y = 0; y < h; y++) png_write_row(p, row);
    png_write_end(p, NULL);
    rc = 0;
  }
  if (p) png_destroy_write_struct(&p, info ? &info : NULL);
  if (f && fclose(f) != 0) rc = -1;
  free(row);
  return rc;
}

/* A w x h WebP of one grey, lossless or lossy (libwebp's simple API). */
static int img_write_webp(const char *path, int w, int h, int lossless) {
  uint8_t *rgb = malloc((size_t)w * h * 3), *out = NULL;
  if (!rgb) return -1;
  memset(rgb, 90, (size_t)w * h * 3);
  size_t n = lossless ? WebPEncodeLosslessRGB(rgb, w, h, w * 3, &out) : WebPEncodeRGB(rgb, w, h, w * 3, 75, &out);
  free(rgb);
  int rc = n ? itest_write_file(path, out, n) : -1;
  WebPFree(out);
  return rc;
}

static int img_setup(void **state) {
  (void)state;
  char err[512], dir[256], path[300];
  if (memsuite_make_root() < 0) return -1;
  snprintf(img_data, sizeof img_data, "%s/data", memsuite_the.root);
  if (itest_make_dataset(img_data, 2, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), -1;
  snprintf(dir, sizeof dir, "%s/zz", img_data); /* the last class: samples 16..19 */
  if (mkdir(dir, 0755) < 0) return -1;
  const struct {
    const char *name;
    int side, png, lossless;
  } img[] = {{"big.png", 13000, 1, 0}, {"big.webp", 3000, 0, 1}, {"mid.png", IMG_MID_PNG, 1, 0},
             {"mid.webp", 2100, 0, 0}};
  for (size_t i = 0; i < sizeof img / sizeof img[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, img[i].name);
    if ((img[i].png ? img_write_png(path, img[i].side, img[i].side)
                    : img_write_webp(path, img[i].side, img[i].side, img[i].lossless)) < 0)
      return fprintf(stderr, "cannot write %s\n", path), -1;
  }
  snprintf(img_arg, sizeof img_arg, "img=%s", img_data);
  snprintf(dir, sizeof dir, "%s/conc", memsuite_the.root);
  if (mkdir(dir, 0755) < 0) return -1;
  snprintf(conc_arg, sizeof conc_arg, "conc=%s", dir);
  snprintf(dir, sizeof dir, "%s/conc/c0", memsuite_the.root);
  if (mkdir(dir, 0755) < 0) return -1;
  for (int i = 0; i < IMG_CONC_N; i++) {
    snprintf(path, sizeof path, "%s/p%d.png", dir, i);
    if (img_write_png(path, IMG_CONC_SIDE, IMG_CONC_SIDE) < 0) return fprintf(stderr, "cannot write %s\n", path), -1;
  }
  char big[300];
  snprintf(big, sizeof big, "%s/zz/big.png", img_data);
  snprintf(path, sizeof path, "%s/zbig.png", dir);
  if (symlink(big, path) < 0) return -1;
  return 0;
}

static const char *const img_args[] = {"--max-memory", "256M", "--max-decode-memory", "64M", NULL};

/* Eval, in order: every image of the dataset is decoded whole. */
static void img_opts(bfeed_stream_opts *o, uint64_t epochs) {
  itest_opts(o);
  o->batch = 4;
  o->size = 64;
  o->mode = BFEED_MODE_EVAL;
  o->epochs = epochs;
}

/* The two images over the limit are skipped from their headers, named in
 * the log with the limit; the others are served; the peak RSS stays far
 * below a whole decode of the large PNG. */
static void test_bombs_skipped_from_the_header(void **state) {
  (void)state;
  memsuite_start(img_arg, img_args);
  bfeed_stream_opts o;
  img_opts(&o, 2);
  itest_run run = {0};
  bfeed_error err;
  if (itest_fetch(memsuite_the.d.unix_addr, "img", &o, 0, &run, &err) != BFEED_EEOF) fail_msg("fetch: %s", err.message);
  assert_int_equal(run.n, 10); /* 20 samples, batches of 4, two epochs */
  memsuite_peak_within("a 13000x13000 PNG and a 3000x3000 lossless WebP under --max-decode-memory 64M",
                       IMG_PEAK_BOUND);
  int seen[20] = {0};
  for (size_t b = 0; b < run.n; b++)
    for (uint32_t i = 0; i < run.b[b].count; i++) seen[run.b[b].idx[i]]++;
  assert_int_equal(seen[16], 0); /* big.png */
  assert_int_equal(seen[17], 0); /* big.webp */
  assert_true(seen[18] > 0 && seen[19] > 0);
  itest_run_free(&run);
  assert_true(itest_daemon_log_has(&memsuite_the.d, "big.png: PNG of 13000x13000 needs"));
  assert_true(itest_daemon_log_has(&memsuite_the.d, "big.webp: WebP of 3000x3000 needs"));
  assert_true(itest_daemon_log_has(&memsuite_the.d, "over max_decode_memory (67108864)"));
  memsuite_stop();
}

typedef struct img_probe {
  bfeed_client *c;
  uint64_t decode, held;
} img_probe;

/* One report: the decode memory and held bytes, and whether the workers
 * have nothing to do. */
static int img_report(img_probe *p) {
  bfeed_stat_group *g;
  size_t n;
  bfeed_error err;
  if (bfeed_daemon_stats(p->c, &g, &n, &err) < 0) fail_msg("stats: %s", err.message);
  p->decode = itest_report_counter(g, n, "daemon", "", "decode_memory_bytes");
  p->held = itest_report_counter(g, n, "daemon", "", "memory_held_bytes");
  int idle = itest_report_counter(g, n, "daemon", "", "queue_depth") == 0 &&
             itest_report_counter(g, n, "daemon", "", "workers_busy") == 0;
  bfeed_daemon_stats_free(g, n);
  if (p->decode == UINT64_MAX || p->held == UINT64_MAX) fail_msg("the daemon reports no decode_memory_bytes");
  return idle;
}

/* 1 once a report shows the large PNG's decode counted; -1 (stop) once
 * the workers have finished what the window let them make. */
static int img_decode_seen(void *arg) {
  img_probe *p = arg;
  int idle = img_report(p);
  if (p->decode >= IMG_MID_HELD && p->held >= p->decode) return 1;
  return idle ? -1 : 0;
}

/* The report counts a decode while it runs, and the memory goes back
 * after it. The stream loops over epochs, each decoding the 3500-pixel
 * PNG three times (it also stands in for the two refused images): the
 * poll looks for one of those decodes, however long the daemon takes. */
static void test_decode_counted_then_given_back(void **state) {
  (void)state;
  memsuite_start(img_arg, img_args);
  img_probe p = {memsuite_connect(), 0, 0};
  bfeed_error err;
  long rss0 = itest_daemon_rss_kib(&memsuite_the.d);
  bfeed_stream_opts o;
  img_opts(&o, 0);
  o.window = 2;
  bfeed_stream *st;
  if (bfeed_stream_open(p.c, "img", &o, &st, &err) < 0) fail_msg("open: %s", err.message);
  /* After each batch taken, the daemon makes what the window lets in
   * while the reports are read, until its workers are idle again. */
  int seen = 0;
  time_t until = time(NULL) + 60;
  while (!seen && time(NULL) < until) {
    bfeed_batch *b;
    if (bfeed_stream_next(st, &b, &err) < 0) fail_msg("next: %s", err.message);
    bfeed_batch_release(b);
    seen = itest_poll(img_decode_seen, &p, 10000, 1) > 0;
  }
  if (!seen) fail_msg("no report counted the 3500x3500 PNG's decode (last: decode %llu, held %llu)",
                      (unsigned long long)p.decode, (unsigned long long)p.held);
  print_message("a decode in progress: decode_memory_bytes %llu, memory_held_bytes %llu\n",
                (unsigned long long)p.decode, (unsigned long long)p.held);
  bfeed_stream_close(st);
  memsuite_settle(p.c);
  img_report(&p);
  uint64_t after = p.decode;
  long rss = itest_daemon_rss_kib(&memsuite_the.d);
  print_message("after the stream: decode_memory_bytes %llu; RSS %ld KiB, %ld before it\n", (unsigned long long)after,
                rss, rss0);
  /* Two workers keep the buffers of 64-pixel JPEGs: kilobytes. */
  if (after > 4 * IMG_MIB) fail_msg("%llu bytes of decode memory kept after the stream", (unsigned long long)after);
  if (MEMSUITE_CHECK_RSS && (uint64_t)(rss - rss0) * 1024 > 24 * IMG_MIB)
    fail_msg("RSS stayed %ld KiB above where it was before the stream", rss - rss0);
  bfeed_close(p.c);
  memsuite_stop();
}

/* max_memory bounds the decodes of all workers together, and one decode
 * may not take more than it whatever max_decode_memory says. */
static void test_decodes_share_max_memory(void **state) {
  (void)state;
  static const char *const args[] = {"--max-memory", "160M", "--max-decode-memory", "1G", "--workers", "4", NULL};
  memsuite_start(conc_arg, args);
  bfeed_stream_opts o;
  img_opts(&o, 1);
  o.batch = 1; /* a batch is one worker's: one image each, four at once */
  o.window = 4;
  itest_run run = {0};
  bfeed_error err;
  if (itest_fetch(memsuite_the.d.unix_addr, "conc", &o, 0, &run, &err) != BFEED_EEOF)
    fail_msg("fetch: %s", err.message);
  assert_int_equal(run.n, 5); /* zbig.png's place taken by the next image */
  for (size_t b = 0; b < run.n; b++)
    for (uint32_t i = 0; i < run.b[b].count; i++) assert_true(run.b[b].idx[i] < IMG_CONC_N); /* never zbig.png */
  itest_run_free(&run);
  assert_true(itest_daemon_log_has(&memsuite_the.d, "zbig.png: PNG of 13000x13000 needs"));
  assert_true(itest_daemon_log_has(&memsuite_the.d, "over max_memory (167772160)"));
  /* Each decode takes its rectangle, 4384 x 4384 RGBX (77 MB: the center
   * 64 of 73), so two fit 160M at once and a third waits: 2 x 77 MB and the
   * daemon's own memory, where three at once (stop 36's CI, a decode not
   * yet counted between its enter and its reserve) peaked at 241 MB and
   * four would be over 300 MB. */
  memsuite_peak_within("four 5000x5000 PNGs on four workers under --max-memory 160M", 208 * IMG_MIB);
  memsuite_stop();
}

MEMSUITE_MAIN("image_memory", img_setup, MEMSUITE_TEST(test_bombs_skipped_from_the_header),
              MEMSUITE_TEST(test_decode_counted_then_given_back), MEMSUITE_TEST(test_decodes_share_max_memory))
