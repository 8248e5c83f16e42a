/*
 * cli_opts.h -- the options every bfeed subcommand shares.
 *
 * Stream options are spelled the same for bench, fetch and (later) any
 * other command: --batch N --size S --mode train|eval --layout nchw|nhwc
 * --normalize imagenet|none --seed N ... as proto/opts.def names them (set
 * through bfeed_stream_opts_set, so the command line and the bindings agree).
 * Connection options likewise: --token-file FILE --no-reconnect
 * --reconnect-deadline S. Both "--name value" and "--name=value" are accepted.
 */
#ifndef BFEED_CLI_OPTS_H
#define BFEED_CLI_OPTS_H

#include "bfeed.h"

typedef struct cli_args {
  int argc;
  char **argv;
  int i;             /* next argument to look at */
  const char *name;  /* the option being parsed, without "--" and "=..." */
  const char *value; /* its value, if it takes one */
  char name_buf[64];
} cli_args;

/* Split argv[i] into name/value, taking the next argument as the value
 * when the option takes one; returns 0 at the end of argv, 1 for an
 * option, -1 (message printed) for a missing value or stray argument. */
int cli_next(cli_args *a, int (*takes_value)(const char *name, void *ctx), void *ctx);

/* 1 if name is a stream option (and sets it), 0 if not, -1 on a bad value
 * (message printed, naming the option). */
int cli_stream_opt(const char *name, const char *value, bfeed_stream_opts *o);
/* Whether a stream option takes a value. */
int cli_stream_opt_takes_value(const char *name);
/* The --help text for the stream options (made once, from their table). */
const char *cli_stream_opts_help(void);

/* The name messages start with ("bfeed bench", "bfeed-train"; default
 * "bfeed"); prog must outlive the parsing. */
void cli_set_prog(const char *prog);
/* "bfeed VERSION (protocol N)" on stdout, with the program's first word. */
void cli_print_version(void);
/* For --help (usage, then more if not NULL) and --version: print to stdout
 * and return 1; 0 for any other option name. */
int cli_help_or_version(const char *name, const char *usage, const char *more);
/* Connection options, the same for every command that connects:
 * --token-file FILE, --no-reconnect, --reconnect-deadline S. 1 if name is
 * one (and sets it in o), 0 if not, -1 on a bad value (message printed). */
int cli_connect_opt(const char *name, const char *value, bfeed_connect_opts *o);
int cli_connect_opt_takes_value(const char *name);
extern const char cli_connect_opts_help[];

/* Parse a whole number in [lo, hi]; -1 (message printed) if it is not one. */
int cli_u64(const char *opt, const char *value, uint64_t lo, uint64_t hi, uint64_t *out);

/* A command that reads a stream: --connect, the connection options,
 * --dataset, the stream options, and options of its own, handled by `own`
 * (return 1 handled, 0 unknown, -1 bad value, message printed) and
 * announced by `own_takes_value`. */
typedef struct cli_stream_cmd {
  const char *cmd;   /* for messages: "bench" */
  const char *usage; /* for --help, before the stream options */
  const char *connect, *dataset;
  bfeed_connect_opts co;
  bfeed_stream_opts o;
} cli_stream_cmd;
/* 0 parsed, 1 --help or --version printed (exit 0), -1 error printed. */
int cli_parse_stream_cmd(int argc, char **argv, cli_stream_cmd *c,
                         int (*own)(const char *name, const char *value, void *ctx),
                         int (*own_takes_value)(const char *name), void *ctx);
/* Connect and open; prints the reason and returns -1 on failure. */
int cli_open_stream(const cli_stream_cmd *c, bfeed_client **client, bfeed_stream **stream);

/* One batch of a stream, as fetch and preview take it: --batch-index K
 * (of --epoch E) and --out PATH, both required. */
typedef struct cli_batch_at {
  uint64_t index;
  int have_index;
  const char *out;
} cli_batch_at;
/* For cli_parse_stream_cmd's own options: whether name takes a value, and
 * name's value into b (1 taken, 0 not b's, -1 bad value printed). */
int cli_batch_at_takes_value(const char *name);
int cli_batch_at_opt(const char *name, const char *value, cli_batch_at *b);
/* Open the stream c describes at batch b->index (window 1) and take that
 * batch: 0 with *client, *stream and *batch for the caller to release and
 * close; -1 with the reason printed (a usage error when --batch-index or
 * --out is missing: *usage set). */
int cli_batch_at_fetch(cli_stream_cmd *c, const cli_batch_at *b, bfeed_client **client, bfeed_stream **stream,
                       bfeed_batch **batch, int *usage);

#include <stdio.h>
/* Write s as a JSON string literal (quoted, escaped). */
void cli_json_str(FILE *f, const char *s);

#endif
