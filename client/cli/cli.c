/*
 * bfeed -- command line for bfeedd: bench, fetch, make-demo; `bfeed pack`
 * runs bfeed-pack (tools/pack), which links the daemon's code, git-style.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
          "  preview    --connect ADDR --dataset NAME [stream options] --batch-index K --out FILE.png\n"
          "             [--columns N]   one batch as a contact sheet, with what each sample drew\n"
          "  stats      --connect ADDR [--skipped] [--json]   the daemon's counters: daemon, datasets,\n"
          "             streams, and each stream's verdict: is its job input-bound, and by what\n"
          "  top        --connect ADDR[,ADDR...] [--interval S] [--count N]   a live view of daemons,\n"
          "             datasets and streams: samples/s, stall, the verdict, memory\n"
          "  make-demo  DIR [--format folder|tfrecord|tar] [--train N] [--val N] [--seed N] [--force]\n"
          "             write a small learnable image dataset: an ImageFolder in DIR/train and\n"
          "             DIR/val, TFRecord shards DIR/train-*, DIR/validation-*, or tar shards\n"
          "             DIR/train-*.tar, DIR/val-*.tar\n"
          "  make-demo  DIR --text VECTORS [--classes N] [--train N] [--val N] [--seed N] [--force]\n"
          "             write a labelled text dataset (fastText lines) with words from VECTORS\n"
          "             to DIR/train.txt and DIR/val.txt\n"
          "  pack       SOURCE OUT [--images original|jpeg|raw] [--max-side N] [--short-side N] [--quality Q] [--jobs N]\n"
          "             write SOURCE (any --dataset of bfeedd) as a prepared dataset, served as pack:OUT\n"
          "             (runs bfeed-pack, beside bfeed or on PATH)\n"
          "  version    print the version (also --version, on every command)\n"
          "ADDR is unix:PATH or HOST:PORT, or several comma-separated (or a name resolving to\n"
          "several): one stream then fans out over those daemons. Each command takes --help.\n\n%s%s",
          cli_connect_opts_help, cli_stream_opts_help());
}

static int demo_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "train") == 0 || strcmp(name, "val") == 0 || strcmp(name, "seed") == 0 ||
         strcmp(name, "text") == 0 || strcmp(name, "classes") == 0 || strcmp(name, "format") == 0;
}

static const char demo_usage[] =
    "usage: bfeed make-demo DIR [--format folder|tfrecord|tar] [--train N] [--val N] [--seed N] [--force]\n"
    "       bfeed make-demo DIR --text VECTORS [--classes N] [--train N] [--val N] [--seed N] [--force]\n"
    "Writes a small learnable dataset: JPEGs in 8 classes to DIR/train and DIR/val (or as\n"
    "TFRecord or tar shards), or with --text, fastText lines made of VECTORS' words to\n"
    "DIR/train.txt and DIR/val.txt.\n"
    "  --format F              images as an ImageFolder (folder), TFRecord or tar shards (folder)\n"
    "  --train N, --val N      samples per class in each split\n"
    "  --seed N                what to draw (1); the same seed writes the same bytes\n"
    "  --classes N             text: classes, 2..%d\n"
    "  --force                 write into DIR even if it is not empty\n";

/* --train and --val over the defaults of either kind of demo (0: not given). */
static void demo_counts(uint64_t train, uint64_t val, int *train_per_class, int *val_per_class) {
  if (train) *train_per_class = (int)train;
  if (val) *val_per_class = (int)val;
}

static int cmd_make_demo(int argc, char **argv) {
  if (argc >= 1 && strncmp(argv[0], "--", 2) == 0) {
    const char *name = argv[0] + 2;
    if (strcmp(name, "help") == 0) return printf(demo_usage, MAKE_DEMO_TEXT_MAX_CLASSES), 0;
    if (strcmp(name, "version") == 0) return cli_print_version(), 0;
  }
  if (argc < 1 || strncmp(argv[0], "--", 2) == 0)
    return fprintf(stderr, demo_usage, MAKE_DEMO_TEXT_MAX_CLASSES), 2;
  const char *dir = argv[0], *vectors = NULL;
  uint64_t train = 0, val = 0, seed = 1, classes = 0;
  int force = 0, have_val = 0, format = -1;
  cli_args a = {.argc = argc, .argv = argv, .i = 1};
  int r;
  while ((r = cli_next(&a, demo_takes_value, NULL)) == 1) {
    int bad = 0;
    if (strcmp(a.name, "help") == 0) return printf(demo_usage, MAKE_DEMO_TEXT_MAX_CLASSES), 0;
    if (strcmp(a.name, "version") == 0) return cli_print_version(), 0;
    if (strcmp(a.name, "force") == 0) force = 1;
    else if (strcmp(a.name, "text") == 0) vectors = a.value;
    else if (strcmp(a.name, "format") == 0) {
      static const char *const formats[] = {"folder", "tfrecord", "tar"};
      for (int f = 0; f < 3; f++)
        if (strcmp(a.value, formats[f]) == 0) format = f;
      if (format < 0) return fprintf(stderr, "bfeed make-demo: --format %s: expected folder, tfrecord or tar\n", a.value), 2;
    }
    else if (strcmp(a.name, "train") == 0) bad = cli_u64(a.name, a.value, 1, 100000, &train);
    else if (strcmp(a.name, "val") == 0) bad = cli_u64(a.name, a.value, 1, 100000, &val), have_val = 1;
    else if (strcmp(a.name, "seed") == 0) bad = cli_u64(a.name, a.value, 0, UINT64_MAX, &seed);
    else if (strcmp(a.name, "classes") == 0) bad = cli_u64(a.name, a.value, 2, MAKE_DEMO_TEXT_MAX_CLASSES, &classes);
    else {
      fprintf(stderr, "bfeed make-demo: unknown option --%s\n", a.name);
      return fprintf(stderr, demo_usage, MAKE_DEMO_TEXT_MAX_CLASSES), 2;
    }
    if (bad) return 2;
  }
  if (r < 0) return 2;
  if (classes && !vectors) return fprintf(stderr, "bfeed make-demo: --classes applies to --text\n"), 2;
  if (format >= 0 && vectors) return fprintf(stderr, "bfeed make-demo: --format applies to images, not --text\n"), 2;
  char err[768];
  make_demo_stats st;
  if (vectors) {
    make_demo_text_opts o;
    make_demo_text_opts_init(&o);
    demo_counts(train, have_val ? val : 0, &o.train_per_class, &o.val_per_class);
    o.overwrite = force, o.seed = seed;
    if (classes) o.nclasses = (int)classes;
    if (make_demo_text(dir, vectors, &o, &st, err, sizeof err) < 0) return fprintf(stderr, "bfeed make-demo: %s\n", err), 1;
    printf("wrote %d lines per class in %d classes (%.1f KB) to %s/train.txt and %d per class to %s/val.txt\n",
           o.train_per_class, o.nclasses, st.bytes / 1e3, dir, o.val_per_class, dir);
    return 0;
  }
  make_demo_opts o;
  make_demo_opts_init(&o);
  demo_counts(train, have_val ? val : 0, &o.train_per_class, &o.val_per_class);
  o.overwrite = force, o.seed = seed;
  if (format > 0) o.format = (make_demo_format)format;
  if (make_demo(dir, &o, &st, err, sizeof err) < 0) {
    fprintf(stderr, "bfeed make-demo: %s\n", err);
    return 1;
  }
  static const char *const where[] = {"%s/train and %s/val", "TFRecord shards %s/train-* and %s/validation-*",
                                      "tar shards %s/train-*.tar and %s/val-*.tar"};
  char to[2 * PATH_MAX + 64];
  snprintf(to, sizeof to, where[o.format], dir, dir);
  printf("wrote %d JPEGs (%.1f MB) in %d classes to %s\n", st.files, st.bytes / 1e6, MAKE_DEMO_NCLASSES, to);
  return 0;
}

static const char version_usage[] = "usage: bfeed version\nPrints the version of bfeed and of its protocol.\n";

static int cmd_version(int argc, char **argv) {
  if (argc > 0 && strcmp(argv[0], "--help") == 0) return fputs(version_usage, stdout), 0;
  if (argc > 0 && strcmp(argv[0], "--version") != 0)
    return fprintf(stderr, "bfeed version: unexpected argument '%s'\n%s", argv[0], version_usage), 2;
  return cli_print_version(), 0;
}

/* bfeed-pack from the folder this binary is in (a build's bin/, an
 * install's bindir), else from PATH. Returns only when neither runs. */
static int cmd_pack(int argc, char **argv) {
  char self[PATH_MAX], beside[PATH_MAX + 16];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char **args = calloc((size_t)argc + 2, sizeof *args);
  if (!args) return fprintf(stderr, "bfeed pack: out of memory\n"), 1;
  args[0] = "bfeed-pack";
  for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = 0;
      snprintf(beside, sizeof beside, "%s/bfeed-pack", self);
      execv(beside, args);
    }
  }
  execvp("bfeed-pack", args);
  fprintf(stderr, "bfeed pack: cannot run bfeed-pack (beside %s or on PATH): %s\n", n > 0 ? self : "bfeed",
          strerror(errno));
  free(args);
  return 127;
}

static const struct {
  const char *name, *prog; /* prog: how its messages start */
  int (*run)(int argc, char **argv);
} commands[] = {{"bench", "bfeed bench", cmd_bench},         {"fetch", "bfeed fetch", cmd_fetch},
                {"preview", "bfeed preview", cmd_preview},
                {"stats", "bfeed stats", cmd_stats},         {"top", "bfeed top", cmd_top},
                {"make-demo", "bfeed make-demo", cmd_make_demo},
                {"pack", "bfeed pack", cmd_pack},            {"version", "bfeed version", cmd_version},   {"--version", "bfeed", cmd_version}};

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr), 2;
  const char *cmd = argv[1];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) {
      cli_set_prog(commands[i].prog);
      return commands[i].run(argc - 2, argv + 2);
    }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) return usage(stdout), 0;
  fprintf(stderr, "bfeed: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
