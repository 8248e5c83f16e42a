/* fuzz_shards.c -- entry point: index bytes as TFRecord and tar, check every sample found. */
#include "fuzz_shards.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tar_shards.h"
#include "tfrecord.h"

static void fuzz_shards_check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_shards: broken: %s\n", what);
    abort();
  }
}

size_t fuzz_shards_one(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/bfeed-fuzz-shard-%ld", (long)getpid());
  FILE *f = fopen(path, "wb");
  fuzz_shards_check(f && (size == 0 || fwrite(data, 1, size, f) == size) && fclose(f) == 0, "writing the input");
  logger quiet = {.level = LOG_ERR - 1};
  shard_index_ctx ctx = {.log = &quiet, .dataset = "fuzz"};
  tf_example_keys keys = {.image = "image/encoded", .label = "image/class/label"};
  shard_index x = {0};
  char err[512];
  size_t found = 0;
  if (tfrecord_index(path, &keys, &ctx, &x, err, sizeof err) == 0) {
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    for (size_t i = 0; i < x.n; i++) {
      const shard_index_entry *e = &x.e[i];
      fuzz_shards_check(e->off + TFRECORD_HEADER + e->len + TFRECORD_FOOTER <= size, "record inside the file");
      fuzz_shards_check(tfrecord_sample(path, e, &keys, &buf, &cap, &len, err, sizeof err) == 0,
                        "an indexed record reads back");
      fuzz_shards_check(len <= e->len, "image bytes inside the record");
    }
    free(buf);
    found += x.n;
  }
  shard_index_free(&x);
  if (tar_shards_index(path, "cls", &ctx, &x, err, sizeof err) == 0) {
    for (size_t i = 0; i < x.n; i++)
      fuzz_shards_check(x.e[i].off + x.e[i].len <= size && x.e[i].label != SHARD_INDEX_NO_LABEL,
                        "tar image inside the file, with a label");
    found += x.n;
  }
  shard_index_free(&x);
  unlink(path);
  return found;
}

#ifdef BFEED_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_shards_one(data, size);
  return 0;
}
#endif
