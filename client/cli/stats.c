/*
 * stats.c -- `bfeed stats`: what is the daemon doing?
 *
 * Prints the daemon's counters (daemon, per dataset, per open stream) as
 * aligned text, or with --json one JSON object:
 * {"daemon": {...}, "datasets": {"name": {...}}, "streams": {"id": {...}}}.
 */
#include <stdio.h>
#include <string.h>

#include "bfeed.h"
#include "cli.h"
#include "cli_opts.h"

static int stats_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "connect") == 0 || cli_connect_opt_takes_value(name);
}

static void print_json(const bfeed_stat_group *g, size_t n) {
  static const char *const kinds[] = {"daemon", "dataset", "stream"};
  static const char *const keys[] = {"daemon", "datasets", "streams"};
  printf("{");
  for (int k = 0; k < 3; k++) {
    printf("%s\"%s\": {", k ? ", " : "", keys[k]);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(g[i].kind, kinds[k]) != 0) continue;
      if (k > 0) {
        printf("%s", first ? "" : ", ");
        cli_json_str(stdout, g[i].id);
        printf(": {");
      }
      for (size_t c = 0; c < g[i].ncounters; c++) {
        printf("%s", c || (k == 0 && !first) ? ", " : "");
        cli_json_str(stdout, g[i].counters[c].name);
        printf(": %llu", (unsigned long long)g[i].counters[c].value);
      }
      if (k > 0) printf("}");
      first = 0;
    }
    printf("}");
  }
  printf("}\n");
}

static void print_text(const bfeed_stat_group *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    printf("%s %s\n", g[i].kind, g[i].id);
    for (size_t c = 0; c < g[i].ncounters; c++)
      printf("  %-22s %llu\n", g[i].counters[c].name, (unsigned long long)g[i].counters[c].value);
  }
}

static const char stats_usage[] =
    "usage: bfeed stats --connect ADDR [--json]\n"
    "Prints the daemon's counters: the daemon's, each dataset's and each open stream's.\n"
    "  --json                  one JSON object: {\"daemon\": {...}, \"datasets\": {...}, \"streams\": {...}}\n";

int cmd_stats(int argc, char **argv) {
  cli_args a = {.argc = argc, .argv = argv};
  const char *connect = NULL;
  bfeed_connect_opts co;
  int json = 0, r, k;
  bfeed_connect_opts_init(&co);
  while ((r = cli_next(&a, stats_takes_value, NULL)) == 1) {
    if (cli_help_or_version(a.name, stats_usage, NULL)) return 0;
    if ((k = cli_connect_opt(a.name, a.value, &co)) != 0) {
      if (k < 0) return 2;
    } else if (strcmp(a.name, "connect") == 0) connect = a.value;
    else if (strcmp(a.name, "json") == 0) json = 1;
    else return fprintf(stderr, "bfeed stats: unknown option --%s\n%s", a.name, stats_usage), 2;
  }
  if (r < 0) return 2;
  if (!connect) return fprintf(stderr, "bfeed stats: --connect ADDR is required\n"), 2;
  bfeed_client *c;
  bfeed_error err;
  bfeed_stat_group *g;
  size_t n;
  if (bfeed_connect2(connect, &co, &c, &err) < 0) return fprintf(stderr, "bfeed stats: %s\n", err.message), 1;
  int rc = bfeed_daemon_stats(c, &g, &n, &err);
  bfeed_close(c);
  if (rc < 0) return fprintf(stderr, "bfeed stats: %s\n", err.message), 1;
  if (json) print_json(g, n);
  else print_text(g, n);
  bfeed_daemon_stats_free(g, n);
  return 0;
}
