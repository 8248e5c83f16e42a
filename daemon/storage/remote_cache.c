/* remote_cache.c -- remote objects' blocks: memory, a folder, read-ahead (see remote_cache.h). */
#include "remote_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bfeed_types.h"

#define REMOTE_CACHE_BUCKETS 65536u
#define REMOTE_CACHE_QUEUE 512u
#define REMOTE_CACHE_MAX_THREADS 64
/* With a folder, memory keeps only the hottest blocks: the kernel's page
 * cache holds the folder's. */
#define REMOTE_CACHE_MEM_WITH_DIR (64ull << 20)
#define REMOTE_CACHE_TRAILER 16 /* a block file ends with its id and its data's XXH64 */

enum { REMOTE_CACHE_LOADING = 1, REMOTE_CACHE_READY = 2 };

typedef struct remote_cache_block {
  uint64_t id;
  int64_t no;
  uint8_t *data;
  size_t len;
  int state, refs;
  struct remote_cache_block *hnext;      /* the bucket's chain */
  struct remote_cache_block *prev, *next; /* least recently used last; READY blocks only */
} remote_cache_block;

typedef struct remote_cache_job {
  remote_object *o;
  int64_t no;
} remote_cache_job;

static struct {
  pthread_mutex_t mu;  /* everything below but the folder's trimming */
  pthread_cond_t done; /* a load ended */
  pthread_cond_t work; /* a job was queued, or stop */
  remote_cache_block *table[REMOTE_CACHE_BUCKETS];
  remote_cache_block lru; /* sentinel: lru.next the most recent */
  uint64_t mem_bytes, mem_max;
  char *dir;
  uint64_t disk_max, disk_bytes;
  remote_http_opts http;
  remote_cache_job queue[REMOTE_CACHE_QUEUE];
  size_t qhead, qlen;
  pthread_t threads[REMOTE_CACHE_MAX_THREADS];
  int nthreads, stop, ready;
  remote_cache_counters count;
} rc = {.mu = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER, .work = PTHREAD_COND_INITIALIZER};

static pthread_mutex_t remote_cache_trim_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t remote_cache_bucket(uint64_t id, int64_t no) {
  return (size_t)((id ^ ((uint64_t)no * 0x9e3779b97f4a7c15ull)) % REMOTE_CACHE_BUCKETS);
}

/* rc.mu held. */
static remote_cache_block *remote_cache_find(uint64_t id, int64_t no) {
  for (remote_cache_block *b = rc.table[remote_cache_bucket(id, no)]; b; b = b->hnext)
    if (b->id == id && b->no == no) return b;
  return NULL;
}

static void remote_cache_unlink_lru(remote_cache_block *b) {
  if (!b->prev) return;
  b->prev->next = b->next;
  b->next->prev = b->prev;
  b->prev = b->next = NULL;
}

static void remote_cache_push_lru(remote_cache_block *b) {
  remote_cache_unlink_lru(b);
  b->next = rc.lru.next;
  b->prev = &rc.lru;
  rc.lru.next->prev = b;
  rc.lru.next = b;
}

static void remote_cache_remove(remote_cache_block *b) {
  remote_cache_block **p = &rc.table[remote_cache_bucket(b->id, b->no)];
  while (*p != b) p = &(*p)->hnext;
  *p = b->hnext;
  remote_cache_unlink_lru(b);
  if (b->state == REMOTE_CACHE_READY) rc.mem_bytes -= b->len;
  free(b->data);
  free(b);
}

/* Drop the least recently used blocks no reader holds, to the bound. */
static void remote_cache_evict(void) {
  remote_cache_block *b = rc.lru.prev;
  while (rc.mem_bytes > rc.mem_max && b != &rc.lru) {
    remote_cache_block *prev = b->prev;
    if (b->refs == 0) remote_cache_remove(b), rc.count.evictions++;
    b = prev;
  }
}

static void remote_cache_lazy_init(void) {
  if (rc.ready) return;
  rc.lru.next = rc.lru.prev = &rc.lru;
  if (!rc.mem_max) rc.mem_max = REMOTE_CACHE_MAX_DEFAULT;
  if (!rc.http.timeout_ms) rc.http = (remote_http_opts)REMOTE_HTTP_OPTS_DEFAULT;
  rc.ready = 1;
}

/* ------------------------------------------------------------------ */
/* The folder                                                          */

static void remote_cache_file(char *out, size_t n, uint64_t id, int64_t no) {
  snprintf(out, n, "%s/%016llx-%lld.blk", rc.dir, (unsigned long long)id, (long long)no);
}

/* The block from the folder: 1 found and whole, 0 not there (a damaged
 * file is removed), or a negative code when out of memory. */
static int remote_cache_disk_get(uint64_t id, int64_t no, uint8_t **data, size_t *len) {
  char path[4200];
  remote_cache_file(path, sizeof path, id, no);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat st;
  int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= REMOTE_CACHE_TRAILER &&
           st.st_size <= REMOTE_CACHE_BLOCK + REMOTE_CACHE_TRAILER;
  size_t n = ok ? (size_t)st.st_size : 0;
  uint8_t *b = ok ? malloc(n) : NULL;
  if (ok && !b) return close(fd), BFEED_ENOMEM;
  size_t have = 0;
  while (ok && have < n) {
    ssize_t r = pread(fd, b + have, n - have, (off_t)have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) ok = 0;
    else have += (size_t)r;
  }
  if (ok) {
    uint64_t tid, sum;
    memcpy(&tid, b + n - 16, 8);
    memcpy(&sum, b + n - 8, 8);
    ok = tid == id && sum == XXH64(b, n - REMOTE_CACHE_TRAILER, id);
  }
  if (ok) {
    /* Its use, for the trimming's order (at most once a minute). */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (now.tv_sec - st.st_mtim.tv_sec > 60) futimens(fd, NULL);
  }
  close(fd);
  if (!ok) {
    free(b);
    if (n) unlink(path);
    return 0;
  }
  *data = b;
  *len = n - REMOTE_CACHE_TRAILER;
  return 1;
}

typedef struct remote_cache_entry {
  time_t mtime;
  uint64_t size;
  char name[40];
} remote_cache_entry;

static int remote_cache_older(const void *a, const void *b) {
  const remote_cache_entry *x = a, *y = b;
  return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Count the folder's blocks and, over the bound, remove the least recently
 * used down to 90% of it. Another daemon may trim at once: a block removed
 * twice is no harm, and a block read while removed stays readable. */
static void remote_cache_trim(int force) {
  if (!rc.dir || pthread_mutex_trylock(&remote_cache_trim_mu) != 0) return;
  pthread_mutex_lock(&rc.mu);
  int over = force || rc.disk_bytes > rc.disk_max;
  pthread_mutex_unlock(&rc.mu);
  DIR *d = over ? opendir(rc.dir) : NULL;
  if (!d) return (void)pthread_mutex_unlock(&remote_cache_trim_mu);
  remote_cache_entry *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    struct stat st;
    if (l < 5 || l >= sizeof v->name || strcmp(e->d_name + l - 4, ".blk") != 0) continue;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      remote_cache_entry *nv = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof *v);
      if (!nv) break;
      v = nv;
    }
    v[n].mtime = st.st_mtim.tv_sec;
    v[n].size = (uint64_t)st.st_size;
    memcpy(v[n].name, e->d_name, l + 1);
    total += v[n++].size;
  }
  if (total > rc.disk_max && n) {
    qsort(v, n, sizeof *v, remote_cache_older);
    for (size_t i = 0; i < n && total > rc.disk_max / 10 * 9; i++)
      if (unlinkat(dirfd(d), v[i].name, 0) == 0) total -= v[i].size;
  }
  closedir(d);
  free(v);
  pthread_mutex_lock(&rc.mu);
  rc.disk_bytes = total;
  rc.count.bytes_disk = total;
  pthread_mutex_unlock(&rc.mu);
  pthread_mutex_unlock(&remote_cache_trim_mu);
}

/* Keep the block in the folder: written aside, then renamed into place. */
static void remote_cache_disk_put(uint64_t id, int64_t no, const uint8_t *data, size_t len) {
  char path[4200], tmp[4300];
  remote_cache_file(path, sizeof path, id, no);
  snprintf(tmp, sizeof tmp, "%s.%d.%lx.tmp", path, (int)getpid(), (unsigned long)pthread_self());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  uint64_t trailer[2] = {id, XXH64(data, len, id)};
  int ok = write(fd, data, len) == (ssize_t)len && write(fd, trailer, sizeof trailer) == (ssize_t)sizeof trailer;
  ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
  if (!ok) {
    unlink(tmp);
    return;
  }
  pthread_mutex_lock(&rc.mu);
  rc.disk_bytes += len + REMOTE_CACHE_TRAILER;
  rc.count.bytes_disk = rc.disk_bytes;
  int over = rc.disk_bytes > rc.disk_max;
  pthread_mutex_unlock(&rc.mu);
  if (over) remote_cache_trim(0);
}

/* ------------------------------------------------------------------ */
/* Fetching                                                            */

/* Block no of o: from the folder, else fetched (and kept in the folder). */
static int remote_cache_load(remote_object *o, int64_t no, uint8_t **data, size_t *len, int *from_disk, char *err,
                             size_t errlen) {
  *from_disk = 0;
  if (rc.dir) {
    int rc_ = remote_cache_disk_get(o->id, no, data, len);
    if (rc_ < 0) return snprintf(err, errlen, "%s: out of memory", o->what), rc_;
    if (rc_ == 1) return *from_disk = 1, 0;
  }
  uint64_t off = (uint64_t)no * REMOTE_CACHE_BLOCK;
  size_t want = o->size - off < REMOTE_CACHE_BLOCK ? (size_t)(o->size - off) : REMOTE_CACHE_BLOCK;
  uint8_t *b = malloc(want ? want : 1);
  if (!b) return snprintf(err, errlen, "%s: out of memory", o->what), BFEED_ENOMEM;
  remote_http_req q = {.url = o->url, .what = o->what, .off = off, .len = want, .if_match = o->etag,
                       .auth = __atomic_load_n(&o->auth, __ATOMIC_ACQUIRE), .buf = b, .cap = want};
  remote_http_resp r;
  int code = remote_http_do(&q, &rc.http, &r, err, errlen);
  if (code == 0 && r.etag[0] && o->etag[0] && strcmp(r.etag, o->etag) != 0) r.status = 412, code = BFEED_EDATASET;
  if (code == 0 && r.got != want) {
    /* Shorter than listed: the object was replaced by a smaller one. */
    r.status = 412;
    code = BFEED_EDATASET;
  }
  if (code < 0) {
    free(b);
    if (r.status == 412 || r.status == 404) {
      /* Replaced, or gone: what was listed is no more (storage_remote.c
       * asks again and storage_open_same then sees it). */
      __atomic_store_n(&o->changed, 1, __ATOMIC_RELAXED);
      if (r.status == 412)
        snprintf(err, errlen, "%s changed since the dataset was loaded (ETag \"%s\" then)", o->what, o->etag);
      else
        snprintf(err, errlen, "%s is gone since the dataset was loaded (HTTP 404)", o->what);
    }
    return code;
  }
  if (rc.dir) remote_cache_disk_put(o->id, no, b, want);
  *data = b;
  *len = want;
  return 0;
}

/* The block, held (release it), loaded when missing. With nowait, a block
 * being loaded by another is not waited for: NULL, 0. */
static int remote_cache_acquire(remote_object *o, int64_t no, int nowait, remote_cache_block **out, char *err,
                                size_t errlen) {
  *out = NULL;
  pthread_mutex_lock(&rc.mu);
  remote_cache_lazy_init();
  remote_cache_block *b;
  while ((b = remote_cache_find(o->id, no)) && b->state == REMOTE_CACHE_LOADING) {
    if (nowait) return pthread_mutex_unlock(&rc.mu), 0;
    pthread_cond_wait(&rc.done, &rc.mu);
  }
  if (b) {
    b->refs++;
    remote_cache_push_lru(b);
    if (!nowait) rc.count.hits++;
    pthread_mutex_unlock(&rc.mu);
    return *out = b, 0;
  }
  if (!(b = calloc(1, sizeof *b))) return pthread_mutex_unlock(&rc.mu), snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  b->id = o->id;
  b->no = no;
  b->state = REMOTE_CACHE_LOADING;
  size_t h = remote_cache_bucket(o->id, no);
  b->hnext = rc.table[h];
  rc.table[h] = b;
  pthread_mutex_unlock(&rc.mu);

  int from_disk;
  uint8_t *data = NULL;
  size_t len = 0;
  int code = remote_cache_load(o, no, &data, &len, &from_disk, err, errlen);
  pthread_mutex_lock(&rc.mu);
  if (code < 0) {
    remote_cache_remove(b);
  } else {
    b->data = data;
    b->len = len;
    b->state = REMOTE_CACHE_READY;
    b->refs = 1;
    rc.mem_bytes += len;
    remote_cache_push_lru(b);
    if (nowait) rc.count.prefetched++;
    else if (from_disk) rc.count.disk_hits++;
    else rc.count.misses++;
    remote_cache_evict();
    *out = b;
  }
  pthread_cond_broadcast(&rc.done);
  pthread_mutex_unlock(&rc.mu);
  return code;
}

static void remote_cache_release(remote_cache_block *b) {
  pthread_mutex_lock(&rc.mu);
  b->refs--;
  remote_cache_evict();
  pthread_mutex_unlock(&rc.mu);
}

/* rc.mu held: queue block no of o unless it is there or coming. */
static void remote_cache_enqueue(remote_object *o, int64_t no) {
  if (rc.nthreads == 0 || rc.qlen == REMOTE_CACHE_QUEUE || remote_cache_find(o->id, no)) return;
  rc.queue[(rc.qhead + rc.qlen++) % REMOTE_CACHE_QUEUE] = (remote_cache_job){o, no};
  pthread_cond_signal(&rc.work);
}

static void *remote_cache_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&rc.mu);
  for (;;) {
    while (!rc.stop && rc.qlen == 0) pthread_cond_wait(&rc.work, &rc.mu);
    if (rc.stop) break;
    remote_cache_job j = rc.queue[rc.qhead];
    rc.qhead = (rc.qhead + 1) % REMOTE_CACHE_QUEUE;
    rc.qlen--;
    pthread_mutex_unlock(&rc.mu);
    remote_cache_block *b;
    char why[512];
    /* A failure here is left for the reader, who will say it. */
    if (remote_cache_acquire(j.o, j.no, 1, &b, why, sizeof why) == 0 && b) remote_cache_release(b);
    pthread_mutex_lock(&rc.mu);
  }
  pthread_mutex_unlock(&rc.mu);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* The interface                                                       */

int remote_cache_setup(const remote_cache_cfg *cfg, char *err, size_t errlen) {
  char *dir = NULL;
  if (cfg->dir) {
    /* The folder and those above it, as `mkdir -p` makes them. */
    char path[4096];
    snprintf(path, sizeof path, "%s", cfg->dir);
    for (char *p = path + 1; *p; p++)
      if (*p == '/') *p = 0, mkdir(path, 0755), *p = '/';
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
      return snprintf(err, errlen, "remote cache folder %s: %s", cfg->dir, strerror(errno)), BFEED_EDATASET;
    if (!(dir = strdup(cfg->dir))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  }
  pthread_mutex_lock(&rc.mu);
  remote_cache_lazy_init();
  free(rc.dir);
  rc.dir = dir;
  uint64_t max = cfg->max_bytes ? cfg->max_bytes : REMOTE_CACHE_MAX_DEFAULT;
  rc.disk_max = max;
  rc.mem_max = dir && max > REMOTE_CACHE_MEM_WITH_DIR ? REMOTE_CACHE_MEM_WITH_DIR : max;
  if (cfg->http.timeout_ms) rc.http = cfg->http;
  int want = cfg->parallel > 0 ? cfg->parallel : REMOTE_CACHE_PARALLEL_DEFAULT;
  if (want > REMOTE_CACHE_MAX_THREADS) want = REMOTE_CACHE_MAX_THREADS;
  while (rc.nthreads < want && pthread_create(&rc.threads[rc.nthreads], NULL, remote_cache_thread, NULL) == 0)
    rc.nthreads++;
  remote_cache_evict();
  pthread_mutex_unlock(&rc.mu);
  remote_cache_trim(1); /* what the folder holds already, and the bound */
  return 0;
}

void remote_cache_shutdown(void) {
  pthread_mutex_lock(&rc.mu);
  rc.stop = 1;
  pthread_cond_broadcast(&rc.work);
  int n = rc.nthreads;
  pthread_mutex_unlock(&rc.mu);
  for (int i = 0; i < n; i++) pthread_join(rc.threads[i], NULL);
  pthread_mutex_lock(&rc.mu);
  rc.nthreads = 0;
  rc.qlen = 0;
  rc.stop = 0;
  for (size_t i = 0; i < REMOTE_CACHE_BUCKETS; i++)
    while (rc.table[i]) remote_cache_remove(rc.table[i]);
  free(rc.dir);
  rc.dir = NULL;
  pthread_mutex_unlock(&rc.mu);
}

void remote_cache_object_init(remote_object *o) {
  /* Each hash seeds the next: url, then ETag, under the size. */
  o->id = XXH64(o->etag, strlen(o->etag), XXH64(o->url, strlen(o->url), o->size));
  o->last_block = -2;
  o->changed = 0;
}

int remote_cache_read(remote_object *o, void *buf, size_t n, uint64_t off, size_t *got, char *err, size_t errlen) {
  *got = 0;
  if (off >= o->size || n == 0) return 0;
  if (n > o->size - off) n = (size_t)(o->size - off);
  uint8_t *out = buf;
  while (*got < n) {
    uint64_t at = off + *got;
    int64_t no = (int64_t)(at / REMOTE_CACHE_BLOCK);
    /* Read in order (the next block after the last): fetch ahead. */
    int64_t last = __atomic_exchange_n(&o->last_block, no, __ATOMIC_RELAXED);
    if (last == no - 1) {
      pthread_mutex_lock(&rc.mu);
      for (int64_t k = 1; k <= REMOTE_CACHE_READAHEAD && (uint64_t)(no + k) * REMOTE_CACHE_BLOCK < o->size; k++)
        remote_cache_enqueue(o, no + k);
      pthread_mutex_unlock(&rc.mu);
    }
    remote_cache_block *b;
    int code = remote_cache_acquire(o, no, 0, &b, err, errlen);
    if (code < 0) return code;
    size_t in = (size_t)(at - (uint64_t)no * REMOTE_CACHE_BLOCK);
    size_t k = b->len > in ? b->len - in : 0;
    if (k > n - *got) k = n - *got;
    memcpy(out + *got, b->data + in, k);
    remote_cache_release(b);
    if (k == 0) break;
    *got += k;
  }
  return 0;
}

void remote_cache_prefetch(remote_object *o, uint64_t off, uint64_t n) {
  if (off >= o->size || n == 0) return;
  uint64_t end = off + n < o->size ? off + n : o->size;
  pthread_mutex_lock(&rc.mu);
  remote_cache_lazy_init();
  for (uint64_t no = off / REMOTE_CACHE_BLOCK; no * REMOTE_CACHE_BLOCK < end; no++) remote_cache_enqueue(o, (int64_t)no);
  pthread_mutex_unlock(&rc.mu);
}

const remote_http_opts *remote_cache_http(void) {
  pthread_mutex_lock(&rc.mu);
  remote_cache_lazy_init();
  pthread_mutex_unlock(&rc.mu);
  return &rc.http;
}

void remote_cache_counters_get(remote_cache_counters *out) {
  pthread_mutex_lock(&rc.mu);
  *out = rc.count;
  out->bytes_memory = rc.mem_bytes;
  out->bytes_disk = rc.disk_bytes;
  pthread_mutex_unlock(&rc.mu);
}
