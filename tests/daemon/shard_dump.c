/*
 * shard_dump -- index one TFRecord or tar shard with bfeed's code and print
 * what it found, for shard_oracle.py to compare with the files it wrote.
 *
 *   shard_dump tfrecord FILE IMAGE_KEY LABEL_KEY FEATURES_KEY OUTDIR
 *   shard_dump tar FILE LABEL_EXT OUTDIR
 *
 * A key given as "-" is not looked up. Prints "skipped N", then per sample
 * "OFFSET LENGTH LABEL [F0 F1 ...]" (LABEL "none" without one) and writes
 * the sample's image bytes, as served, to OUTDIR/I.bin (tfrecord_sample
 * re-checks the CRCs and parses the record again; tar samples are read at
 * the recorded offset).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tar_shards.h"
#include "tfrecord.h"

static const char *dump_key(const char *s) {
  return strcmp(s, "-") == 0 ? NULL : s;
}

static int dump_write(const char *dir, size_t i, const uint8_t *p, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%zu.bin", dir, i);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n) return -1;
  return fclose(f);
}

int main(int argc, char **argv) {
  int tar = argc == 5 && strcmp(argv[1], "tar") == 0;
  if (!tar && !(argc == 7 && strcmp(argv[1], "tfrecord") == 0)) {
    fprintf(stderr, "usage: shard_dump tfrecord FILE IMAGE_KEY LABEL_KEY FEATURES_KEY OUTDIR\n"
                    "       shard_dump tar FILE LABEL_EXT OUTDIR\n");
    return 2;
  }
  logger lg;
  log_init(&lg, LOG_INFO);
  shard_index_ctx ctx = {.log = &lg, .dataset = "dump"};
  shard_index x = {0};
  char err[512];
  const char *path = argv[2], *outdir = argv[argc - 1];
  tf_example_keys keys = {0};
  int rc;
  if (tar) {
    rc = tar_shards_index(path, dump_key(argv[3]), &ctx, &x, err, sizeof err);
  } else {
    keys = (tf_example_keys){dump_key(argv[3]), dump_key(argv[4]), dump_key(argv[5])};
    rc = tfrecord_index(path, &keys, &ctx, &x, err, sizeof err);
  }
  if (rc < 0) return fprintf(stderr, "error: %s\n", err), 1;
  printf("skipped %llu\n", (unsigned long long)x.skipped);
  uint8_t *buf = NULL;
  size_t cap = 0;
  for (size_t i = 0; i < x.n; i++) {
    const shard_index_entry *e = &x.e[i];
    printf("%llu %u ", (unsigned long long)e->off, e->len);
    if (e->label == SHARD_INDEX_NO_LABEL) printf("none");
    else printf("%lld", (long long)e->label);
    for (uint32_t k = 0; k < x.dim; k++) printf(" %.9g", x.features[i * x.dim + k]);
    printf("\n");
    size_t len = 0;
    if (tar) {
      int fd = open(path, O_RDONLY);
      if (fd < 0 || !(buf = realloc(buf, e->len + 1)) || pread(fd, buf, e->len, (off_t)e->off) != (ssize_t)e->len)
        return fprintf(stderr, "error: reading sample %zu\n", i), 1;
      close(fd);
      len = e->len;
    } else if (keys.image && tfrecord_sample(path, e, &keys, &buf, &cap, &len, err, sizeof err) < 0) {
      return fprintf(stderr, "error: sample %zu: %s\n", i, err), 1;
    }
    if ((tar || keys.image) && dump_write(outdir, i, buf, len) < 0) return fprintf(stderr, "error: writing\n"), 1;
  }
  free(buf);
  shard_index_free(&x);
  return 0;
}
