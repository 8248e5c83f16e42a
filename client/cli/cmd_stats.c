/*
 * cmd_stats.c -- `bfeed stats`: what is the daemon doing?
 *
 * Prints the daemon's counters (daemon, per dataset, per open stream) as
 * aligned text, or with --json one JSON object:
 * {"daemon": {...}, "remote": {...}, "datasets": {"name": {...}}, "streams": {"id": {...}}}
 * ("remote": the object-store and HTTP backends' counters, {} until used).
 *
 * An address naming several daemons (a list, or a name resolving to
 * several) prints each daemon's report under its endpoint, then the sum of
 * their "daemon" counters; with --json {"endpoints": {"ADDR": {...}, ...},
 * "total": {...}}.
 */
#include <stdio.h>
#include <string.h>

#include "bfeed.h"
#include "cli.h"
#include "cli_opts.h"

static int cmd_stats_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "connect") == 0 || cli_connect_opt_takes_value(name);
}

static void cmd_stats_print_json(const bfeed_stat_group *g, size_t n) {
  /* The daemon's and its remote storage's counters are one group each. */
  static const char *const kinds[] = {"daemon", "remote", "dataset", "stream"};
  static const char *const keys[] = {"daemon", "remote", "datasets", "streams"};
  printf("{");
  for (int k = 0; k < 4; k++) {
    int flat = k < 2;
    printf("%s\"%s\": {", k ? ", " : "", keys[k]);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(g[i].kind, kinds[k]) != 0) continue;
      if (!flat) {
        printf("%s", first ? "" : ", ");
        cli_json_str(stdout, g[i].id);
        printf(": {");
      }
      for (size_t c = 0; c < g[i].ncounters; c++) {
        printf("%s", c || (flat && !first) ? ", " : "");
        cli_json_str(stdout, g[i].counters[c].name);
        printf(": %llu", (unsigned long long)g[i].counters[c].value);
      }
      if (!flat) printf("}");
      first = 0;
    }
    printf("}");
  }
  printf("}");
}

static void cmd_stats_print_text(const bfeed_stat_group *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    printf("%s %s\n", g[i].kind, g[i].id);
    for (size_t c = 0; c < g[i].ncounters; c++)
      printf("  %-22s %llu\n", g[i].counters[c].name, (unsigned long long)g[i].counters[c].value);
  }
}

/* The sum of the daemons' "daemon" counters, by name. */
#define STATS_MAX_TOTAL 256
typedef struct stats_total {
  char name[STATS_MAX_TOTAL][64];
  unsigned long long value[STATS_MAX_TOTAL];
  size_t n;
} stats_total;

static void cmd_stats_add(stats_total *t, const bfeed_stat_group *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(g[i].kind, "daemon") != 0) continue;
    for (size_t c = 0; c < g[i].ncounters; c++) {
      size_t k = 0;
      while (k < t->n && strcmp(t->name[k], g[i].counters[c].name) != 0) k++;
      if (k == t->n && t->n == STATS_MAX_TOTAL) continue;
      if (k == t->n) snprintf(t->name[t->n++], sizeof t->name[0], "%s", g[i].counters[c].name);
      t->value[k] += g[i].counters[c].value;
    }
  }
}

/* One daemon's report: 0, or 1 with the reason on stderr. */
static int cmd_stats_one(const char *addr, const bfeed_connect_opts *co, int json, int first, stats_total *t) {
  bfeed_client *c;
  bfeed_error err;
  bfeed_stat_group *g;
  size_t n;
  int rc = bfeed_connect2(addr, co, &c, &err);
  if (rc == 0) {
    rc = bfeed_daemon_stats(c, &g, &n, &err);
    bfeed_close(c);
  }
  if (rc < 0) return fprintf(stderr, "bfeed stats: %s\n", err.message), 1;
  if (json && t) printf("%s", first ? "" : ", "), cli_json_str(stdout, addr), printf(": ");
  if (json) cmd_stats_print_json(g, n);
  else {
    if (t) printf("== %s\n", addr);
    cmd_stats_print_text(g, n);
  }
  if (t) cmd_stats_add(t, g, n);
  bfeed_daemon_stats_free(g, n);
  return 0;
}

/* Each daemon behind a fan-out address, then the total. */
static int cmd_stats_fanout(bfeed_client *pc, const bfeed_connect_opts *co, int json) {
  static stats_total t;
  int bad = 0;
  size_t n = bfeed_client_endpoints(pc);
  if (json) printf("{\"endpoints\": {");
  for (size_t i = 0; i < n; i++) {
    char ep[256];
    if (bfeed_client_endpoint(pc, i, ep, sizeof ep) == 0) bad |= cmd_stats_one(ep, co, json, i == 0, &t);
  }
  if (json) printf("}, \"total\": {");
  else printf("== total of %zu daemons\ndaemon total\n", n);
  for (size_t k = 0; k < t.n; k++) {
    if (json) printf("%s", k ? ", " : ""), cli_json_str(stdout, t.name[k]), printf(": %llu", t.value[k]);
    else printf("  %-22s %llu\n", t.name[k], t.value[k]);
  }
  if (json) printf("}}\n");
  return bad;
}

static const char stats_usage[] =
    "usage: bfeed stats --connect ADDR[,ADDR...] [--json]\n"
    "Prints the daemon's counters: the daemon's, each dataset's and each open stream's.\n"
    "Several daemons (a list, or a name resolving to several): each under its endpoint,\n"
    "then the total of their daemon counters.\n"
    "  --json                  one JSON object: {\"daemon\": {...}, \"remote\": {...}, \"datasets\": {...},\n"
    "                          \"streams\": {...}}\n";

int cmd_stats(int argc, char **argv) {
  cli_args a = {.argc = argc, .argv = argv};
  const char *connect = NULL;
  bfeed_connect_opts co;
  int json = 0, r, k;
  bfeed_connect_opts_init(&co);
  while ((r = cli_next(&a, cmd_stats_takes_value, NULL)) == 1) {
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
  if (bfeed_connect2(connect, &co, &c, &err) < 0) return fprintf(stderr, "bfeed stats: %s\n", err.message), 1;
  int rc;
  if (bfeed_client_endpoints(c) > 1) {
    rc = cmd_stats_fanout(c, &co, json);
  } else {
    rc = cmd_stats_one(connect, &co, json, 1, NULL);
    if (json && rc == 0) printf("\n");
  }
  bfeed_close(c);
  return rc;
}
