/*
 * bfeed -- command line for bfeedd: bench, fetch, make-demo.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "bfeed.h"
#include "cli_opts.h"
#include "make_demo.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: bfeed COMMAND [options]\n"
          "commands:\n"
          "  bench      --connect ADDR --dataset NAME [stream options] [--batches N | --epochs E]\n"
          "             [--warmup N] [--json]   measure throughput and batch latency\n"
          "  fetch      --connect ADDR --dataset NAME [stream options] --batch-index K --out DIR\n"
          "             write one batch's tensors as .npy files and meta.json\n"
          "  stats      --connect ADDR [--json]   the daemon's counters: daemon, datasets, streams\n"
          "  make-demo  DIR [--train N] [--val N] [--seed N] [--force]\n"
          "             write a small learnable ImageFolder dataset to DIR/train and DIR/val\n"
          "  version\n"
          "ADDR is unix:PATH or HOST:PORT.\n\n%s",
          cli_stream_opts_help);
}

static int demo_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "train") == 0 || strcmp(name, "val") == 0 || strcmp(name, "seed") == 0;
}

static int cmd_make_demo(int argc, char **argv) {
  if (argc < 1 || strncmp(argv[0], "--", 2) == 0) {
    fprintf(stderr, "usage: bfeed make-demo DIR [--train N] [--val N] [--seed N] [--force]\n");
    return 2;
  }
  const char *dir = argv[0];
  make_demo_opts o;
  make_demo_opts_init(&o);
  cli_args a = {.argc = argc, .argv = argv, .i = 1};
  int r;
  uint64_t v;
  while ((r = cli_next(&a, demo_takes_value, NULL)) == 1) {
    if (strcmp(a.name, "force") == 0) o.overwrite = 1;
    else if (strcmp(a.name, "train") == 0 && cli_u64(a.name, a.value, 1, 100000, &v) == 0) o.train_per_class = (int)v;
    else if (strcmp(a.name, "val") == 0 && cli_u64(a.name, a.value, 1, 100000, &v) == 0) o.val_per_class = (int)v;
    else if (strcmp(a.name, "seed") == 0 && cli_u64(a.name, a.value, 0, UINT64_MAX, &v) == 0) o.seed = v;
    else if (!demo_takes_value(a.name, NULL)) return fprintf(stderr, "bfeed make-demo: unknown option --%s\n", a.name), 2;
    else return 2;
  }
  if (r < 0) return 2;
  char err[512];
  make_demo_stats st;
  if (make_demo(dir, &o, &st, err, sizeof err) < 0) {
    fprintf(stderr, "bfeed make-demo: %s\n", err);
    return 1;
  }
  printf("wrote %d JPEGs (%.1f MB) in %d classes to %s/train and %s/val\n", st.files, st.bytes / 1e6,
         MAKE_DEMO_NCLASSES, dir, dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr), 2;
  const char *cmd = argv[1];
  if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 2, argv + 2);
  if (strcmp(cmd, "fetch") == 0) return cmd_fetch(argc - 2, argv + 2);
  if (strcmp(cmd, "stats") == 0) return cmd_stats(argc - 2, argv + 2);
  if (strcmp(cmd, "make-demo") == 0) return cmd_make_demo(argc - 2, argv + 2);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0)
    return printf("bfeed %d.%d.%d (protocol 1)\n", BFEED_VERSION_MAJOR, BFEED_VERSION_MINOR, BFEED_VERSION_PATCH), 0;
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) return usage(stdout), 0;
  fprintf(stderr, "bfeed: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
