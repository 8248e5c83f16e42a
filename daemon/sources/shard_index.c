/*
 * shard_index.c -- per-shard sample index: building, and its cache file.
 * The cache is bfeed's own file on this machine, not a dataset input: it
 * is read and written here with stdio rather than through storage.h.
 */
#include "shard_index.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "bfeed_types.h"

/* File layout, little-endian host order (the cache is a per-machine file):
 * header, n entries, n * dim floats, then XXH64 of everything before. */
#define SHARD_INDEX_MAGIC "BFIDX\0v1"
typedef struct shard_index_header {
  char magic[8];
  uint64_t size, mtime_ns, key, n, skipped;
  uint32_t dim, entry_size;
} shard_index_header;

int shard_index_add(shard_index *x, uint64_t off, uint32_t len, int64_t label, const float *features, uint32_t dim) {
  if (x->n == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 1024;
    shard_index_entry *e = realloc(x->e, cap * sizeof *e);
    if (!e) return BFEED_ENOMEM;
    x->e = e;
    if (dim) {
      float *f = realloc(x->features, cap * dim * sizeof *f);
      if (!f) return BFEED_ENOMEM;
      x->features = f;
    }
    x->cap = cap;
  }
  if (dim) memcpy(x->features + x->n * dim, features, dim * sizeof *features);
  x->e[x->n++] = (shard_index_entry){.off = off, .len = len, .label = label};
  x->dim = dim;
  return 0;
}

void shard_index_free(shard_index *x) {
  free(x->e);
  free(x->features);
  memset(x, 0, sizeof *x);
}

void shard_index_path(char *out, size_t n, const char *shard, const char *cache_dir) {
  const char *slash = strrchr(shard, '/');
  const char *base = slash ? slash + 1 : shard;
  if (cache_dir) {
    char abs[PATH_MAX];
    const char *key = realpath(shard, abs) ? abs : shard;
    snprintf(out, n, "%s/%s.%016llx.bfidx", cache_dir, base,
             (unsigned long long)XXH64(key, strlen(key), 0));
  } else {
    snprintf(out, n, "%.*s.%s.bfidx", (int)(base - shard), shard, base);
  }
}

static uint64_t shard_index_mtime(const struct stat *st) {
  return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

int shard_index_load(shard_index *x, const char *path, const struct stat *st, uint64_t key, char *err, size_t errlen) {
  memset(x, 0, sizeof *x);
  /* O_NONBLOCK, and a regular file only: a FIFO where the cache goes (it
   * sits beside the shards, in their folder) must not hold the indexing
   * thread; it is no cache, and the index is built instead. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat cst;
  if (fd >= 0 && (fstat(fd, &cst) != 0 || !S_ISREG(cst.st_mode))) close(fd), fd = -1;
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return snprintf(err, errlen, "no index cache %s", path), BFEED_EDATASET;
  }
  shard_index_header h;
  const char *why = NULL;
  uint8_t *body = NULL;
  if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, SHARD_INDEX_MAGIC, 8) != 0 ||
      h.entry_size != sizeof(shard_index_entry))
    why = "not an index cache of this version";
  else if (h.size != (uint64_t)st->st_size || h.mtime_ns != shard_index_mtime(st))
    why = "the shard's size or mtime changed";
  else if (h.key != key)
    why = "built with other dataset settings";
  else if (h.n > (1ull << 40) / sizeof(shard_index_entry) || h.dim > (1u << 24))
    why = "corrupt (sizes out of range)";
  size_t ebytes = 0, fbytes = 0;
  if (!why) {
    ebytes = h.n * sizeof(shard_index_entry);
    fbytes = h.n * h.dim * sizeof(float);
    uint64_t sum;
    if (!(body = malloc(ebytes + fbytes + 1)) || fread(body, 1, ebytes + fbytes, f) != ebytes + fbytes ||
        fread(&sum, sizeof sum, 1, f) != 1 || fgetc(f) != EOF)
      why = body ? "corrupt (wrong length)" : "out of memory";
    else {
      XXH64_state_t *s = XXH64_createState();
      XXH64_reset(s, 0);
      XXH64_update(s, &h, sizeof h);
      XXH64_update(s, body, ebytes + fbytes);
      if (XXH64_digest(s) != sum) why = "corrupt (checksum mismatch)";
      XXH64_freeState(s);
    }
  }
  fclose(f);
  if (why) {
    free(body);
    return snprintf(err, errlen, "index cache %s: %s", path, why), BFEED_EDATASET;
  }
  x->n = x->cap = h.n;
  x->dim = h.dim;
  x->skipped = h.skipped;
  x->e = malloc(ebytes ? ebytes : 1);
  x->features = fbytes ? malloc(fbytes) : NULL;
  if (!x->e || (fbytes && !x->features)) {
    free(body);
    shard_index_free(x);
    return snprintf(err, errlen, "index cache %s: out of memory", path), BFEED_ENOMEM;
  }
  memcpy(x->e, body, ebytes);
  if (fbytes) memcpy(x->features, body + ebytes, fbytes);
  free(body);
  return 0;
}

int shard_index_save(const shard_index *x, const char *path, const struct stat *st, uint64_t key, char *err,
                     size_t errlen) {
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  shard_index_header h = {.size = (uint64_t)st->st_size, .mtime_ns = shard_index_mtime(st), .key = key,
                          .n = x->n, .skipped = x->skipped, .dim = x->dim, .entry_size = sizeof(shard_index_entry)};
  memcpy(h.magic, SHARD_INDEX_MAGIC, 8);
  size_t ebytes = x->n * sizeof *x->e, fbytes = x->n * x->dim * sizeof(float);
  XXH64_state_t *s = XXH64_createState();
  if (!s) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  XXH64_reset(s, 0);
  XXH64_update(s, &h, sizeof h);
  if (ebytes) XXH64_update(s, x->e, ebytes);
  if (fbytes) XXH64_update(s, x->features, fbytes);
  uint64_t sum = XXH64_digest(s);
  XXH64_freeState(s);
  FILE *f = fopen(tmp, "wb");
  if (!f) return snprintf(err, errlen, "cannot write index cache %s: %s", tmp, strerror(errno)), BFEED_EIO;
  int ok = fwrite(&h, sizeof h, 1, f) == 1 && (!ebytes || fwrite(x->e, ebytes, 1, f) == 1) &&
           (!fbytes || fwrite(x->features, fbytes, 1, f) == 1) && fwrite(&sum, sizeof sum, 1, f) == 1;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write index cache %s: %s", path, strerror(errno));
    unlink(tmp);
    return BFEED_EIO;
  }
  return 0;
}
