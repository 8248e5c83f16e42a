/*
 * pack_main.c -- bfeed-pack SOURCE OUT [options]: a prepared dataset from
 * any dataset the daemon serves (pack.h; PACK_FORMAT.md). SOURCE is
 * parsed by the daemon's own --dataset parser (config.c), so it is
 * whatever `bfeedd --dataset NAME=...` takes after the '='.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "config.h"
#include "pack.h"
#include "packfile.h"
#include "wire.h"

static const char pack_main_usage[] =
    "usage: bfeed pack SOURCE OUT [--images original|jpeg|raw] [--max-side N] [--short-side N] [--quality Q]\n"
    "                  [--jobs N] [--shard-samples N] [--force]\n"
    "Write the dataset SOURCE (DIR, or KIND:PATH[,key=value...] as bfeedd's --dataset takes it after NAME=)\n"
    "as a prepared dataset in the folder OUT, served by bfeedd as --dataset NAME=pack:OUT.\n"
    "  --images original   each sample's bytes as they are (batches equal the source's byte for byte)\n"
    "  --images jpeg       JPEG, re-encoded only when over --max-side or not a JPEG (the default)\n"
    "  --images raw        decoded RGB pixels, capped at --max-side\n"
    "  --max-side N        cap on an image's longer side, in pixels (0: none; default 512; not with original)\n"
    "  --short-side N      cap on the shorter side, as torchvision's Resize(N) (0: none, the default): eval\n"
    "                      at S with round(S*256/224) = N is then exact from the pack (N = 256: S = 224)\n"
    "  --quality Q         JPEG quality, 1..100 (default 90)\n"
    "  --jobs N            threads, each writing whole shards (default: the CPU count)\n"
    "  --shard-samples N   source samples per shard file (default 1024)\n"
    "  --force             replace a pack of another source or other options in OUT\n"
    "A run that was interrupted is finished by running it again: complete shards are kept.\n";

static int pack_main_u32(const char *flag, const char *v, uint32_t lo, uint32_t hi, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *v == '-' || *end || errno || x < lo || x > hi)
    return fprintf(stderr, "bfeed pack: %s %s: expected a whole number from %u to %u\n", flag, v, lo, hi), -1;
  *out = (uint32_t)x;
  return 0;
}

static int pack_main_args(int argc, char **argv, pack_opts *o, const char **src, const char **out) {
  static const struct option longs[] = {{"images", 1, 0, 'i'},        {"max-side", 1, 0, 'm'}, {"quality", 1, 0, 'q'},
                                        {"short-side", 1, 0, 'S'},
                                        {"jobs", 1, 0, 'j'},          {"shard-samples", 1, 0, 's'},
                                        {"force", 0, 0, 'f'},         {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  *o = (pack_opts){.images = PACK_JPEG, .max_side = PACK_DEFAULT_MAX_SIDE, .quality = PACK_DEFAULT_QUALITY,
                   .shard_samples = PACK_DEFAULT_SHARD_SAMPLES, .jobs = ncpu > 0 ? (int)ncpu : 1};
  int c, side_given = 0;
  uint32_t v;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
    case 'i':
      if (strcmp(optarg, "original") == 0) o->images = PACK_ORIGINAL;
      else if (strcmp(optarg, "jpeg") == 0) o->images = PACK_JPEG;
      else if (strcmp(optarg, "raw") == 0) o->images = PACK_RAW;
      else return fprintf(stderr, "bfeed pack: --images %s: expected original, jpeg or raw\n", optarg), 2;
      break;
    case 'm':
      if (pack_main_u32("--max-side", optarg, 0, 65535, &o->max_side) < 0) return 2;
      side_given = 1;
      break;
    case 'S':
      if (pack_main_u32("--short-side", optarg, 0, 65535, &o->short_side) < 0) return 2;
      side_given |= o->short_side != 0;
      break;
    case 'q':
      if (pack_main_u32("--quality", optarg, 1, 100, &o->quality) < 0) return 2;
      break;
    case 'j':
      if (pack_main_u32("--jobs", optarg, 1, 1024, &v) < 0) return 2;
      o->jobs = (int)v;
      break;
    case 's':
      if (pack_main_u32("--shard-samples", optarg, 1, PACKFILE_MAX_RECORDS, &o->shard_samples) < 0) return 2;
      break;
    case 'f': o->force = 1; break;
    case 'h': return fputs(pack_main_usage, stdout), 0;
    default: return fputs(pack_main_usage, stderr), 2;
    }
  }
  if (argc - optind != 2) return fputs(pack_main_usage, stderr), 2;
  if (o->images == PACK_ORIGINAL) {
    if (side_given && (o->max_side || o->short_side))
      return fprintf(stderr, "bfeed pack: --max-side and --short-side apply to --images jpeg and raw; original keeps "
                             "every byte\n"), 2;
    o->max_side = o->short_side = 0;
    o->quality = 0;
  }
  if (o->images == PACK_RAW) o->quality = 0;
  *src = argv[optind];
  *out = argv[optind + 1];
  return -1;
}

/* The source, loaded and indexed, as bfeedd would serve it. */
static dataset *pack_main_source(const char *src, const logger *lg, char *err, size_t errlen) {
  config c;
  config_init(&c);
  size_t n = strlen(src) + 16;
  char *arg = malloc(n);
  dataset *d = NULL;
  if (!arg) return snprintf(err, errlen, "out of memory"), NULL;
  snprintf(arg, n, "source=%s", src);
  if (config_dataset_flag(&c, arg, err, errlen) == 0 && c.ndatasets == 1) {
    const config_dataset *cd = &c.datasets[0];
    dataset_kv *kv = calloc(cd->nkv + 1, sizeof *kv);
    for (size_t k = 0; kv && k < cd->nkv; k++) kv[k] = (dataset_kv){cd->keys[k], cd->values[k], cd->wheres[k]};
    if (kv) d = dataset_open("source", kv, cd->nkv, lg, err, errlen);
    free(kv);
  }
  free(arg);
  config_free(&c);
  if (d && dataset_wait(d, err, errlen) < 0) dataset_unref(d), d = NULL;
  if (d && !dataset_has_images(d))
    snprintf(err, errlen, "%s has no images: bfeed pack packs image datasets (npy, text and features-only "
             "TFRecords are served as they are)", src), dataset_unref(d), d = NULL;
  else if (d && dataset_has_text(d))
    snprintf(err, errlen, "%s holds text (a manifest's captions), which a pack cannot hold yet: serve it as it is",
             src), dataset_unref(d), d = NULL;
  return d;
}

/* What the shards are keyed to: the source's fingerprint and every option
 * that changes their bytes. */
static uint64_t pack_main_key(const dataset *d, const pack_opts *o, uint32_t dim) {
  char text[256];
  int n = snprintf(text, sizeof text, "bfeed-pack %d|%016" PRIx64 "|%zu|%s|%u|%u|%u|%u|%u", PACKFILE_VERSION,
                   d->fingerprint, d->nsamples, pack_images_name(o->images), o->max_side, o->quality,
                   o->shard_samples, dim, o->short_side);
  return XXH64(text, (size_t)n, 0);
}

/* Refuse OUT when it holds another pack's files (unless --force, which
 * removes them). 0, or 1 refused. */
static int pack_main_other(const char *out, uint64_t key, uint32_t nshards, int force) {
  char path[4200], why[512];
  snprintf(path, sizeof path, "%s/%s", out, PACKFILE_META);
  FILE *f = fopen(path, "rb");
  int other = 0;
  if (f) {
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    packfile_meta m;
    int parsed = packfile_meta_parse(buf, n, &m, why, sizeof why) == 0; /* a failed parse frees its own */
    other = !parsed || m.key != key;
    if (parsed) packfile_meta_free(&m);
  }
  DIR *dir = opendir(out);
  struct dirent *e;
  while (dir && (e = readdir(dir))) {
    unsigned k;
    char tail[16];
    if (sscanf(e->d_name, "shard-%u.%15s", &k, tail) != 2 || strcmp(tail, "bfpack") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", out, e->d_name);
    uint8_t head[PACKFILE_HEADER];
    FILE *s = fopen(path, "rb");
    size_t got = s ? fread(head, 1, sizeof head, s) : 0;
    if (s) fclose(s);
    uint64_t hk = got == sizeof head ? wire_get64(head + 16) : 0; /* the header's key (PACK_FORMAT.md) */
    if (got == sizeof head && hk == key && k < nshards) continue; /* this job's: checked when its turn comes */
    if (!force) other = 1;
    else unlink(path);
  }
  if (dir) closedir(dir);
  if (other && !force) {
    fprintf(stderr, "bfeed pack: %s holds a pack of another source or other options: give --force to replace it\n", out);
    return 1;
  }
  snprintf(path, sizeof path, "%s/%s", out, PACKFILE_META);
  unlink(path); /* written again last: until then the pack is incomplete */
  return 0;
}

static int pack_main_meta(const pack_job *j, const char *src, char *err, size_t errlen) {
  const dataset *d = j->d;
  packfile_meta m = {.version = PACKFILE_VERSION, .samples = j->records, .source_samples = d->nsamples,
                     .shards = j->nshards, .shard_samples = j->o->shard_samples, .key = j->key,
                     .source_fingerprint = d->fingerprint, .skipped = j->skipped, .dim = j->dim,
                     .labelled = d->labels != NULL, .max_side = j->o->max_side, .short_side = j->o->short_side,
                     .quality = j->o->quality,
                     .source = (char *)src, .nclasses = d->nclasses, .classes = d->classes};
  snprintf(m.images, sizeof m.images, "%s", pack_images_name(j->o->images));
  char path[4200], tmp[4300];
  snprintf(path, sizeof path, "%s/%s", j->out, PACKFILE_META);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), BFEED_EIO;
  int rc = packfile_meta_write(&m, f, err, errlen);
  if (rc == 0 && fsync(fileno(f)) != 0) rc = BFEED_EIO, snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
  if (fclose(f) != 0 && rc == 0) rc = BFEED_EIO, snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0) rc = BFEED_EIO, snprintf(err, errlen, "%s: %s", path, strerror(errno));
  int dfd = open(j->out, O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) fsync(dfd), close(dfd); /* the renames, on disk */
  return rc;
}

int main(int argc, char **argv) {
  pack_opts o;
  const char *src, *out;
  int rc = pack_main_args(argc, argv, &o, &src, &out);
  if (rc >= 0) return rc;
  logger lg;
  log_init(&lg, LOG_WARN);
  char err[2048];
  dataset *d = pack_main_source(src, &lg, err, sizeof err);
  if (!d) return fprintf(stderr, "bfeed pack: %s\n", err), 1;
  pack_job j = {.d = d, .o = &o, .out = out, .dim = dataset_has_features(d) ? (uint32_t)d->features.row_floats : 0};
  j.nshards = (uint32_t)((d->nsamples + o.shard_samples - 1) / o.shard_samples);
  j.key = pack_main_key(d, &o, j.dim);
  if (mkdir(out, 0777) != 0 && errno != EEXIST)
    return fprintf(stderr, "bfeed pack: %s: %s\n", out, strerror(errno)), dataset_unref(d), 1;
  if (pack_main_other(out, j.key, j.nshards, o.force)) return dataset_unref(d), 1;
  rc = pack_run(&j, err, sizeof err);
  if (rc == 0) rc = pack_main_meta(&j, src, err, sizeof err);
  if (rc < 0) return fprintf(stderr, "bfeed pack: %s\n", err), dataset_unref(d), 1;
  printf("packed %" PRIu64 " of %zu samples into %u shard(s) in %s (images %s, max side %u%s, short side %u%s)\n",
         j.records, d->nsamples, j.nshards, out, pack_images_name(o.images), o.max_side, o.max_side ? "" : " = none",
         o.short_side, o.short_side ? "" : " = none");
  printf("  %.1f MB written (%" PRIu64 " shard(s) kept from an earlier run), %.1f MB of originals read\n",
         j.bytes_written / 1e6, j.kept_shards, j.bytes_source / 1e6);
  printf("  %.2f s, %.0f samples/s; %" PRIu64 " sample(s) skipped as undecodable%s\n", j.seconds,
         j.seconds > 0 ? (double)(d->nsamples) / j.seconds : 0.0, j.skipped,
         j.skipped ? " (each named above, or in the run that wrote its shard)" : "");
  dataset_unref(d);
  return 0;
}
