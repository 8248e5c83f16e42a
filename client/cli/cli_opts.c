/* cli_opts.c -- see cli_opts.h */
#include "cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_stream_opts_help[] =
    "stream options:\n"
    "  --batch N               samples per batch (64)\n"
    "  --size S                output height and width (224)\n"
    "  --mode train|eval       random-resized crop + flip, or resize + centre crop (train)\n"
    "  --layout nchw|nhwc      image tensor layout (nchw)\n"
    "  --normalize imagenet|none  ImageNet mean/std, or raw 0..255 (imagenet)\n"
    "  --seed N                random seed (0)\n"
    "  --epoch N               first epoch, to resume (0)\n"
    "  --start-batch N         first batch in that epoch, to resume (0)\n"
    "  --shard I/N             read shard I of N (0/1)\n"
    "  --codec none|zstd[:L]   wire compression, zstd level L 1..19 (none)\n"
    "  --window N              batches in flight ahead of the consumer (4)\n"
    "  --shuffle auto|on|off   epoch order: shuffled in train, dataset order in eval (auto)\n"
    "  --keep-partial          also serve the short last batch of each epoch\n"
    "text datasets:\n"
    "  --pool none|mean        tokens [B,T,D], or their mean per sample: pooled [B,D] (none)\n"
    "  --max-len N             tokens served per sample, 0 = the dataset's max_len (0)\n"
    "  --fixed-len             pad every batch to T = max-len, not to its longest sample\n"
    "  --bucket N              length bucketing over runs of N batches, 0 = off (0)\n";

int cli_u64(const char *opt, const char *value, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (!*value || *end || errno || value[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "bfeed: --%s %s: expected a whole number from %llu to %llu\n", opt, value,
            (unsigned long long)lo, (unsigned long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

static const char *const valued[] = {"batch",  "size",    "mode",   "layout", "normalize", "seed",
                                     "epoch",  "start-batch", "shard", "codec", "window", "shuffle",
                                     "pool",   "max-len", "bucket", NULL};

int cli_stream_opt_takes_value(const char *name) {
  for (int i = 0; valued[i]; i++)
    if (strcmp(name, valued[i]) == 0) return 1;
  return 0;
}

static int choice(const char *opt, const char *value, const char *const *names, int *out) {
  for (int i = 0; names[i]; i++)
    if (strcmp(value, names[i]) == 0) return *out = i, 1;
  fprintf(stderr, "bfeed: --%s %s: expected one of", opt, value);
  for (int i = 0; names[i]; i++) fprintf(stderr, " %s", names[i]);
  fprintf(stderr, "\n");
  return -1;
}

int cli_stream_opt(const char *name, const char *value, bfeed_stream_opts *o) {
  static const char *const modes[] = {"train", "eval", NULL}, *const layouts[] = {"nchw", "nhwc", NULL},
                           *const norms[] = {"imagenet", "none", NULL},
                           *const shuffles[] = {"auto", "on", "off", NULL}, *const pools[] = {"none", "mean", NULL};
  uint64_t v;
  int k;
  if (strcmp(name, "keep-partial") == 0) return o->keep_partial = 1, 1;
  if (strcmp(name, "fixed-len") == 0) return o->fixed_len = 1, 1;
  if (!cli_stream_opt_takes_value(name)) return 0;
  if (strcmp(name, "batch") == 0) return cli_u64(name, value, 1, 65536, &v) < 0 ? -1 : (o->batch = (uint32_t)v, 1);
  if (strcmp(name, "size") == 0) return cli_u64(name, value, 8, 4096, &v) < 0 ? -1 : (o->size = (uint32_t)v, 1);
  if (strcmp(name, "window") == 0) return cli_u64(name, value, 1, 64, &v) < 0 ? -1 : (o->window = (uint32_t)v, 1);
  if (strcmp(name, "seed") == 0) return cli_u64(name, value, 0, UINT64_MAX, &o->seed) < 0 ? -1 : 1;
  if (strcmp(name, "epoch") == 0) return cli_u64(name, value, 0, UINT64_MAX, &o->epoch) < 0 ? -1 : 1;
  if (strcmp(name, "start-batch") == 0) return cli_u64(name, value, 0, UINT64_MAX, &o->batch_index) < 0 ? -1 : 1;
  if (strcmp(name, "mode") == 0) return choice(name, value, modes, &k) < 0 ? -1 : (o->mode = (bfeed_mode)k, 1);
  if (strcmp(name, "layout") == 0) return choice(name, value, layouts, &k) < 0 ? -1 : (o->layout = (bfeed_layout)k, 1);
  if (strcmp(name, "normalize") == 0)
    return choice(name, value, norms, &k) < 0 ? -1 : (o->normalize = (bfeed_norm)k, 1);
  if (strcmp(name, "shuffle") == 0)
    return choice(name, value, shuffles, &k) < 0 ? -1 : (o->shuffle = (bfeed_shuffle)k, 1);
  if (strcmp(name, "pool") == 0) return choice(name, value, pools, &k) < 0 ? -1 : (o->pool = (bfeed_pool)k, 1);
  if (strcmp(name, "max-len") == 0)
    return cli_u64(name, value, 0, 1u << 20, &v) < 0 ? -1 : (o->max_len = (uint32_t)v, 1);
  if (strcmp(name, "bucket") == 0) return cli_u64(name, value, 0, 65536, &v) < 0 ? -1 : (o->bucket = (uint32_t)v, 1);
  if (strcmp(name, "shard") == 0) {
    unsigned idx, count;
    char extra;
    if (sscanf(value, "%u/%u%c", &idx, &count, &extra) != 2 || count < 1 || idx >= count) {
      fprintf(stderr, "bfeed: --shard %s: expected I/N with 0 <= I < N\n", value);
      return -1;
    }
    o->shard_index = idx;
    o->shard_count = count;
    return 1;
  }
  /* codec */
  if (strcmp(value, "none") == 0) return o->codec = BFEED_CODEC_NONE, 1;
  if (strncmp(value, "zstd", 4) == 0 && (value[4] == 0 || value[4] == ':')) {
    o->codec = BFEED_CODEC_ZSTD;
    o->codec_level = 3;
    if (value[4] == ':' && cli_u64("codec zstd:", value + 5, 1, 19, &v) < 0) return -1;
    if (value[4] == ':') o->codec_level = (int)v;
    return 1;
  }
  fprintf(stderr, "bfeed: --codec %s: expected none, zstd or zstd:LEVEL (1..19)\n", value);
  return -1;
}

int cli_next(cli_args *a, int (*takes_value)(const char *name, void *ctx), void *ctx) {
  if (a->i >= a->argc) return 0;
  const char *arg = a->argv[a->i++];
  if (strncmp(arg, "--", 2) != 0) {
    fprintf(stderr, "bfeed: unexpected argument '%s' (options start with --)\n", arg);
    return -1;
  }
  const char *eq = strchr(arg + 2, '=');
  size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
  if (n >= sizeof a->name_buf) n = sizeof a->name_buf - 1;
  memcpy(a->name_buf, arg + 2, n);
  a->name_buf[n] = 0;
  a->name = a->name_buf;
  a->value = eq ? eq + 1 : NULL;
  if (!eq && takes_value(a->name_buf, ctx)) {
    if (a->i >= a->argc) {
      fprintf(stderr, "bfeed: --%s needs a value\n", a->name_buf);
      return -1;
    }
    a->value = a->argv[a->i++];
  }
  return 1;
}

void cli_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

typedef struct cmd_ctx {
  int (*own_takes_value)(const char *name);
} cmd_ctx;

static int cmd_takes_value(const char *name, void *ctx) {
  cmd_ctx *x = ctx;
  return strcmp(name, "connect") == 0 || strcmp(name, "dataset") == 0 || cli_stream_opt_takes_value(name) ||
         x->own_takes_value(name);
}

int cli_parse_stream_cmd(int argc, char **argv, cli_stream_cmd *c,
                         int (*own)(const char *name, const char *value, void *ctx),
                         int (*own_takes_value)(const char *name), void *ctx) {
  cmd_ctx x = {own_takes_value};
  cli_args a = {.argc = argc, .argv = argv};
  int r;
  bfeed_stream_opts_init(&c->o);
  c->connect = c->dataset = NULL;
  while ((r = cli_next(&a, cmd_takes_value, &x)) == 1) {
    int s = cli_stream_opt(a.name, a.value, &c->o);
    if (s < 0) return -1;
    if (s == 1) continue;
    if (strcmp(a.name, "connect") == 0) c->connect = a.value;
    else if (strcmp(a.name, "dataset") == 0) c->dataset = a.value;
    else if ((s = own(a.name, a.value, ctx)) < 0) return -1;
    else if (s == 0) return fprintf(stderr, "bfeed %s: unknown option --%s (see bfeed --help)\n", c->cmd, a.name), -1;
  }
  if (r < 0) return -1;
  if (!c->connect || !c->dataset)
    return fprintf(stderr, "bfeed %s: --connect ADDR and --dataset NAME are required\n", c->cmd), -1;
  return 0;
}

int cli_open_stream(const cli_stream_cmd *c, bfeed_client **client, bfeed_stream **stream) {
  bfeed_error err;
  if (bfeed_connect(c->connect, client, &err) < 0) return fprintf(stderr, "bfeed %s: %s\n", c->cmd, err.message), -1;
  if (bfeed_stream_open(*client, c->dataset, &c->o, stream, &err) < 0) {
    fprintf(stderr, "bfeed %s: %s\n", c->cmd, err.message);
    bfeed_close(*client);
    return -1;
  }
  return 0;
}
