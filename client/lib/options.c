/*
 * options.c -- stream options set by name, as the command line spells them.
 *
 * Bindings (the Python package) and the bfeed command line set options by
 * name through here, so that none of them copies the layout of
 * bfeed_stream_opts or re-implements the checks; a new option is one row in
 * options_table and is reachable everywhere at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

typedef enum { OPT_U32, OPT_U64, OPT_FLAG, OPT_CHOICE, OPT_SHARD, OPT_CODEC, OPT_SELECT } options_kind;

typedef struct options_row {
  const char *name; /* spelled with '-'; '_' is accepted for it */
  options_kind kind;
  size_t offset;    /* of the field in bfeed_stream_opts */
  uint64_t lo, hi;  /* OPT_U32, OPT_U64 */
  const char *const *choices; /* OPT_CHOICE: the enum's values in order, NULL-ended */
} options_row;

static const char *const options_modes[] = {"train", "eval", NULL};
static const char *const options_layouts[] = {"nchw", "nhwc", NULL};
static const char *const options_norms[] = {"imagenet", "none", NULL};
static const char *const options_shuffles[] = {"auto", "on", "off", NULL};
static const char *const options_pools[] = {"none", "mean", NULL};

#define OFF(f) offsetof(bfeed_stream_opts, f)
static const options_row options_table[] = {
    {"batch", OPT_U32, OFF(batch), 1, 65536, NULL},
    {"size", OPT_U32, OFF(size), 8, 4096, NULL},
    {"mode", OPT_CHOICE, OFF(mode), 0, 0, options_modes},
    {"layout", OPT_CHOICE, OFF(layout), 0, 0, options_layouts},
    {"normalize", OPT_CHOICE, OFF(normalize), 0, 0, options_norms},
    {"seed", OPT_U64, OFF(seed), 0, UINT64_MAX, NULL},
    {"epoch", OPT_U64, OFF(epoch), 0, UINT64_MAX, NULL},
    {"start-batch", OPT_U64, OFF(batch_index), 0, UINT64_MAX, NULL},
    {"shard", OPT_SHARD, 0, 0, 0, NULL},
    {"codec", OPT_CODEC, 0, 0, 0, NULL},
    {"window", OPT_U32, OFF(window), 1, 64, NULL},
    {"shuffle", OPT_CHOICE, OFF(shuffle), 0, 0, options_shuffles},
    {"keep-partial", OPT_FLAG, OFF(keep_partial), 0, 0, NULL},
    {"epochs", OPT_U64, OFF(epochs), 0, UINT64_MAX, NULL},
    {"pool", OPT_CHOICE, OFF(pool), 0, 0, options_pools},
    {"max-len", OPT_U32, OFF(max_len), 0, 1u << 20, NULL},
    {"fixed-len", OPT_FLAG, OFF(fixed_len), 0, 0, NULL},
    {"bucket", OPT_U32, OFF(bucket), 0, 65536, NULL},
    {"select", OPT_SELECT, 0, 0, 0, NULL},
};
#undef OFF
_Static_assert(sizeof(bfeed_mode) == sizeof(int) && sizeof(bfeed_pool) == sizeof(int), "enum fields are int-sized");
#define OPTIONS_N (sizeof options_table / sizeof options_table[0])

/* "start_batch" and "start-batch" name the same option. */
static int options_same_name(const char *spelled, const char *name) {
  for (; *spelled && *name; spelled++, name++)
    if (*spelled != *name && !(*spelled == '_' && *name == '-')) return 0;
  return *spelled == *name;
}

static const options_row *options_find(const char *name) {
  for (size_t i = 0; i < OPTIONS_N; i++)
    if (options_same_name(name, options_table[i].name)) return &options_table[i];
  return NULL;
}

static int options_number(const options_row *r, const char *value, uint64_t lo, uint64_t hi, uint64_t *out,
                          bfeed_error *err) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (!*value || *end || errno || value[0] == '-' || v < lo || v > hi)
    return api_err_public(err, BFEED_EINVAL, "%s %s: expected a whole number from %llu to %llu", r->name, value,
                          (unsigned long long)lo, (unsigned long long)hi);
  *out = v;
  return 0;
}

static int options_choice(const options_row *r, const char *value, int *out, bfeed_error *err) {
  char list[96] = "";
  for (int i = 0; r->choices[i]; i++) {
    if (strcmp(value, r->choices[i]) == 0) return *out = i, 0;
    snprintf(list + strlen(list), sizeof list - strlen(list), " %s", r->choices[i]);
  }
  return api_err_public(err, BFEED_EINVAL, "%s %s: expected one of%s", r->name, value, list);
}

/* none, zstd[:L], u8, u8+zstd[:L]. */
static int options_codec(bfeed_stream_opts *o, const char *value, bfeed_error *err) {
  uint64_t level = 3;
  static const options_row zstd = {"codec zstd:", OPT_U32, 0, 1, 19, NULL};
  if (strcmp(value, "auto") == 0) return o->codec = BFEED_CODEC_AUTO, 0;
  if (strcmp(value, "none") == 0) return o->codec = BFEED_CODEC_NONE, 0;
  if (strcmp(value, "u8") == 0) return o->codec = BFEED_CODEC_U8, 0;
  int u8 = strncmp(value, "u8+", 3) == 0;
  const char *z = value + (u8 ? 3 : 0);
  if (strncmp(z, "zstd", 4) != 0 || (z[4] != 0 && z[4] != ':'))
    return api_err_public(err, BFEED_EINVAL,
                          "codec %s: expected auto, none, zstd[:LEVEL], u8 or u8+zstd[:LEVEL] (1..19)", value);
  if (z[4] == ':' && options_number(&zstd, z + 5, 1, 19, &level, err) < 0) return BFEED_EINVAL;
  o->codec = u8 ? BFEED_CODEC_U8_ZSTD : BFEED_CODEC_ZSTD;
  o->codec_level = (int)level;
  return 0;
}

static int options_shard(bfeed_stream_opts *o, const char *value, bfeed_error *err) {
  unsigned idx, count;
  char extra;
  if (sscanf(value, "%u/%u%c", &idx, &count, &extra) != 2 || count < 1 || idx >= count || value[0] == '-')
    return api_err_public(err, BFEED_EINVAL, "shard %s: expected I/N with 0 <= I < N", value);
  o->shard_index = idx;
  o->shard_count = count;
  return 0;
}

/* all, on-demand, residue:R/M (the batches whose global number is R mod M). */
static int options_select(bfeed_stream_opts *o, const char *value, bfeed_error *err) {
  unsigned long long rem, mod;
  char extra;
  if (strcmp(value, "all") == 0) return o->select = BFEED_SELECT_ALL, o->select_mod = 1, o->select_rem = 0, 0;
  if (strcmp(value, "on-demand") == 0) return o->select = BFEED_SELECT_ON_DEMAND, 0;
  if (strncmp(value, "residue:", 8) != 0 || strchr(value, '-') || sscanf(value + 8, "%llu/%llu%c", &rem, &mod, &extra) != 2 ||
      mod < 1 || rem >= mod)
    return api_err_public(err, BFEED_EINVAL, "select %s: expected all, on-demand or residue:R/M with 0 <= R < M",
                          value);
  o->select = BFEED_SELECT_RESIDUE;
  o->select_mod = mod;
  o->select_rem = rem;
  return 0;
}

BFEED_API int bfeed_stream_opts_set(bfeed_stream_opts *o, const char *name, const char *value, bfeed_error *err) {
  const options_row *r = name ? options_find(name) : NULL;
  if (!r) return api_err_public(err, BFEED_EINVAL, "unknown stream option '%s'", name ? name : "(null)");
  char *field = (char *)o + r->offset;
  uint64_t v = 0; /* set by options_number on success; gcc -O3 cannot tell */
  int k = 0;
  if (r->kind == OPT_FLAG) {
    if (!value || strcmp(value, "1") == 0 || strcmp(value, "true") == 0) return *(int *)field = 1, 0;
    if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0) return *(int *)field = 0, 0;
    return api_err_public(err, BFEED_EINVAL, "%s %s: expected 1 or 0 (true or false)", r->name, value);
  }
  if (!value) return api_err_public(err, BFEED_EINVAL, "%s needs a value", r->name);
  switch (r->kind) {
    case OPT_U32:
      if (options_number(r, value, r->lo, r->hi, &v, err) < 0) return BFEED_EINVAL;
      return *(uint32_t *)field = (uint32_t)v, 0;
    case OPT_U64: return options_number(r, value, r->lo, r->hi, (uint64_t *)field, err);
    case OPT_CHOICE:
      if (options_choice(r, value, &k, err) < 0) return BFEED_EINVAL;
      return *(int *)field = k, 0; /* the fields are enums, int-sized */
    case OPT_SHARD: return options_shard(o, value, err);
    case OPT_SELECT: return options_select(o, value, err);
    default: return options_codec(o, value, err);
  }
}

BFEED_API int bfeed_stream_opt_takes_value(const char *name) {
  const options_row *r = name ? options_find(name) : NULL;
  return r ? r->kind != OPT_FLAG : -1;
}

BFEED_API const char *bfeed_stream_opt_name(int i) {
  return i >= 0 && (size_t)i < OPTIONS_N ? options_table[i].name : NULL;
}

BFEED_API size_t bfeed_stream_opts_size(void) { return sizeof(bfeed_stream_opts); }
