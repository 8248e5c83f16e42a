/*
 * cmd_preview.c -- `bfeed preview`: one batch of a recipe as a contact
 * sheet (PNG), each sample un-normalised to 8-bit RGB with what it drew
 * written under it (crop, flip, jitter, the policy's ops, the erased box)
 * and the batch's mix above: a recipe seen before a day is spent on it.
 *
 * The stream is the user's, with explain on: the pixels are what a trainer
 * gets (erased, mixed), mapped back through Normalize's mean and std.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed.h"
#include "cli.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "preview_sheet.h"

/* Caption lines under a sample at most, and their characters. */
#define PREVIEW_LINES 24
#define PREVIEW_CHARS 40
#define PREVIEW_PAD 6

typedef struct preview_args {
  cli_stream_cmd c;
  cli_batch_at at;
  uint64_t columns;
} preview_args;

typedef struct preview_caption {
  int n;
  char line[PREVIEW_LINES][PREVIEW_CHARS + 1];
} preview_caption;

static int cmd_preview_takes_value(const char *name) {
  return cli_batch_at_takes_value(name) || strcmp(name, "columns") == 0;
}

static int cmd_preview_opt(const char *name, const char *value, void *ctx) {
  preview_args *p = ctx;
  if (strcmp(name, "columns") == 0) return cli_u64(name, value, 1, 256, &p->columns) < 0 ? -1 : 1;
  return cli_batch_at_opt(name, value, &p->at);
}

static void cmd_preview_add(preview_caption *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_preview_add(preview_caption *c, const char *fmt, ...) {
  if (c->n >= PREVIEW_LINES) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->line[c->n++], PREVIEW_CHARS + 1, fmt, ap);
  va_end(ap);
}

/* The value after "key": in the JSON object [obj, end), or NULL. */
static const char *cmd_preview_key(const char *obj, const char *end, const char *key) {
  char k[32];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(obj, k);
  return p && p < end ? p + strlen(k) : NULL;
}

/* The [["name", x], ...] list at p: one caption line per pair, or all on
 * one line (jitter: "brightness 1.13 hue -0.03"). */
static void cmd_preview_pairs(preview_caption *c, const char *p, const char *end, int one_line) {
  char line[PREVIEW_CHARS + 1] = "";
  for (p = p ? strchr(p, '[') : NULL; p && p < end;) {
    char name[24];
    double v;
    if (sscanf(p, "[[\"%23[^\"]\",%lf]", name, &v) != 2 && sscanf(p, ",[\"%23[^\"]\",%lf]", name, &v) != 2) break;
    if (one_line) {
      size_t at = strlen(line);
      snprintf(line + at, sizeof line - at, "%s%.2s%.3g", at ? " " : "", name, v);
    } else {
      cmd_preview_add(c, "%s %.4g", name, v);
    }
    p = strchr(p + 2, ']'); /* the pair's end, then ',' or the list's ']' */
    if (!p || p[1] != ',') break;
    p++;
  }
  if (one_line && line[0]) cmd_preview_add(c, "jitter %s", line);
}

/* The caption of one sample's explain object [obj, end). */
static void cmd_preview_caption(const char *obj, const char *end, preview_caption *c) {
  int a, b, h, w;
  unsigned idx = 0;
  const char *p;
  memset(c, 0, sizeof *c);
  if ((p = cmd_preview_key(obj, end, "index"))) sscanf(p, "%u", &idx);
  if ((p = cmd_preview_key(obj, end, "crop")) && sscanf(p, "[%d,%d,%d,%d]", &a, &b, &h, &w) == 4) {
    const char *f = cmd_preview_key(obj, end, "flip");
    cmd_preview_add(c, "#%u crop %d,%d %dx%d%s", idx, a, b, h, w, f && strncmp(f, "true", 4) == 0 ? " flip" : "");
  } else if ((p = cmd_preview_key(obj, end, "resized")) && sscanf(p, "[%d,%d]", &h, &w) == 2) {
    cmd_preview_add(c, "#%u resized %dx%d", idx, h, w);
  }
  cmd_preview_pairs(c, cmd_preview_key(obj, end, "jitter"), end, 1);
  cmd_preview_pairs(c, cmd_preview_key(obj, end, "ops"), end, 0);
  if ((p = cmd_preview_key(obj, end, "erase")) && sscanf(p, "[%d,%d,%d,%d]", &a, &b, &h, &w) == 4)
    cmd_preview_add(c, "erase %d,%d %dx%d", a, b, h, w);
}

/* The batch's header line: epoch, index and mix. */
static void cmd_preview_header(const char *json, const bfeed_batch *b, char *out, size_t cap) {
  const char *end = json + strlen(json), *p = cmd_preview_key(json, end, "kind");
  int n = snprintf(out, cap, "epoch %llu batch %llu", (unsigned long long)bfeed_batch_epoch(b),
                   (unsigned long long)bfeed_batch_index(b));
  char kind[16];
  double lam;
  const char *l = cmd_preview_key(json, end, "lam");
  if (p && sscanf(p, "\"%15[^\"]\"", kind) == 1 && l && sscanf(l, "%lf", &lam) == 1 && n > 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, "  %s lam %.4f", kind, lam);
}

/* Sample i of the image tensor as 8-bit RGB: x * std + mean, times 255
 * (normalize none: x itself), rounded and clamped. */
static void cmd_preview_pixels(const bfeed_tensor *t, const bfeed_stream_opts *o, int i, uint8_t *rgb) {
  int nhwc = o->layout == BFEED_LAYOUT_NHWC;
  int H = (int)t->shape[nhwc ? 1 : 2], W = (int)t->shape[nhwc ? 2 : 3];
  const uint16_t *x = (const uint16_t *)t->data + (size_t)i * 3 * H * W;
  int raw = o->normalize == BFEED_NORM_NONE;
  for (int y = 0; y < H; y++)
    for (int xx = 0; xx < W; xx++)
      for (int c = 0; c < 3; c++) {
        size_t at = nhwc ? ((size_t)y * W + xx) * 3 + c : ((size_t)c * H + y) * W + xx;
        double v = bfeed_bf16_to_f32(x[at]);
        v = raw ? v : (v * o->std[c] + o->mean[c]) * 255.0;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        rgb[((size_t)y * W + xx) * 3 + c] = (uint8_t)lround(v);
      }
}

/* The sheet: a header line, then the samples in rows of `cols`, each
 * cell an image and its caption. */
static int cmd_preview_sheet(const preview_args *a, const bfeed_batch *b, const char *json, char *err, size_t errlen) {
  bfeed_tensor t;
  if (bfeed_batch_find(b, "image", &t) < 0 || t.dtype != BFEED_DTYPE_BF16 || t.ndim != 4)
    return snprintf(err, errlen, "the batch has no bf16 image tensor (preview shows image datasets)"), -1;
  int nhwc = a->c.o.layout == BFEED_LAYOUT_NHWC, B = (int)t.shape[0];
  int H = (int)t.shape[nhwc ? 1 : 2], W = (int)t.shape[nhwc ? 2 : 3];
  int cols = a->columns ? (int)a->columns : (int)ceil(sqrt((double)B));
  int rows = (B + cols - 1) / cols, lines = 1;
  preview_caption *cap = calloc((size_t)B, sizeof *cap);
  uint8_t *rgb = malloc((size_t)H * W * 3);
  const char *p = strstr(json, "\"samples\":[");
  for (int i = 0; cap && p && i < B; i++) { /* sample objects hold no braces of their own */
    const char *o = strchr(p, '{'), *e = o ? strchr(o, '}') : NULL;
    if (!e) break;
    cmd_preview_caption(o, e, &cap[i]);
    if (cap[i].n > lines) lines = cap[i].n;
    p = e;
  }
  int cw = W > PREVIEW_CHARS * PREVIEW_CHAR_W ? W : PREVIEW_CHARS * PREVIEW_CHAR_W;
  int ch = H + PREVIEW_PAD + lines * PREVIEW_LINE_H + PREVIEW_PAD, top = PREVIEW_LINE_H + 2 * PREVIEW_PAD;
  preview_sheet s;
  int rc = -1;
  if (!cap || !rgb || preview_sheet_init(&s, PREVIEW_PAD + cols * (cw + PREVIEW_PAD), top + rows * ch) < 0) {
    snprintf(err, errlen, "out of memory for a %dx%d sheet", cols * cw, rows * ch);
    goto out;
  }
  char head[160];
  cmd_preview_header(json, b, head, sizeof head);
  preview_sheet_text(&s, PREVIEW_PAD, PREVIEW_PAD, head, (s.w - PREVIEW_PAD) / PREVIEW_CHAR_W);
  for (int i = 0; i < B; i++) {
    int x = PREVIEW_PAD + (i % cols) * (cw + PREVIEW_PAD), y = top + (i / cols) * ch;
    cmd_preview_pixels(&t, &a->c.o, i, rgb);
    preview_sheet_blit(&s, x, y, rgb, W, H);
    for (int k = 0; k < cap[i].n; k++)
      preview_sheet_text(&s, x, y + H + PREVIEW_PAD + k * PREVIEW_LINE_H, cap[i].line[k], cw / PREVIEW_CHAR_W);
  }
  rc = preview_sheet_write_png(&s, a->at.out, err, errlen);
  preview_sheet_free(&s);
out:
  free(cap);
  free(rgb);
  return rc;
}

static const char preview_usage[] =
    "usage: bfeed preview --connect ADDR --dataset NAME [stream options] --batch-index K --out FILE.png\n"
    "Writes batch K (of --epoch E) as a contact sheet: each sample un-normalised, with what it drew\n"
    "(crop, flip, jitter, the policy's ops, the erased box) under it, and the batch's mix above.\n"
    "  --batch-index K         the batch to show\n"
    "  --out FILE              the PNG to write\n"
    "  --columns N             samples per row (default: a square)\n\n";

int cmd_preview(int argc, char **argv) {
  preview_args a;
  memset(&a, 0, sizeof a);
  a.c.cmd = "preview";
  a.c.usage = preview_usage;
  int pr = cli_parse_stream_cmd(argc, argv, &a.c, cmd_preview_opt, cmd_preview_takes_value, &a);
  if (pr != 0) return pr > 0 ? 0 : 2;
  a.c.o.explain = 1;
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_batch *b;
  int usage, rc = 0;
  if (cli_batch_at_fetch(&a.c, &a.at, &c, &s, &b, &usage) < 0) return usage ? 2 : 1;
  char msg[512];
  bfeed_tensor ex;
  char *json = NULL;
  if (bfeed_batch_find(b, "image", &ex) < 0) {
    rc = -1;
    snprintf(msg, sizeof msg, "dataset %s serves no images (preview shows image datasets)", a.c.dataset);
  } else if (bfeed_batch_find(b, "explain", &ex) == 0 && (json = malloc(ex.nbytes + 1))) {
    memcpy(json, ex.data, ex.nbytes);
    json[ex.nbytes] = 0;
    rc = cmd_preview_sheet(&a, b, json, msg, sizeof msg);
  } else {
    rc = -1;
    snprintf(msg, sizeof msg, "the batch has no explain tensor (a daemon that predates recipes?)");
  }
  if (rc < 0) fprintf(stderr, "bfeed preview: %s\n", msg);
  else printf("wrote batch %llu of epoch %llu to %s\n", (unsigned long long)bfeed_batch_index(b),
              (unsigned long long)bfeed_batch_epoch(b), a.at.out);
  free(json);
  bfeed_batch_release(b);
  bfeed_stream_close(s);
  bfeed_close(c);
  return rc < 0 ? 1 : 0;
}
