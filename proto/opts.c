/*
 * opts.c -- see opts.h. The table is opts.def; this file is the machinery
 * that reads it, one function per thing done with options (OPEN's
 * encoding, defaults, checks, the fingerprint), plus the four options
 * written as one value (size, shard, codec, select). opts_name.c sets
 * them by name and writes --help.
 */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "opts_row.h"

static const opts_choices opts_modes = {"mode", 2, 2, (const char *const[]){"train", "eval"}};
static const opts_choices opts_layouts = {"layout", 2, 2, (const char *const[]){"nchw", "nhwc"}};
static const opts_choices opts_norms = {"normalization", 3, 2, (const char *const[]){"imagenet", "none", "custom"}};
static const opts_choices opts_shuffles = {"shuffle setting", 3, 3, (const char *const[]){"auto", "on", "off"}};
static const opts_choices opts_pools = {"pooling", 2, 2, (const char *const[]){"none", "mean"}};
static const opts_choices opts_selects = {"select", 4, 0,
                                          (const char *const[]){"all", "residue", "on-demand", "stride"}};
static const opts_choices opts_eval_decodes = {"eval decoding", 2, 2, (const char *const[]){"exact", "fast"}};
static const opts_choices opts_shares = {"sharing", 2, 2, (const char *const[]){"on", "off"}};
static const opts_choices opts_eval_pads = {"eval padding", 2, 2, (const char *const[]){"none", "mask"}};
static const opts_choices opts_transports = {"transport", 2, 0, (const char *const[]){"socket", "shm"}};
static const opts_choices opts_interps = {"interpolation", 3, 3, (const char *const[]){"bilinear", "bicubic", "nearest"}};
static const opts_choices opts_auto_augments = {"augmentation policy", 4, 4,
                                                (const char *const[]){"none", "imagenet", "rand", "ta_wide"}};
static const opts_choices opts_train_decodes = {"train decoding", 2, 2, (const char *const[]){"fast", "exact"}};

/* What the columns of opts.def become, by type. */
#define OPTS_CH_U32(a) NULL
#define OPTS_CH_U64(a) NULL
#define OPTS_CH_I32(a) NULL
#define OPTS_CH_FLAG(a) NULL
#define OPTS_CH_CHOICE(a) (a)
#define OPTS_CH_F32S(a) NULL
#define OPTS_NF_F32S(a) (a)
#define OPTS_NF_U32(a) 0
#define OPTS_NF_U64(a) 0
#define OPTS_NF_I32(a) 0
#define OPTS_NF_FLAG(a) 0
#define OPTS_NF_CHOICE(a) 0
#define OPTS_DEF_F32S(d) 0, d
#define OPTS_DEF_U32(d) (d), NULL
#define OPTS_DEF_U64(d) (d), NULL
#define OPTS_DEF_I32(d) (d), NULL
#define OPTS_DEF_FLAG(d) (d), NULL
#define OPTS_DEF_CHOICE(d) (d), NULL
#define FLOATS(...) ((const float[]){__VA_ARGS__}) /* at file scope: static storage */
#define ALWAYS OPTS_ALWAYS
#define NONCRIT OPTS_NONCRIT
#define BYTES OPTS_BYTES
#define BYTES_SET OPTS_BYTES_SET
#define TEXT OPTS_TEXT
#define RESOLVED OPTS_RESOLVED
#define NONZERO OPTS_NONZERO
#define SCALE OPTS_SCALE
#define RATIO OPTS_RATIO
#define PROB OPTS_PROB
#define WAS0 OPTS_WAS0
#define JITTER OPTS_JITTER
#define FILL OPTS_FILL
#define NONNEG OPTS_NONNEG
#define OPT(field, tag, type, aux, lo, hi, def, flags, text, arg, help)                                      \
  {#field, tag, OPTS_##type, OPTS_CH_##type(aux), OPTS_NF_##type(aux), offsetof(bfeed_stream_opts, field), lo, hi, \
   OPTS_DEF_##type(def), flags, text, arg, help},
const opts_row opts_table[] = {
#include "opts.def"
};
#undef OPT
#undef FLOATS
#undef ALWAYS
#undef NONCRIT
#undef BYTES
#undef BYTES_SET
#undef TEXT
#undef RESOLVED
#undef NONZERO
#undef SCALE
#undef RATIO
#undef PROB
#undef WAS0
#undef JITTER
#undef FILL
#undef NONNEG
const size_t opts_count = sizeof opts_table / sizeof opts_table[0];
_Static_assert(sizeof(bfeed_mode) == sizeof(int) && sizeof(bfeed_codec) == sizeof(int), "enum fields are int-sized");


/* An integer row's value (CHOICE, FLAG and I32 are ints). */
uint64_t opts_get(const bfeed_stream_opts *o, const opts_row *r) {
  switch (r->type) {
    case OPTS_U32: return *OPTS_CAT(o, r, uint32_t);
    case OPTS_U64: return *OPTS_CAT(o, r, uint64_t);
    case OPTS_F32S: return 0;
    default: return (uint64_t)(int64_t)*OPTS_CAT(o, r, int);
  }
}

void opts_put(bfeed_stream_opts *o, const opts_row *r, uint64_t v) {
  switch (r->type) {
    case OPTS_U32: *OPTS_AT(o, r, uint32_t) = (uint32_t)v; break;
    case OPTS_U64: *OPTS_AT(o, r, uint64_t) = v; break;
    case OPTS_F32S: break;
    default: *OPTS_AT(o, r, int) = (int)v; break;
  }
}

int opts_is_default(const bfeed_stream_opts *o, const opts_row *r) {
  if (r->type == OPTS_F32S) return memcmp(OPTS_CAT(o, r, float), r->deff, sizeof(float) * (size_t)r->nf) == 0;
  if (r->type == OPTS_FLAG) return (opts_get(o, r) != 0) == (r->def != 0);
  return opts_get(o, r) == r->def;
}

void opts_defaults(bfeed_stream_opts *o) {
  memset(o, 0, sizeof *o); /* padding too: callers compare whole structs */
  for (size_t i = 0; i < OPTS_N; i++) {
    const opts_row *r = &opts_table[i];
    if (r->type == OPTS_F32S) memcpy(OPTS_AT(o, r, float), r->deff, sizeof(float) * (size_t)r->nf);
    else opts_put(o, r, r->def);
  }
}

void opts_encode(wbuf *w, const bfeed_stream_opts *o) {
  for (size_t i = 0; i < OPTS_N; i++) {
    const opts_row *r = &opts_table[i];
    if (!(r->flags & OPTS_ALWAYS) && opts_is_default(o, r)) continue;
    uint16_t tag = (uint16_t)(r->tag | (r->flags & OPTS_NONCRIT ? 0 : TLV_CRITICAL));
    uint64_t v = opts_get(o, r);
    switch (r->type) {
      case OPTS_U32:
      case OPTS_I32: tlv_put_u32(w, tag, (uint32_t)v); break;
      case OPTS_U64: tlv_put_u64(w, tag, v); break;
      case OPTS_FLAG: tlv_put_u8(w, tag, v != 0); break;
      case OPTS_CHOICE: tlv_put_u8(w, tag, (uint8_t)v); break;
      case OPTS_F32S: tlv_put_f32s(w, tag, OPTS_CAT(o, r, float), r->nf); break;
    }
  }
}

int opts_decode_item(const tlv_item *it, bfeed_stream_opts *o) {
  uint16_t tag = it->tag & (uint16_t)~TLV_CRITICAL;
  for (size_t i = 0; i < OPTS_N; i++) {
    const opts_row *r = &opts_table[i];
    if (r->tag != tag) continue;
    uint8_t b = 0;
    uint32_t u = 0;
    uint64_t v = 0;
    int rc;
    switch (r->type) {
      case OPTS_U32:
      case OPTS_I32: rc = tlv_u32(it, &u), v = r->type == OPTS_I32 ? (uint64_t)(int64_t)(int32_t)u : u; break;
      case OPTS_U64: rc = tlv_u64(it, &v); break;
      case OPTS_FLAG: rc = tlv_u8(it, &b), v = b != 0; break;
      case OPTS_CHOICE: rc = tlv_u8(it, &b), v = b; break;
      default: return tlv_f32s(it, OPTS_AT(o, r, float), r->nf) < 0 ? BFEED_EPROTO : 1;
    }
    if (rc < 0) return BFEED_EPROTO;
    opts_put(o, r, v);
    return 1;
  }
  return (it->tag & TLV_CRITICAL) ? BFEED_EINVAL : 0;
}

/* ---- the options written as one value ---------------------------------- */

/* "A/B" with 0 <= A < B: shard I/N and select residue:R/M. */
static int opts_ratio(const char *text, unsigned long long *a, unsigned long long *b) {
  char extra;
  return !strchr(text, '-') && sscanf(text, "%llu/%llu%c", a, b, &extra) == 2 && *b >= 1 && *a < *b ? 0 : -1;
}

/* a below b, b at least 1: 0, or BFEED_EINVAL naming both. */
static int opts_below(uint64_t a, uint64_t b, const char *a_name, const char *b_name, char *err, size_t errlen) {
  if (b < 1) return snprintf(err, errlen, "%s must be at least 1", b_name), BFEED_EINVAL;
  if (a >= b)
    return snprintf(err, errlen, "%s %llu must be below %s %llu", a_name, (unsigned long long)a, b_name,
                    (unsigned long long)b),
           BFEED_EINVAL;
  return 0;
}

/* "S", a square, or "H,W" (also "H/W", a binding's pair, and "HxW"):
 * width 0 when it is the height's, so that both spellings are one stream. */
static int opts_size_parse(bfeed_stream_opts *o, const char *value, char *err, size_t errlen) {
  unsigned long h = 0, w = 0;
  char sep = ',', extra;
  int n = strchr(value, '-') ? 0 : sscanf(value, "%lu%c%lu%c", &h, &sep, &w, &extra);
  if (n == 1) w = h;
  if ((n != 1 && n != 3) || !strchr(",/x", sep) || h < 8 || h > 4096 || w < 8 || w > 4096)
    return snprintf(err, errlen, "size %s: expected S or H,W, each from 8 to 4096", value), BFEED_EINVAL;
  o->size = (uint32_t)h;
  o->width = w == h ? 0 : (uint32_t)w;
  return 0;
}

static int opts_size_check(const bfeed_stream_opts *o, char *err, size_t errlen) {
  if (o->width && o->width < 8) return snprintf(err, errlen, "width %u out of range 8..4096 (0: the size's)", o->width), BFEED_EINVAL;
  return 0;
}

/* The fingerprint's and --help's form: "224" for a square however it was
 * spelt, so that square streams kept their fingerprints. */
static void opts_size_format(const bfeed_stream_opts *o, char *buf, size_t cap) {
  if (o->width && o->width != o->size) snprintf(buf, cap, "%u,%u", o->size, o->width);
  else snprintf(buf, cap, "%u", o->size);
}

static int opts_shard_parse(bfeed_stream_opts *o, const char *value, char *err, size_t errlen) {
  unsigned long long idx, count;
  if (opts_ratio(value, &idx, &count) < 0 || count > UINT32_MAX)
    return snprintf(err, errlen, "shard %s: expected I/N with 0 <= I < N", value), BFEED_EINVAL;
  o->shard_index = (uint32_t)idx;
  o->shard_count = (uint32_t)count;
  return 0;
}

static int opts_shard_check(const bfeed_stream_opts *o, char *err, size_t errlen) {
  return opts_below(o->shard_index, o->shard_count, "shard index", "shard count", err, errlen);
}

static void opts_shard_format(const bfeed_stream_opts *o, char *buf, size_t cap) {
  snprintf(buf, cap, "%u/%u", o->shard_index, o->shard_count);
}

static int opts_codec_parse(bfeed_stream_opts *o, const char *value, char *err, size_t errlen) {
  int id, level = o->codec_level;
  if (codec_parse(value, &id, &level, err, errlen) < 0) return BFEED_EINVAL;
  o->codec = (bfeed_codec)id;
  o->codec_level = level;
  return 0;
}

static int opts_codec_check(const bfeed_stream_opts *o, char *err, size_t errlen) {
  return codec_check(o->codec, o->codec_level, err, errlen);
}

static void opts_codec_format(const bfeed_stream_opts *o, char *buf, size_t cap) {
  codec_format(o->codec, o->codec_level, buf, cap);
}

static void opts_codec_metavar(char *buf, size_t cap) { codec_list("|", "[:L]", buf, cap); }

/* all, on-demand, residue:R/M (the batches whose global number is R mod
 * M), stride:M (every M-th from the start). */
static int opts_select_parse(bfeed_stream_opts *o, const char *value, char *err, size_t errlen) {
  unsigned long long rem = 0, mod;
  char extra;
  if (strcmp(value, "all") == 0) return o->select = BFEED_SELECT_ALL, o->select_mod = 1, o->select_rem = 0, 0;
  if (strcmp(value, "on-demand") == 0) return o->select = BFEED_SELECT_ON_DEMAND, 0;
  int stride = strncmp(value, "stride:", 7) == 0;
  if (stride ? strchr(value, '-') || sscanf(value + 7, "%llu%c", &mod, &extra) != 1 || mod < 1
             : strncmp(value, "residue:", 8) != 0 || opts_ratio(value + 8, &rem, &mod) < 0)
    return snprintf(err, errlen,
                    "select %s: expected all, on-demand, residue:R/M with 0 <= R < M, or stride:M with M >= 1",
                    value),
           BFEED_EINVAL;
  o->select = stride ? BFEED_SELECT_STRIDE : BFEED_SELECT_RESIDUE;
  o->select_mod = mod;
  o->select_rem = rem;
  return 0;
}

static int opts_select_check(const bfeed_stream_opts *o, char *err, size_t errlen) {
  /* A stride counts from the stream's start: a remainder would be a second
   * spelling of the same stream. */
  if (o->select == BFEED_SELECT_STRIDE && o->select_rem != 0)
    return snprintf(err, errlen, "select_rem %llu: a stride selection takes no remainder (0)",
                    (unsigned long long)o->select_rem),
           BFEED_EINVAL;
  return opts_below(o->select_rem, o->select_mod, "select_rem", "select_mod", err, errlen);
}



static const opts_joint opts_joints[] = {
    {"size", opts_size_parse, opts_size_check, opts_size_format, NULL},
    {"shard", opts_shard_parse, opts_shard_check, opts_shard_format, NULL},
    {"codec", opts_codec_parse, opts_codec_check, opts_codec_format, opts_codec_metavar},
    {"select", opts_select_parse, opts_select_check, NULL, NULL},
};

const opts_joint *opts_joint_of(const opts_row *r) {
  for (size_t i = 0; r->text && i < sizeof opts_joints / sizeof opts_joints[0]; i++)
    if (strcmp(opts_joints[i].text, r->text) == 0) return &opts_joints[i];
  return NULL;
}

/* Whether r is the first row of its option (a joint option's others are not). */
int opts_first_of_text(const opts_row *r) {
  for (const opts_row *q = opts_table; q < r; q++)
    if (q->text && r->text && strcmp(q->text, r->text) == 0) return 0;
  return r->text != NULL;
}

/* ---- checks ------------------------------------------------------------ */

static int opts_in_0_255(float f) { return f >= 0.0f && f <= 255.0f; }

int opts_check_row(const bfeed_stream_opts *o, const opts_row *r, char *err, size_t errlen) {
  uint64_t v = opts_get(o, r);
  if ((r->type == OPTS_U32 || r->type == OPTS_U64) && (v < r->lo || v > r->hi))
    return snprintf(err, errlen, "%s %llu out of range %llu..%llu", r->field, (unsigned long long)v,
                    (unsigned long long)r->lo, (unsigned long long)r->hi),
           BFEED_EINVAL;
  if (r->type == OPTS_CHOICE && r->choices && (v >= (uint64_t)r->choices->n))
    return snprintf(err, errlen, "unknown %s %d", r->choices->noun, (int)v), BFEED_EINVAL;
  if (r->type != OPTS_F32S) return 0;
  const float *f = OPTS_CAT(o, r, float);
  for (int c = 0; c < r->nf; c++) {
    if ((r->flags & OPTS_NONZERO) && (!isfinite(f[c]) || f[c] == 0.0f))
      return snprintf(err, errlen, "%s[%d] must be finite and non-zero", r->field, c), BFEED_EINVAL;
    if (!isfinite(f[c])) return snprintf(err, errlen, "%s[%d] is not finite", r->field, c), BFEED_EINVAL;
  }
  const char *want = (r->flags & OPTS_SCALE) && !(f[0] > 0.0f && f[0] <= f[1] && f[1] <= 1.0f) ? "0 < LO <= HI <= 1"
                     : (r->flags & OPTS_RATIO) && !(f[0] > 0.0f && f[0] <= f[1])            ? "0 < LO <= HI"
                     : (r->flags & OPTS_PROB) && !(f[0] >= 0.0f && f[0] <= 1.0f)            ? "0 <= P <= 1"
                     : (r->flags & OPTS_NONNEG) && !(f[0] >= 0.0f)                          ? "A >= 0"
                     : (r->flags & OPTS_JITTER) && !(f[0] >= 0 && f[1] >= 0 && f[2] >= 0 && f[3] >= 0 && f[3] <= 0.5f)
                         ? "B, C, S >= 0 and 0 <= H <= 0.5"
                     : (r->flags & OPTS_FILL) && !(opts_in_0_255(f[0]) && opts_in_0_255(f[1]) && opts_in_0_255(f[2]))
                         ? "0..255 each"
                         : NULL;
  if (!want) return 0;
  char text[64];
  opts_default_text(r, o, text, sizeof text);
  return snprintf(err, errlen, "%s %s: expected %s", r->field, text, want), BFEED_EINVAL;
}

int opts_after_normalize(const bfeed_stream_opts *o) {
  return o->random_erase > 0 || o->mixup_alpha > 0 || o->cutmix_alpha > 0;
}

/* Epochs are numbered up to 2^64 - 1: a stream whose last would be past
 * it is refused (it would wrap to epoch 0). */
static int opts_check_epochs(const bfeed_stream_opts *o, char *err, size_t errlen) {
  if (o->epochs && o->epoch > UINT64_MAX - (o->epochs - 1))
    return snprintf(err, errlen, "epoch %llu with epochs %llu: the last would be past epoch %llu, the last there is",
                    (unsigned long long)o->epoch, (unsigned long long)o->epochs, (unsigned long long)UINT64_MAX),
           BFEED_EINVAL;
  return 0;
}

/* The augmentation's options together: what one alone cannot say. */
static int opts_check_recipe(const bfeed_stream_opts *o, char *err, size_t errlen) {
  int augments = o->color_jitter[0] > 0 || o->color_jitter[1] > 0 || o->color_jitter[2] > 0 ||
                 o->color_jitter[3] > 0 || o->auto_augment != BFEED_AA_NONE || opts_after_normalize(o);
  if (augments && o->mode == BFEED_MODE_EVAL)
    return snprintf(err, errlen, "color-jitter, auto-augment, random-erase, mixup-alpha and cutmix-alpha are "
                                 "train transforms: an eval stream takes none"),
           BFEED_EINVAL;
  if (o->auto_augment == BFEED_AA_RAND && o->aa_magnitude >= o->aa_bins)
    return snprintf(err, errlen, "aa-magnitude %u: RandAugment's magnitude is a bin, below aa-bins %u",
                    o->aa_magnitude, o->aa_bins),
           BFEED_EINVAL;
  if (opts_after_normalize(o) && codec_get(o->codec) && codec_get(o->codec)->u8)
    return snprintf(err, errlen, "codec %s sends 8-bit pixels, before Normalize: random-erase, mixup and cutmix "
                                 "make values after it (use none, zstd or lz4)",
                    codec_get(o->codec)->name),
           BFEED_EINVAL;
  return 0;
}

int opts_check(const bfeed_stream_opts *o, char *err, size_t errlen) {
  for (size_t i = 0; i < OPTS_N; i++) {
    const opts_row *r = &opts_table[i];
    const opts_joint *j = opts_joint_of(r);
    int rc = opts_check_row(o, r, err, errlen);
    if (rc == 0 && j && opts_first_of_text(r)) rc = j->check(o, err, errlen);
    if (rc < 0) return rc;
  }
  int rc = opts_check_recipe(o, err, errlen);
  if (rc == 0) rc = opts_check_epochs(o, err, errlen);
  if (rc < 0) return rc;
  /* Whether a batch fits one frame depends on the dataset's kind: the
   * daemon checks that when it opens the stream (batch_spec_check). */
  return 0;
}

int opts_shuffled(const bfeed_stream_opts *o) {
  return o->shuffle == BFEED_SHUFFLE_ON || (o->shuffle == BFEED_SHUFFLE_AUTO && o->mode == BFEED_MODE_TRAIN);
}

static uint32_t opts_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Whether r has a line in o's fingerprint (opts.def's flags say when). */
static int opts_in_canon(const bfeed_stream_opts *o, const opts_row *r) {
  if (r->flags & OPTS_WAS0) return o->mode == BFEED_MODE_TRAIN && opts_get(o, r) != 0;
  if (r->flags & OPTS_BYTES_SET) return !opts_is_default(o, r);
  return (r->flags & OPTS_BYTES) != 0;
}

size_t opts_canon(const bfeed_stream_opts *o, char *buf, size_t cap) {
  size_t at = 0;
  for (size_t i = 0; i < OPTS_N && at < cap; i++) {
    const opts_row *r = &opts_table[i];
    if (!opts_in_canon(o, r)) continue;
    const opts_joint *j = opts_joint_of(r);
    if (j && !opts_first_of_text(r)) continue; /* the first field says it all */
    opts_appendf(buf, cap, &at, "%s", j ? j->text : r->field);
    if (j) {
      char v[64];
      j->format(o, v, sizeof v);
      opts_appendf(buf, cap, &at, " %s", v);
    } else if (r->type == OPTS_F32S)
      for (int c = 0; c < r->nf && at < cap; c++)
        opts_appendf(buf, cap, &at, " %08x", opts_bits(OPTS_CAT(o, r, float)[c]));
    else if (r->flags & OPTS_RESOLVED)
      opts_appendf(buf, cap, &at, " %d", opts_shuffled(o));
    else if (r->type == OPTS_U32 || r->type == OPTS_U64)
      opts_appendf(buf, cap, &at, " %llu", (unsigned long long)opts_get(o, r));
    else if (r->type == OPTS_FLAG)
      opts_appendf(buf, cap, &at, " %d", opts_get(o, r) != 0);
    else
      opts_appendf(buf, cap, &at, " %d", (int)opts_get(o, r));
    if (at < cap) opts_appendf(buf, cap, &at, "\n");
  }
  return at;
}
