/* cli_opts.c -- see cli_opts.h */
#include "cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "opts.h"

/* From the options' table (proto/opts.def), with libbfeed's defaults. */
const char *cli_stream_opts_help(void) {
  static char help[16384]; /* every option of opts.def with its words (test_cli checks none is cut) */
  if (!help[0]) {
    bfeed_stream_opts d;
    bfeed_stream_opts_init(&d);
    size_t n = (size_t)snprintf(help, sizeof help, "stream options:\n");
    n += opts_help(0, &d, help + n, sizeof help - n);
    n += (size_t)snprintf(help + n, sizeof help - n, "text datasets:\n");
    opts_help(1, &d, help + n, sizeof help - n);
  }
  return help;
}

/* Who speaks in messages: "bfeed bench", "bfeed-train", ... */
static const char *cli_prog = "bfeed";

void cli_set_prog(const char *prog) { cli_prog = prog; }

void cli_print_version(void) {
  size_t n = strcspn(cli_prog, " "); /* "bfeed bench" -> "bfeed" */
  printf("%.*s %s (protocol %d)\n", (int)n, cli_prog, BFEED_VERSION_STRING, FRAME_VERSION_MAX);
}

int cli_help_or_version(const char *name, const char *usage, const char *more) {
  if (strcmp(name, "help") == 0) return printf("%s%s", usage, more ? more : ""), 1;
  if (strcmp(name, "version") == 0) return cli_print_version(), 1;
  return 0;
}

const char cli_connect_opts_help[] =
    "connection options:\n"
    "  --token-file FILE       the access token a daemon asks TCP clients for (default:\n"
    "                          the file $BFEED_TOKEN_FILE names, if set)\n"
    "  --no-reconnect          report a lost connection instead of reconnecting\n"
    "  --reconnect-deadline S  seconds to keep reconnecting and resume the stream (60)\n"
    "  --stall-timeout S       several daemons: drop one that sends no batch for S s (10)\n"
    "  --no-shm                on a unix: address, read batches through the socket, not a\n"
    "                          shared-memory ring (also: BFEED_SHM=0)\n";

int cli_connect_opt_takes_value(const char *name) {
  return strcmp(name, "token-file") == 0 || strcmp(name, "reconnect-deadline") == 0 ||
         strcmp(name, "stall-timeout") == 0;
}

int cli_connect_opt(const char *name, const char *value, bfeed_connect_opts *o) {
  if (strcmp(name, "no-reconnect") == 0) return o->reconnect = 0, 1;
  if (strcmp(name, "no-shm") == 0) return o->shm = 0, 1;
  if (strcmp(name, "token-file") == 0) return o->token_file = value, 1;
  int stall = strcmp(name, "stall-timeout") == 0;
  if (!stall && strcmp(name, "reconnect-deadline") != 0) return 0;
  char *end;
  errno = 0;
  double s = strtod(value, &end);
  if (!*value || *end || errno || !(s > 0 && s <= 1e7)) {
    fprintf(stderr, "%s: --%s %s: expected seconds, more than 0 and at most 1e7\n", cli_prog, name, value);
    return -1;
  }
  if (stall) o->stall_timeout = s;
  else o->reconnect_deadline = s;
  return 1;
}

int cli_u64(const char *opt, const char *value, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (!*value || *end || errno || value[0] == '-' || v < lo || v > hi) {
    fprintf(stderr, "%s: --%s %s: expected a whole number from %llu to %llu\n", cli_prog, opt, value,
            (unsigned long long)lo, (unsigned long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_stream_opt_takes_value(const char *name) {
  return bfeed_stream_opt_takes_value(name) == 1 && strcmp(name, "epochs") != 0 && !strchr(name, '_');
}

/* The spelling and the checks live in libbfeed (bfeed_stream_opts_set), so
 * that the command line and the bindings agree. */
int cli_stream_opt(const char *name, const char *value, bfeed_stream_opts *o) {
  bfeed_error err;
  /* bench and bfeed-train count --epochs their own way */
  if (bfeed_stream_opt_takes_value(name) < 0 || strchr(name, '_') || strcmp(name, "epochs") == 0) return 0;
  if (bfeed_stream_opts_set(o, name, value, &err) < 0) return fprintf(stderr, "%s: --%s\n", cli_prog, err.message), -1;
  return 1;
}

int cli_next(cli_args *a, int (*takes_value)(const char *name, void *ctx), void *ctx) {
  if (a->i >= a->argc) return 0;
  const char *arg = a->argv[a->i++];
  if (strncmp(arg, "--", 2) != 0) {
    fprintf(stderr, "%s: unexpected argument '%s' (options start with --)\n", cli_prog, arg);
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
      fprintf(stderr, "%s: --%s needs a value\n", cli_prog, a->name_buf);
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
         cli_connect_opt_takes_value(name) || x->own_takes_value(name);
}

int cli_parse_stream_cmd(int argc, char **argv, cli_stream_cmd *c,
                         int (*own)(const char *name, const char *value, void *ctx),
                         int (*own_takes_value)(const char *name), void *ctx) {
  cmd_ctx x = {own_takes_value};
  cli_args a = {.argc = argc, .argv = argv};
  int r;
  bfeed_stream_opts_init(&c->o);
  bfeed_connect_opts_init(&c->co);
  c->connect = c->dataset = NULL;
  while ((r = cli_next(&a, cmd_takes_value, &x)) == 1) {
    if (cli_help_or_version(a.name, c->usage, cli_stream_opts_help())) return 1;
    int s = cli_stream_opt(a.name, a.value, &c->o);
    if (s == 0) s = cli_connect_opt(a.name, a.value, &c->co);
    if (s < 0) return -1;
    if (s == 1) continue;
    if (strcmp(a.name, "connect") == 0) c->connect = a.value;
    else if (strcmp(a.name, "dataset") == 0) c->dataset = a.value;
    else if ((s = own(a.name, a.value, ctx)) < 0) return -1;
    else if (s == 0) return fprintf(stderr, "bfeed %s: unknown option --%s (see bfeed %s --help)\n", c->cmd, a.name, c->cmd), -1;
  }
  if (r < 0) return -1;
  if (!c->connect || !c->dataset)
    return fprintf(stderr, "bfeed %s: --connect ADDR and --dataset NAME are required\n", c->cmd), -1;
  return 0;
}

int cli_batch_at_takes_value(const char *name) {
  return strcmp(name, "batch-index") == 0 || strcmp(name, "out") == 0;
}

int cli_batch_at_opt(const char *name, const char *value, cli_batch_at *b) {
  if (strcmp(name, "out") == 0) return b->out = value, 1;
  if (strcmp(name, "batch-index") != 0) return 0;
  b->have_index = 1;
  return cli_u64(name, value, 0, UINT64_MAX, &b->index) < 0 ? -1 : 1;
}

int cli_batch_at_fetch(cli_stream_cmd *c, const cli_batch_at *b, bfeed_client **client, bfeed_stream **stream,
                       bfeed_batch **batch, int *usage) {
  *usage = !b->have_index || !b->out;
  if (*usage) return fprintf(stderr, "bfeed %s: --batch-index K and --out are required\n", c->cmd), -1;
  /* Batch K of epoch E is where a stream resumed at (E, K) starts. */
  c->o.batch_index = b->index;
  c->o.window = 1;
  if (cli_open_stream(c, client, stream) < 0) return -1;
  bfeed_error err;
  if (bfeed_stream_next(*stream, batch, &err) == 0) return 0;
  fprintf(stderr, "bfeed %s: %s\n", c->cmd, err.message);
  bfeed_stream_close(*stream);
  bfeed_close(*client);
  return -1;
}

int cli_open_stream(const cli_stream_cmd *c, bfeed_client **client, bfeed_stream **stream) {
  bfeed_error err;
  if (bfeed_connect2(c->connect, &c->co, client, &err) < 0)
    return fprintf(stderr, "bfeed %s: %s\n", c->cmd, err.message), -1;
  int rc, said = 0;
  /* A dataset whose shards are still being indexed answers BFEED_EBUSY:
   * say so once and wait for it. */
  while ((rc = bfeed_stream_open(*client, c->dataset, &c->o, stream, &err)) == BFEED_EBUSY) {
    if (!said++) fprintf(stderr, "bfeed %s: %s: waiting\n", c->cmd, err.message);
    nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  }
  if (rc < 0) {
    fprintf(stderr, "bfeed %s: %s\n", c->cmd, err.message);
    bfeed_close(*client);
    return -1;
  }
  return 0;
}
