/*
 * cmd_stats.c -- `bfeed stats`: what is the daemon doing?
 *
 * Prints the daemon's counters (daemon, per dataset, per open stream, per
 * job) as aligned text, or with --json one JSON object:
 * {"daemon": {...}, "remote": {...}, "datasets": {"name": {...}}, "streams": {"id": {...}},
 *  "jobs": {"id": {...}}, "verdicts": {"id": "line"}}
 * ("remote": the object-store and HTTP backends' counters, {} until used).
 * A job's streams (those opened with the same `job` option, on any
 * connection: a DataLoader's workers) are folded into its one group, id
 * "JOB:DATASET" (the job in hex), and not shown on their own.
 *
 * Then one verdict per open stream and per job (verdict.h): is it
 * input-bound, and by what ("verdict 1/1:train input-bound 38%:
 * decode-limited, ..."), judged since it began; with --json under
 * "verdicts": {"id": "line"}. bfeed top judges each second instead.
 *
 * With --skipped, the samples each dataset skipped instead (the "skipped"
 * groups of the report: id "DATASET<TAB>NAME<TAB>MESSAGE", counters index
 * and reason), one line each under the dataset's counts by reason; with
 * --json {"skipped": {"DATASET": [{"index", "reason", "name", "message"}]}}.
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
#include "verdict.h"

static int cmd_stats_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "connect") == 0 || cli_connect_opt_takes_value(name);
}

static const bfeed_stat_group *cmd_stats_daemon(const bfeed_stat_group *g, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(g[i].kind, "daemon") == 0) return &g[i];
  return NULL;
}

/* Each stream's and job's verdict: "verdict ID LINE" lines, or a JSON object's members. */
static void cmd_stats_verdicts(const bfeed_stat_group *g, size_t n, int json) {
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    if (!verdict_judged(&g[i])) continue;
    char line[512];
    verdict_judge(&g[i], NULL, cmd_stats_daemon(g, n), NULL, line, sizeof line);
    if (!json) {
      printf("verdict %s %s\n", g[i].id, line);
      continue;
    }
    printf("%s", first ? "" : ", ");
    cli_json_str(stdout, g[i].id);
    printf(": ");
    cli_json_str(stdout, line);
    first = 0;
  }
}

static void cmd_stats_print_json(const bfeed_stat_group *g, size_t n) {
  /* The daemon's and its remote storage's counters are one group each. */
  static const char *const kinds[] = {"daemon", "remote", "dataset", "stream", "job"};
  static const char *const keys[] = {"daemon", "remote", "datasets", "streams", "jobs"};
  printf("{");
  for (int k = 0; k < 5; k++) {
    int flat = k < 2;
    printf("%s\"%s\": {", k ? ", " : "", keys[k]);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(g[i].kind, kinds[k]) != 0 || verdict_folded(&g[i])) continue;
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
  printf(", \"verdicts\": {");
  cmd_stats_verdicts(g, n, 1);
  printf("}}");
}

static void cmd_stats_print_text(const bfeed_stat_group *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(g[i].kind, "skipped") == 0 || verdict_folded(&g[i])) continue; /* --skipped prints them; a job's stream: its job */
    printf("%s %s\n", g[i].kind, g[i].id);
    for (size_t c = 0; c < g[i].ncounters; c++)
      printf("  %-22s %llu\n", g[i].counters[c].name, (unsigned long long)g[i].counters[c].value);
  }
  cmd_stats_verdicts(g, n, 0);
}

static uint64_t cmd_stats_counter(const bfeed_stat_group *g, const char *name) {
  for (size_t c = 0; c < g->ncounters; c++)
    if (strcmp(g->counters[c].name, name) == 0) return g->counters[c].value;
  return 0;
}

/* A skipped group's id, DATASET<TAB>NAME<TAB>MESSAGE, split in place. */
static int cmd_stats_skip_id(char *id, char **name, char **why) {
  if (!(*name = strchr(id, '\t'))) return -1;
  *(*name)++ = 0;
  if ((*why = strchr(*name, '\t'))) *(*why)++ = 0;
  else *why = "";
  return 0;
}

static const char *cmd_stats_reason(uint64_t r) {
  static const char *const names[] = {"corrupt", "too_large", "unreadable"};
  return r < 3 ? names[r] : "unknown";
}

static void cmd_stats_print_skipped(bfeed_stat_group *g, size_t n, int json) {
  printf(json ? "{\"skipped\": {" : "");
  int firstds = 1;
  for (size_t d = 0; d < n; d++) {
    if (strcmp(g[d].kind, "dataset") != 0) continue;
    const char *ds = g[d].id;
    uint64_t c = cmd_stats_counter(&g[d], "skipped_corrupt"), t = cmd_stats_counter(&g[d], "skipped_too_large"),
             u = cmd_stats_counter(&g[d], "skipped_unreadable");
    if (json) printf("%s", firstds ? "" : ", "), cli_json_str(stdout, ds), printf(": [");
    else printf("dataset %s: %llu skipped (corrupt %llu, too_large %llu, unreadable %llu)\n", ds,
                (unsigned long long)(c + t + u), (unsigned long long)c, (unsigned long long)t, (unsigned long long)u);
    firstds = 0;
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      char id[512], *name, *why; /* a report id is at most 255 bytes */
      snprintf(id, sizeof id, "%s", g[i].id);
      if (strcmp(g[i].kind, "skipped") != 0 || cmd_stats_skip_id(id, &name, &why) < 0 || strcmp(id, ds) != 0) continue;
      uint64_t index = cmd_stats_counter(&g[i], "index");
      const char *reason = cmd_stats_reason(cmd_stats_counter(&g[i], "reason"));
      if (!json) {
        printf("  %8llu  %-10s  %s: %s\n", (unsigned long long)index, reason, name, why);
        continue;
      }
      printf("%s{\"index\": %llu, \"reason\": \"%s\", \"name\": ", first ? "" : ", ", (unsigned long long)index,
             reason);
      cli_json_str(stdout, name);
      printf(", \"message\": ");
      cli_json_str(stdout, why);
      printf("}");
      first = 0;
    }
    if (json) printf("]");
  }
  printf(json ? "}}" : "");
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
static int cmd_stats_one(const char *addr, const bfeed_connect_opts *co, int json, int skipped, int first,
                         stats_total *t) {
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
  if (skipped) {
    if (t && !json) printf("== %s\n", addr);
    cmd_stats_print_skipped(g, n, json);
  } else if (json) cmd_stats_print_json(g, n);
  else {
    if (t) printf("== %s\n", addr);
    cmd_stats_print_text(g, n);
  }
  if (t) cmd_stats_add(t, g, n);
  bfeed_daemon_stats_free(g, n);
  return 0;
}

/* Each daemon behind a fan-out address, then the total. */
static int cmd_stats_fanout(bfeed_client *pc, const bfeed_connect_opts *co, int json, int skipped) {
  static stats_total t;
  int bad = 0;
  size_t n = bfeed_client_endpoints(pc);
  if (json) printf("{\"endpoints\": {");
  for (size_t i = 0; i < n; i++) {
    char ep[256];
    if (bfeed_client_endpoint(pc, i, ep, sizeof ep) == 0) bad |= cmd_stats_one(ep, co, json, skipped, i == 0, &t);
  }
  if (skipped) return printf(json ? "}}\n" : ""), bad;
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
    "usage: bfeed stats --connect ADDR[,ADDR...] [--skipped] [--json]\n"
    "Prints the daemon's counters: the daemon's, each dataset's, each open stream's and each\n"
    "job's (the streams opened with the same --job, any connection, any epoch: one group).\n"
    "Several daemons (a list, or a name resolving to several): each under its endpoint,\n"
    "then the total of their daemon counters.\n"
    "  --skipped               the samples each dataset skipped (corrupt, too large, unreadable),\n"
    "                          one per line: index, reason, file, message\n"
    "  --json                  one JSON object: {\"daemon\": {...}, \"remote\": {...}, \"datasets\": {...},\n"
    "                          \"streams\": {...}, \"jobs\": {...}, \"verdicts\": {...}}\n"
    "Each open stream and job ends with its verdict: is it input-bound (the client waits for\n"
    "batches), and by what: the daemon's decode, resize, read or batch stage, its memory\n"
    "budget, the client's decompression, the socket; or the trainer itself.\n";

int cmd_stats(int argc, char **argv) {
  cli_args a = {.argc = argc, .argv = argv};
  const char *connect = NULL;
  bfeed_connect_opts co;
  int json = 0, skipped = 0, r, k;
  bfeed_connect_opts_init(&co);
  while ((r = cli_next(&a, cmd_stats_takes_value, NULL)) == 1) {
    if (cli_help_or_version(a.name, stats_usage, NULL)) return 0;
    if ((k = cli_connect_opt(a.name, a.value, &co)) != 0) {
      if (k < 0) return 2;
    } else if (strcmp(a.name, "connect") == 0) connect = a.value;
    else if (strcmp(a.name, "json") == 0) json = 1;
    else if (strcmp(a.name, "skipped") == 0) skipped = 1;
    else return fprintf(stderr, "bfeed stats: unknown option --%s\n%s", a.name, stats_usage), 2;
  }
  if (r < 0) return 2;
  if (!connect) return fprintf(stderr, "bfeed stats: --connect ADDR is required\n"), 2;
  bfeed_client *c;
  bfeed_error err;
  if (bfeed_connect2(connect, &co, &c, &err) < 0) return fprintf(stderr, "bfeed stats: %s\n", err.message), 1;
  int rc;
  if (bfeed_client_endpoints(c) > 1) {
    rc = cmd_stats_fanout(c, &co, json, skipped);
  } else {
    rc = cmd_stats_one(connect, &co, json, skipped, 1, NULL);
    if (json && rc == 0) printf("\n");
  }
  bfeed_close(c);
  return rc;
}
