/*
 * cmd_fetch.c -- `bfeed fetch`: one batch to .npy files, for inspection and for
 * checking bfeed against other pipelines (numpy.load reads them).
 *
 * DIR/<tensor>.npy for each tensor (bf16 as '<u2' bit patterns: view them
 * as float with (x.astype('<u4') << 16).view('<f4')), and DIR/meta.json.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bfeed.h"
#include "cli.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "npy.h"

typedef struct fetch_args {
  cli_stream_cmd c;
  cli_batch_at at;
} fetch_args;

static int cmd_fetch_opt(const char *name, const char *value, void *ctx) {
  return cli_batch_at_opt(name, value, &((fetch_args *)ctx)->at);
}

static int cmd_fetch_write_meta(const char *dir, const fetch_args *f, const bfeed_batch *b, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/meta.json", dir);
  FILE *m = fopen(path, "w");
  if (!m) return snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno)), -1;
  const bfeed_stream_opts *o = &f->c.o;
  fprintf(m, "{\n  \"dataset\": ");
  cli_json_str(m, f->c.dataset);
  fprintf(m,
          ",\n  \"epoch\": %llu,\n  \"batch_index\": %llu,\n  \"mode\": \"%s\",\n  \"size\": %u,\n  \"width\": %u,\n"
          "  \"layout\": \"%s\",\n  \"normalize\": \"%s\",\n  \"seed\": %llu,\n  \"shard\": [%u, %u],\n"
          "  \"tensors\": [\n",
          (unsigned long long)bfeed_batch_epoch(b), (unsigned long long)bfeed_batch_index(b),
          o->mode == BFEED_MODE_EVAL ? "eval" : "train", o->size, o->width ? o->width : o->size, o->layout == BFEED_LAYOUT_NHWC ? "NHWC" : "NCHW",
          o->normalize == BFEED_NORM_NONE ? "none" : "imagenet", (unsigned long long)o->seed, o->shard_index,
          o->shard_count);
  for (int i = 0; i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    bfeed_batch_tensor(b, i, &t);
    fprintf(m, "    {\"name\": ");
    cli_json_str(m, t.name);
    fprintf(m, ", \"dtype\": \"%s\", \"npy_dtype\": \"%s\", \"shape\": [", t.dtype == BFEED_DTYPE_BF16 ? "bfloat16" : bfeed_dtype_name(t.dtype),
            npy_descr(t.dtype));
    for (int d = 0; d < t.ndim; d++) fprintf(m, "%s%lld", d ? ", " : "", (long long)t.shape[d]);
    fprintf(m, "], \"file\": \"%s.npy\"}%s\n", t.name, i + 1 < bfeed_batch_ntensors(b) ? "," : "");
  }
  fprintf(m, "  ]\n}\n");
  if (fclose(m) != 0) return snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno)), -1;
  return 0;
}

static const char fetch_usage[] =
    "usage: bfeed fetch --connect ADDR --dataset NAME [stream options] --batch-index K --out DIR\n"
    "Writes batch K (of --epoch E) as DIR/<tensor>.npy files and DIR/meta.json; bf16 tensors\n"
    "are '<u2' bit patterns (see the README to view them as float32 or torch.bfloat16).\n"
    "  --batch-index K         the batch to fetch\n"
    "  --out DIR               where to write (created if missing)\n\n";

int cmd_fetch(int argc, char **argv) {
  fetch_args f;
  memset(&f, 0, sizeof f);
  f.c.cmd = "fetch";
  f.c.usage = fetch_usage;
  int pr = cli_parse_stream_cmd(argc, argv, &f.c, cmd_fetch_opt, cli_batch_at_takes_value, &f);
  if (pr != 0) return pr > 0 ? 0 : 2;
  char why[512];
  if (f.at.out && cli_mkdirs(f.at.out, why, sizeof why) < 0) return fprintf(stderr, "bfeed fetch: %s\n", why), 1;
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_batch *b;
  int usage, rc = 0;
  if (cli_batch_at_fetch(&f.c, &f.at, &c, &s, &b, &usage) < 0) return usage ? 2 : 1;
  char msg[512];
  for (int i = 0; rc == 0 && i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    char path[4096];
    bfeed_batch_tensor(b, i, &t);
    if (strspn(t.name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(t.name)) {
      snprintf(msg, sizeof msg, "tensor name '%s' is not a safe file name", t.name);
      rc = -1;
      break;
    }
    snprintf(path, sizeof path, "%s/%s.npy", f.at.out, t.name);
    rc = npy_write(path, t.dtype, t.ndim, t.shape, t.data, msg, sizeof msg);
  }
  if (rc == 0) rc = cmd_fetch_write_meta(f.at.out, &f, b, msg, sizeof msg);
  if (rc < 0) fprintf(stderr, "bfeed fetch: %s\n", msg);
  else printf("wrote batch %llu of epoch %llu (%d tensors) to %s\n", (unsigned long long)bfeed_batch_index(b),
              (unsigned long long)bfeed_batch_epoch(b), bfeed_batch_ntensors(b), f.at.out);
  bfeed_batch_release(b);
  bfeed_stream_close(s);
  bfeed_close(c);
  return rc < 0 ? 1 : 0;
}
