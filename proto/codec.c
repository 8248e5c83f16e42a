/* codec.c -- see codec.h; the wire forms are PROTOCOL.md's "Codecs". */
#include "codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tobf16.h"
#include "wire.h"

/* The compressors, in the order their names are listed in messages. A new
 * one is a file defining its codec_comp and a line here. */
static const codec_comp *const codec_comps[] = {&codec_comp_zstd, &codec_comp_lz4};
#define CODEC_NCOMPS (sizeof codec_comps / sizeof codec_comps[0])
_Static_assert(CODEC_NCOMPS <= CODEC_MAX_COMPS, "codec_state has a slot per compressor");

/* Every wire codec: the two forms alone, then each compressor's two. */
static codec_info codec_table[2 + 2 * CODEC_NCOMPS];
static size_t codec_count;
static pthread_once_t codec_once = PTHREAD_ONCE_INIT;

static void codec_add(uint8_t id, int u8, const codec_comp *comp) {
  codec_info *c = &codec_table[codec_count++];
  c->id = id;
  c->u8 = u8;
  c->comp = comp;
  snprintf(c->name, sizeof c->name, "%s%s", u8 && comp ? "u8+" : "", comp ? comp->name : u8 ? "u8" : "none");
}

static void codec_table_make(void) {
  codec_add(BFEED_CODEC_NONE, 0, NULL);
  codec_add(BFEED_CODEC_U8, 1, NULL);
  for (size_t i = 0; i < CODEC_NCOMPS; i++) {
    codec_add(codec_comps[i]->id, 0, codec_comps[i]);
    codec_add(codec_comps[i]->id_u8, 1, codec_comps[i]);
  }
}

const codec_info *codec_get(int id) {
  pthread_once(&codec_once, codec_table_make);
  for (size_t i = 0; i < codec_count; i++)
    if (codec_table[i].id == id) return &codec_table[i];
  return NULL;
}

int codec_is_plain(int id) { return id == BFEED_CODEC_NONE; }

/* The codec of a form and a compressor. */
static int codec_of(int u8, const codec_comp *comp) {
  return comp ? (u8 ? comp->id_u8 : comp->id) : u8 ? BFEED_CODEC_U8 : BFEED_CODEC_NONE;
}

void codec_list(const char *sep, const char *level, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "auto%snone%su8", sep, sep);
  for (size_t i = 0; i < CODEC_NCOMPS && at < n; i++) {
    const codec_comp *c = codec_comps[i];
    const char *lv = c->level_hi ? level : "";
    at += (size_t)snprintf(buf + at, n - at, "%s%s%s%su8+%s%s", sep, c->name, lv, sep, c->name, lv);
  }
}

int codec_parse(const char *text, int *id, int *level, char *err, size_t errlen) {
  if (strcmp(text, "auto") == 0) return *id = BFEED_CODEC_AUTO, 0;
  pthread_once(&codec_once, codec_table_make);
  const char *colon = strchr(text, ':');
  size_t n = colon ? (size_t)(colon - text) : strlen(text);
  for (size_t i = 0; i < codec_count; i++) {
    const codec_info *c = &codec_table[i];
    if (strlen(c->name) != n || strncmp(c->name, text, n) != 0) continue;
    if (!colon) {
      *id = c->id;
      if (c->comp) *level = c->comp->level_def;
      return 0;
    }
    if (!c->comp || !c->comp->level_hi)
      return snprintf(err, errlen, "codec %s: %.*s takes no level", text, (int)n, text), BFEED_EINVAL;
    char *end;
    errno = 0;
    long v = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || colon[1] == '-' || colon[1] == '+' || v < c->comp->level_lo ||
        v > c->comp->level_hi)
      return snprintf(err, errlen, "codec %s: %s: expected a whole number from %d to %d", c->comp->name, colon + 1,
                      c->comp->level_lo, c->comp->level_hi),
             BFEED_EINVAL;
    *id = c->id;
    *level = (int)v;
    return 0;
  }
  char names[160];
  codec_list(", ", "[:LEVEL]", names, sizeof names);
  return snprintf(err, errlen, "codec %s: expected %s", text, names), BFEED_EINVAL;
}

void codec_format(int id, int level, char *buf, size_t n) {
  const codec_info *c = codec_get(id);
  if (!c) snprintf(buf, n, "%s", id == BFEED_CODEC_AUTO ? "auto" : "?");
  else if (c->comp && c->comp->level_hi) snprintf(buf, n, "%s:%d", c->name, level);
  else snprintf(buf, n, "%s", c->name);
}

int codec_check(int id, int level, char *err, size_t errlen) {
  if (id == BFEED_CODEC_AUTO) return 0;
  const codec_info *c = codec_get(id);
  if (!c) return snprintf(err, errlen, "unknown codec %d", id), BFEED_EINVAL;
  const codec_comp *z = c->comp;
  if (z && z->level_hi && (level < z->level_lo || level > z->level_hi))
    return snprintf(err, errlen, "%s level %d out of range %d..%d", z->name, level, z->level_lo, z->level_hi),
           BFEED_EINVAL;
  return 0;
}

int codec_auto(int tcp) { return tcp ? BFEED_CODEC_U8 : BFEED_CODEC_NONE; }

int codec_for_batch(int requested, int has_image) {
  const codec_info *c = codec_get(requested);
  if (!c) return BFEED_CODEC_NONE;
  return codec_of(has_image && (c->u8 || c->comp), c->comp);
}

uint64_t codec_plain_size(const msg_batch *m) {
  const codec_info *c = codec_get(m->codec);
  return c && c->u8 ? msg_batch_u8_size(m) : m->raw_size;
}

size_t codec_bound(int id, size_t n) {
  const codec_info *c = codec_get(id);
  return c && c->comp ? c->comp->bound(n) : n;
}

void codec_state_free(codec_state *st) {
  for (size_t i = 0; i < CODEC_NCOMPS; i++)
    if (st->s[i]) codec_comps[i]->state_free(st->s[i]);
  memset(st, 0, sizeof *st);
}

int codec_compress(codec_state *st, int id, int level, const void *plain, size_t n, void *dst, size_t cap,
                   size_t *out, char *err, size_t errlen) {
  const codec_info *c = codec_get(id);
  for (size_t i = 0; c && c->comp && i < CODEC_NCOMPS; i++)
    if (codec_comps[i] == c->comp) return c->comp->compress(&st->s[i], level, plain, n, dst, cap, out, err, errlen);
  return snprintf(err, errlen, "codec %d compresses nothing", id), BFEED_EINTERNAL;
}

int codec_decompress(const msg_batch *m, void *dst, size_t n, char *err, size_t errlen) {
  const codec_info *c = codec_get(m->codec);
  if (!c || !c->comp) return snprintf(err, errlen, "codec %d compresses nothing", m->codec), BFEED_EINTERNAL;
  char why[200];
  int rc = c->comp->decompress(m->data, m->data_size, dst, n, why, sizeof why);
  if (rc < 0) snprintf(err, errlen, "BATCH %llu: %s data: %s", (unsigned long long)m->seq, c->name, why);
  return rc;
}

void codec_u8_head(uint8_t *data, int nhwc, const uint16_t lut[3][256]) {
  memset(data, 0, 4);
  data[0] = (uint8_t)(nhwc != 0);
  for (int c = 0; c < 3; c++)
    for (int v = 0; v < 256; v++) wire_put16(data + 4 + 2 * (256 * c + v), lut[c][v]);
}

int codec_u8_expand(const msg_batch *m, const uint8_t *data, uint8_t *raw, char *err, size_t errlen) {
  const msg_tensor *t = &m->t[0];
  int nhwc = data[0] == 1;
  if (data[0] > 1 || (data[1] | data[2] | data[3]) || (nhwc ? t->shape[3] : t->shape[1]) != 3)
    return snprintf(err, errlen, "BATCH %llu: u8 layout byte %u does not fit the image shape",
                    (unsigned long long)m->seq, data[0]),
           BFEED_EPROTO;
  uint64_t h = nhwc ? t->shape[1] : t->shape[2], w = nhwc ? t->shape[2] : t->shape[3];
  if (h > INT32_MAX || w > INT32_MAX)
    return snprintf(err, errlen, "BATCH %llu: u8 image of %llu x %llu pixels", (unsigned long long)m->seq,
                    (unsigned long long)h, (unsigned long long)w),
           BFEED_EPROTO;
  /* The table keeps its little-endian bytes: tobf16 stores them so. */
  uint16_t lut[3][256];
  for (int i = 0; i < 3 * 256; i++) lut[i / 256][i % 256] = wire_get16(data + 4 + 2 * i);
  const uint8_t *px = data + MSG_U8_HEAD;
  size_t image_px = (size_t)(h * w * 3);
  for (uint64_t i = 0; i < t->shape[0]; i++, px += image_px)
    tobf16_rect(px, (int)h, (int)w, 0, nhwc, (const uint16_t(*)[256])lut, raw + 2 * image_px * i);
  memcpy(raw + t->nbytes, px, m->raw_size - t->nbytes);
  return 0;
}
