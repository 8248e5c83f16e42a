/*
 * stream_hash -- a scriptable client for service tests: opens a stream and
 * prints one line per batch, "EPOCH INDEX XXH64-of-all-tensors", then reads
 * commands on stdin: "next N" takes N more batches, "stats" prints the
 * stream's counters, "quit" closes. The first batches come with
 * --first N (default 0).
 *
 *   stream_hash ADDR DATASET [--batch N] [--size S] [--window W] [--seed S]
 *               [--mode train|eval] [--first N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfeed.h"

static int take(bfeed_stream *s, long n) {
  for (long i = 0; i < n; i++) {
    bfeed_batch *b;
    bfeed_error err;
    if (bfeed_stream_next(s, &b, &err) < 0) {
      printf("error %d %s\n", err.code, err.message);
      fflush(stdout);
      return -1;
    }
    XXH64_state_t *h = XXH64_createState();
    XXH64_reset(h, 0);
    for (int t = 0; t < bfeed_batch_ntensors(b); t++) {
      bfeed_tensor v;
      bfeed_batch_tensor(b, t, &v);
      XXH64_update(h, v.data, v.nbytes);
    }
    printf("%llu %llu %016llx\n", (unsigned long long)bfeed_batch_epoch(b), (unsigned long long)bfeed_batch_index(b),
           (unsigned long long)XXH64_digest(h));
    fflush(stdout);
    XXH64_freeState(h);
    bfeed_batch_release(b);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: stream_hash ADDR DATASET [options]\n"), 2;
  bfeed_stream_opts o;
  bfeed_stream_opts_init(&o);
  long first = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--batch")) o.batch = (uint32_t)atoi(v);
    else if (!strcmp(k, "--size")) o.size = (uint32_t)atoi(v);
    else if (!strcmp(k, "--window")) o.window = (uint32_t)atoi(v);
    else if (!strcmp(k, "--seed")) o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--mode")) o.mode = strcmp(v, "eval") ? BFEED_MODE_TRAIN : BFEED_MODE_EVAL;
    else if (!strcmp(k, "--first")) first = atol(v);
    else return fprintf(stderr, "stream_hash: unknown option %s\n", k), 2;
  }
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_error err;
  if (bfeed_connect(argv[1], &c, &err) < 0 || bfeed_stream_open(c, argv[2], &o, &s, &err) < 0) {
    printf("error %d %s\n", err.code, err.message);
    return 1;
  }
  printf("open\n");
  fflush(stdout);
  int rc = take(s, first);
  char line[128];
  while (rc == 0 && fgets(line, sizeof line, stdin)) {
    long n;
    if (sscanf(line, "next %ld", &n) == 1) {
      rc = take(s, n);
    } else if (!strncmp(line, "stats", 5)) {
      bfeed_counter ctr[32];
      size_t k;
      if (bfeed_stream_stats(s, ctr, 32, &k, &err) < 0) {
        printf("error %d %s\n", err.code, err.message);
        rc = -1;
      }
      for (size_t j = 0; rc == 0 && j < k; j++) printf("%s=%llu ", ctr[j].name, (unsigned long long)ctr[j].value);
      printf("\n");
      fflush(stdout);
    } else if (!strncmp(line, "quit", 4)) {
      break;
    }
  }
  bfeed_stream_close(s);
  bfeed_close(c);
  return rc < 0 ? 1 : 0;
}
