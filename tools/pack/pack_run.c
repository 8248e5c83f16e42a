/*
 * pack_run.c -- the shards of a pack, written by --jobs threads that each
 * take whole shards (pack.h). Shard k always holds source samples
 * [k x shard_samples, (k + 1) x shard_samples), those that are packed, in
 * order: its bytes depend on nothing but the source and the options, so
 * any number of threads, and any interruption, give the same files.
 *
 * Resuming: a shard is written to NAME.tmp and renamed when complete, so
 * a shard file under its own name is whole unless damaged; one that parses,
 * whose CRCs hold and whose key is this job's is kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bfeed_types.h"
#include "clock.h"
#include "pack.h"
#include "packfile.h"

typedef struct pack_run_state {
  pack_job *j;
  uint32_t next;        /* atomic: the next shard to take */
  uint64_t done;        /* atomic: source samples dealt with */
  uint64_t records, written, source, skipped, kept, shards_done; /* atomics */
  int failed;           /* atomic */
  int running;          /* atomic: threads not yet finished */
  int exit_after;       /* BFEED_PACK_EXIT_AFTER: the tests' stand-in for kill -9 */
  pthread_mutex_t lock; /* guards err and the log lines */
  char err[1024];
} pack_run_state;

static void pack_run_fail(pack_run_state *st, const char *fmt, const char *a, const char *b) {
  pthread_mutex_lock(&st->lock);
  if (!st->err[0]) snprintf(st->err, sizeof st->err, fmt, a, b);
  pthread_mutex_unlock(&st->lock);
  __atomic_store_n(&st->failed, 1, __ATOMIC_RELAXED);
}

static void pack_run_add(uint64_t *v, uint64_t n) { __atomic_add_fetch(v, n, __ATOMIC_RELAXED); }

/* The samples shard k covers. */
static void pack_run_range(const pack_job *j, uint32_t k, size_t *a, size_t *b) {
  *a = (size_t)k * j->o->shard_samples;
  *b = *a + j->o->shard_samples;
  if (*b > j->d->nsamples) *b = j->d->nsamples;
}

/* 1 when the shard at path is complete, sound and this job's shard k. */
static int pack_run_keep(pack_run_state *st, const char *path, uint32_t k) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  uint8_t *buf = NULL;
  struct stat sb;
  int ok = fstat(fileno(f), &sb) == 0 && sb.st_size > 0 && (buf = malloc((size_t)sb.st_size)) &&
           fread(buf, 1, (size_t)sb.st_size, f) == (size_t)sb.st_size;
  fclose(f);
  packfile_shard x;
  char why[512];
  if (ok && packfile_parse(buf, (size_t)sb.st_size, &x, why, sizeof why) == 0) {
    ok = x.number == k && x.key == st->j->key && x.dim == st->j->dim;
    for (uint32_t r = 0; ok && r < x.n; r++) ok = packfile_check_record(&x, r, buf + x.e[r].off, why, sizeof why) == 0;
    if (ok) {
      size_t a, b;
      pack_run_range(st->j, k, &a, &b);
      pack_run_add(&st->records, x.n);
      pack_run_add(&st->written, (uint64_t)sb.st_size);
      pack_run_add(&st->skipped, (b - a) - x.n);
      pack_run_add(&st->done, b - a);
      pack_run_add(&st->kept, 1);
    }
    packfile_shard_free(&x);
  } else {
    ok = 0;
  }
  free(buf);
  return ok;
}

typedef struct pack_run_worker {
  pack_image *img;
  uint8_t *buf;
  size_t cap;
} pack_run_worker;

/* Sample i into the shard: 1 written, 0 left out, -1 failed (st->err). */
static int pack_run_sample(pack_run_state *st, pack_run_worker *w, packfile_writer *pw, size_t i) {
  const pack_job *j = st->j;
  char why[1024], name[700];
  size_t len;
  dataset_sample_name(j->d, i, name, sizeof name);
  int rc = dataset_read(j->d, i, &w->buf, &w->cap, &len, why, sizeof why);
  if (rc == BFEED_EIO || rc == BFEED_ENOMEM) return pack_run_fail(st, "%s%s", why, ""), -1;
  const uint8_t *out = NULL;
  size_t out_len = 0;
  if (rc == 0) rc = pack_image_convert(w->img, j->o, w->buf, len, &out, &out_len, why, sizeof why);
  if (rc == BFEED_ENOMEM || rc == BFEED_ECODEC) return pack_run_fail(st, "%s: %s", name, why), -1;
  if (rc < 0) {
    /* One bad image never stops the job, as it never stops an epoch. */
    pthread_mutex_lock(&st->lock);
    fprintf(stderr, "\rbfeed-pack: skipping %s: %s\n", name, why);
    pthread_mutex_unlock(&st->lock);
    pack_run_add(&st->skipped, 1);
    return 0;
  }
  int32_t label = j->d->labels ? j->d->labels[i] : -1;
  const float *feat = j->dim ? j->d->features.rows + (size_t)i * j->dim : NULL;
  if (packfile_write_record(pw, out, out_len, label, feat, why, sizeof why) < 0) return pack_run_fail(st, "%s", why, ""), -1;
  pack_run_add(&st->records, 1);
  pack_run_add(&st->source, len);
  return 1;
}

/* Shard k, to NAME.tmp, synced, then renamed. */
static void pack_run_shard(pack_run_state *st, pack_run_worker *w, uint32_t k) {
  const pack_job *j = st->j;
  char name[64], path[4200], tmp[4300], why[512];
  packfile_shard_name(name, sizeof name, k);
  snprintf(path, sizeof path, "%s/%s", j->out, name);
  if (pack_run_keep(st, path, k)) return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return pack_run_fail(st, "%s: %s", tmp, strerror(errno));
  packfile_writer pw;
  size_t a, b;
  pack_run_range(j, k, &a, &b);
  int rc = packfile_write_begin(&pw, f, k, j->dim, j->key, why, sizeof why);
  for (size_t i = a; rc == 0 && i < b; i++) {
    if (__atomic_load_n(&st->failed, __ATOMIC_RELAXED) || pack_run_sample(st, w, &pw, i) < 0) rc = -1;
    pack_run_add(&st->done, 1);
  }
  if (rc == 0 && packfile_write_end(&pw, why, sizeof why) < 0) rc = -2;
  uint64_t size = pw.off;
  packfile_write_free(&pw);
  if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0)) rc = -2, snprintf(why, sizeof why, "%s", strerror(errno));
  if (fclose(f) != 0 && rc == 0) rc = -2, snprintf(why, sizeof why, "%s", strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0) rc = -2, snprintf(why, sizeof why, "rename: %s", strerror(errno));
  if (rc == -2) pack_run_fail(st, "%s: %s", tmp, why);
  if (rc < 0) return;
  pack_run_add(&st->written, size);
  uint64_t n = __atomic_add_fetch(&st->shards_done, 1, __ATOMIC_RELAXED);
  if (st->exit_after > 0 && n >= (uint64_t)st->exit_after) _exit(137);
}

static void *pack_run_thread(void *arg) {
  pack_run_state *st = arg;
  pack_run_worker w = {.img = pack_image_new()};
  if (!w.img) {
    pack_run_fail(st, "%s%s", "out of memory", "");
    __atomic_sub_fetch(&st->running, 1, __ATOMIC_RELEASE);
    return NULL;
  }
  for (;;) {
    uint32_t k = __atomic_fetch_add(&st->next, 1, __ATOMIC_RELAXED);
    if (k >= st->j->nshards || __atomic_load_n(&st->failed, __ATOMIC_RELAXED)) break;
    pack_run_shard(st, &w, k);
  }
  pack_image_free(w.img);
  free(w.buf);
  __atomic_sub_fetch(&st->running, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* A progress bar while stderr is a terminal, else a line every 10 s. */
static void pack_run_progress(pack_run_state *st, double t0, int tty, int last) {
  uint64_t done = __atomic_load_n(&st->done, __ATOMIC_RELAXED), n = st->j->d->nsamples;
  double dt = clock_now_s() - t0, rate = dt > 0 ? done / dt : 0;
  uint64_t mb = __atomic_load_n(&st->written, __ATOMIC_RELAXED) >> 20;
  pthread_mutex_lock(&st->lock);
  if (tty) {
    int bar = (int)(30 * done / (n ? n : 1));
    fprintf(stderr, "\r[%.*s%*s] %llu/%llu samples, %llu MiB, %.0f samples/s%s", bar,
            "##############################", 30 - bar, "", (unsigned long long)done, (unsigned long long)n,
            (unsigned long long)mb, rate, last ? "\n" : "");
  } else {
    fprintf(stderr, "bfeed-pack: %llu of %llu samples, %llu MiB written, %.0f samples/s\n", (unsigned long long)done,
            (unsigned long long)n, (unsigned long long)mb, rate);
  }
  pthread_mutex_unlock(&st->lock);
}

int pack_run(pack_job *j, char *err, size_t errlen) {
  pack_run_state st = {.j = j};
  pthread_mutex_init(&st.lock, NULL);
  const char *hook = getenv("BFEED_PACK_EXIT_AFTER");
  st.exit_after = hook ? atoi(hook) : 0;
  int nt = j->o->jobs < 1 ? 1 : j->o->jobs;
  if ((uint32_t)nt > j->nshards) nt = (int)j->nshards;
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  if (!th) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  int started = 0, tty = isatty(2);
  double t0 = clock_now_s(), shown = t0;
  st.running = nt;
  for (int i = 0; i < nt; i++)
    if (pthread_create(&th[started], NULL, pack_run_thread, &st) == 0) started++;
  __atomic_sub_fetch(&st.running, nt - started, __ATOMIC_RELEASE);
  if (!started) st.running = 1, pack_run_thread(&st);
  while (__atomic_load_n(&st.running, __ATOMIC_ACQUIRE) > 0) {
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    if (clock_now_s() - shown >= (tty ? 0.2 : 10.0)) pack_run_progress(&st, t0, tty, 0), shown = clock_now_s();
  }
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  free(th);
  j->seconds = clock_now_s() - t0;
  if (tty) pack_run_progress(&st, t0, tty, 1);
  j->records = st.records;
  j->bytes_written = st.written;
  j->bytes_source = st.source;
  j->skipped = st.skipped;
  j->kept_shards = st.kept;
  pthread_mutex_destroy(&st.lock);
  if (st.failed) return snprintf(err, errlen, "%s", st.err), BFEED_EIO;
  return 0;
}
