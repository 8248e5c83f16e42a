/*
 * stream_hash -- a scriptable client for service tests: opens a stream and
 * prints one line per batch, "EPOCH INDEX XXH64-of-all-tensors", then reads
 * commands on stdin: "next N" takes N more batches, "stats" prints the
 * stream's counters, "quit" closes. The first batches come with
 * --first N (default 0).
 *
 *   stream_hash ADDR DATASET [--first N] [--shm 0|1] [--sleep-ms MS] [--OPTION VALUE ...]
 *
 * Every --OPTION VALUE but those is a stream option by name
 * (bfeed_stream_opts_set: --batch, --size, --seed, --share off, ...);
 * --shm 0 keeps a Unix socket's batches off shared memory (libbfeed's
 * default is a ring), --sleep-ms waits that long after
 * each batch (a slow trainer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "bfeed.h"

static long sleep_ms; /* after each batch */

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
    if (sleep_ms) nanosleep(&(struct timespec){sleep_ms / 1000, sleep_ms % 1000 * 1000000}, NULL);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: stream_hash ADDR DATASET [options]\n"), 2;
  bfeed_stream_opts o;
  bfeed_stream_opts_init(&o);
  long first = 0;
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  bfeed_error err;
  for (int i = 3; i < argc; i += 2) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v || strncmp(k, "--", 2)) {
      return fprintf(stderr, "stream_hash: %s needs a value\n", k), 2;
    } else if (!strcmp(k, "--shm")) {
      co.shm = atoi(v);
    } else if (!strcmp(k, "--first")) {
      first = atol(v);
    } else if (!strcmp(k, "--sleep-ms")) {
      sleep_ms = atol(v);
    } else if (bfeed_stream_opts_set(&o, k + 2, v, &err) < 0) {
      return fprintf(stderr, "stream_hash: %s\n", err.message), 2;
    }
  }
  bfeed_client *c;
  bfeed_stream *s;
  if (bfeed_connect2(argv[1], &co, &c, &err) < 0 || bfeed_stream_open(c, argv[2], &o, &s, &err) < 0) {
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
      bfeed_counter ctr[64];
      size_t k;
      if (bfeed_stream_stats(s, ctr, 64, &k, &err) < 0) {
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
