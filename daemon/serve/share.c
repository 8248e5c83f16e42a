/* share.c -- see share.h. Three things: classes (streams that agree on the
 * bytes), entries (one batch of a class: its build, who waits for it, who
 * holds it) and members (one stream's place in its class). */
#include "share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "msg.h"
#include "opts.h"
#include "shm_ring.h"

typedef struct share_class share_class;

typedef struct share_entry {
  share_class *cls;
  struct share_entry *next;
  uint64_t g;         /* epoch x batches per epoch + index */
  batch_job *build;   /* the class's job making it; finished once `built` */
  int built;
  int findable;       /* in the table: a stream asking for g gets it */
  unsigned refs;      /* copy jobs holding it (waiting for it, or made from it) */
  batch_job *waiting; /* copy jobs waiting for the build (linked by ->next) */
  uint64_t bytes;     /* counted in share_held: the estimate, then the built buffer */
  shm_ring *ring;     /* built in slot `slot` of this class ring (a reference and a hold), or NULL */
  int slot;
} share_entry;

struct share_member {
  share_class *cls;
  share_member *next;
  void *owner;
  uint64_t cursor; /* the next batch (g) it schedules, at most */
  uint64_t span;   /* horizon x stride, 0: from the window */
  uint32_t window;
  uint64_t stride;
  int shm;         /* its stream takes batches in shared memory (share_shm_join) */
};

struct share_class {
  share *sh;
  share_class *next;
  const dataset *ds;
  uint64_t fingerprint;
  int codec, codec_level;
  uint64_t bpe;
  batch_spec spec;     /* the class's own: its builds outlive any stream */
  epoch_cache orders;
  uint64_t estimate;   /* a build's buffer before it is made */
  share_member *members;
  unsigned nmembers;
  share_entry *entries;
  uint64_t held;       /* bytes of its entries */
  unsigned shm_members; /* of its members, those on shared memory */
  uint64_t slot_size;   /* their largest batch, page-rounded */
  shm_ring *ring;       /* the ring they share once there are two (NULL before): a reference */
};

struct share {
  workers *wk;          /* NULL once stopping */
  int (*fits)(void *arg, uint64_t bytes); /* whether a cold ring slot's memory fits (share_set_fits) */
  void *fits_arg;
  const uint32_t *horizon;
  share_class *classes;
  uint64_t held, builds, alive;
};

share *share_new(workers *wk, const uint32_t *horizon) {
  share *sh = calloc(1, sizeof *sh);
  if (!sh) return NULL;
  sh->wk = wk;
  sh->horizon = horizon;
  return sh;
}

void share_set_fits(share *sh, int (*fits)(void *arg, uint64_t bytes), void *arg) {
  sh->fits = fits;
  sh->fits_arg = arg;
}

static int share_fits(const share *sh, uint64_t bytes) { return !sh->fits || sh->fits(sh->fits_arg, bytes); }
static int share_fits_cb(void *sh, uint64_t bytes) { return share_fits(sh, bytes); }

void share_stop(share *sh) {
  if (sh) sh->wk = NULL;
}

uint64_t share_held(const share *sh) { return sh ? sh->held : 0; }
uint64_t share_builds(const share *sh) { return sh ? sh->builds : 0; }
uint64_t share_batches_held(const share *sh) { return sh ? sh->alive : 0; }

/* ------------------------------------------------------------------ */
/* Classes and entries                                                 */

/* nmembers also counts the callers that must see the class outlive them
 * (a sweep, a build coming back): freeing an entry may free its class. */
static void share_class_maybe_free(share_class *c) {
  if (c->nmembers || c->entries) return;
  for (share_class **p = &c->sh->classes; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  epoch_cache_free(&c->orders);
  dataset_unref(c->spec.ds);
  shm_ring_free(c->ring);
  free(c);
}

/* The entry lets go of its slot (the ring may go with it). */
static void share_entry_unslot(share_entry *e) {
  if (!e->ring) return;
  shm_ring_drop(e->ring, (uint32_t)e->slot);
  shm_ring_free(e->ring);
  e->ring = NULL;
}

static void share_entry_count(share_entry *e, uint64_t bytes) {
  e->cls->held += bytes - e->bytes;
  e->cls->sh->held += bytes - e->bytes;
  e->bytes = bytes;
}

/* Free e once nothing holds it and nobody can find it; a build still
 * queued is cancelled, one running finishes first (share_on_built). */
static void share_entry_maybe_free(share_entry *e) {
  if (e->refs || e->findable) return;
  share_class *c = e->cls;
  if (!e->built) {
    batch_job *j = c->sh->wk ? workers_cancel(c->sh->wk, e) : NULL;
    if (!j) return; /* running: freed when it comes back */
    batch_job_free(j);
    e->build = NULL;
  }
  for (share_entry **p = &c->entries; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  share_entry_count(e, 0);
  c->sh->alive--;
  batch_job_free(e->build);
  share_entry_unslot(e);
  free(e);
  share_class_maybe_free(c);
}

static int share_wanted(const share_class *c, uint64_t g);

/* batch_job_free of a copy job: it lets go of its batch, which goes with
 * the last job unless a stream will want it. */
static void share_entry_unref(void *arg) {
  share_entry *e = arg;
  if (--e->refs == 0 && e->findable && !share_wanted(e->cls, e->g)) e->findable = 0;
  share_entry_maybe_free(e);
}

/* Whether a stream of the class will ask for g soon: g is at most its
 * horizon of its own batches past the next it schedules. */
static int share_wanted(const share_class *c, uint64_t g) {
  for (const share_member *m = c->members; m; m = m->next) {
    uint64_t span = *c->sh->horizon ? (uint64_t)*c->sh->horizon * m->stride : 2ull * m->window * m->stride;
    if (g >= m->cursor && g - m->cursor < span) return 1;
  }
  return 0;
}

/* Take out of the table what no job holds and nobody will want. */
static void share_sweep(share_class *c) {
  c->nmembers += 1; /* the class outlives the sweep */
  for (share_entry *e = c->entries, *next; e; e = next) {
    next = e->next;
    if (e->findable && !e->refs && !share_wanted(c, e->g)) {
      e->findable = 0;
      share_entry_maybe_free(e);
    }
  }
  c->nmembers -= 1;
}

static share_entry *share_find(const share_class *c, uint64_t g) {
  for (share_entry *e = c->entries; e; e = e->next)
    if (e->findable && e->g == g) return e;
  return NULL;
}

int share_trim(share *sh) {
  int any = 0;
  if (!sh) return 0;
  for (share_class *c = sh->classes, *next; c; c = next) {
    next = c->next;
    c->nmembers += 1;
    for (share_entry *e = c->entries, *en; e; e = en) {
      en = e->next;
      if (!e->findable || e->refs || !e->built) continue;
      e->findable = 0;
      share_entry_maybe_free(e);
      any = 1;
    }
    c->nmembers -= 1;
    share_class_maybe_free(c);
  }
  return any;
}

/* A class's build finished: its waiting copies go to the workers (first,
 * ahead of the builds), or fail with it. */
static void share_on_built(batch_job *b) {
  share_entry *e = b->owner;
  share_class *c = e->cls;
  e->built = 1;
  e->refs++; /* a failed copy is freed below, and may have been the last to hold e */
  c->nmembers += 1;
  c->sh->builds++;
  if (b->rc == 0) share_entry_count(e, b->buf_cap);
  else e->findable = 0; /* asked again, it is built again */
  batch_job *w = e->waiting;
  e->waiting = NULL;
  while (w) {
    batch_job *next = w->next;
    w->next = NULL;
    if (b->rc == 0 && c->sh->wk) {
      w->src = b;
      workers_submit_first(c->sh->wk, w);
    } else {
      w->rc = b->rc < 0 ? b->rc : BFEED_ESHUTDOWN;
      snprintf(w->err, sizeof w->err, "%s", b->rc < 0 ? b->err : "bfeedd is shutting down");
      w->done(w);
    }
    w = next;
  }
  share_sweep(c);
  e->refs--;
  share_entry_maybe_free(e);
  c->nmembers -= 1;
  share_class_maybe_free(c);
}

/* ------------------------------------------------------------------ */
/* Members                                                             */

share_member *share_join(share *sh, const batch_spec *spec, uint64_t fingerprint, uint64_t bpe, uint32_t window,
                         uint64_t stride, void *owner) {
  if (!sh) return NULL;
  share_member *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  const bfeed_stream_opts *o = &spec->opts;
  share_class *c;
  for (c = sh->classes; c; c = c->next)
    if (c->ds == spec->ds && c->fingerprint == fingerprint && c->codec == (int)o->codec &&
        c->codec_level == o->codec_level && c->bpe == bpe)
      break;
  if (!c) {
    if (!(c = calloc(1, sizeof *c))) return free(m), NULL;
    c->sh = sh;
    c->ds = spec->ds;
    c->fingerprint = fingerprint;
    c->codec = (int)o->codec;
    c->codec_level = o->codec_level;
    c->bpe = bpe;
    c->spec = *spec;
    c->spec.stream_id = 0; /* each copy writes its own */
    dataset_ref(spec->ds);
    epoch_cache_init(&c->orders, &c->spec, opts_shuffled(&c->spec.opts));
    c->estimate = batch_frame_estimate(&c->spec);
    c->next = sh->classes;
    sh->classes = c;
  }
  m->cls = c;
  m->owner = owner;
  m->window = window;
  m->stride = stride ? stride : 1;
  m->cursor = UINT64_MAX; /* wants nothing until it schedules */
  m->next = c->members;
  c->members = m;
  c->nmembers++;
  return m;
}

batch_job *share_leave(share_member *m) {
  if (!m) return NULL;
  share_class *c = m->cls;
  batch_job *out = NULL;
  for (share_entry *e = c->entries; e; e = e->next)
    for (batch_job **p = &e->waiting; *p;) {
      batch_job *j = *p;
      if (j->owner != m->owner) {
        p = &j->next;
        continue;
      }
      *p = j->next;
      j->next = out;
      out = j;
    }
  for (share_member **p = &c->members; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  c->shm_members -= m->shm != 0;
  free(m);
  share_sweep(c);
  c->nmembers--;
  share_class_maybe_free(c);
  /* The jobs returned still hold their entries: the caller's batch_job_free lets go of them. */
  return out;
}

uint64_t share_cost(const share_member *m, uint64_t epoch, uint64_t index) {
  return share_find(m->cls, epoch * m->cls->bpe + index) ? 0 : m->cls->estimate;
}

uint64_t share_charged(const share_member *m) { return m->cls->held / (m->cls->nmembers ? m->cls->nmembers : 1); }

/* A new entry for g, its build queued behind the others: in the job's
 * slot when that is a slot of a class ring (ring), the slot then held by
 * the entry too, and counted as the ring's memory, not the entry's; for a
 * stream not on the ring (the socket, or a ring of its own) in a free
 * slot of the class's ring if it has one, so that the streams on the ring
 * read it there and copy nothing. */
static share_entry *share_start(share_class *c, const batch_job *job, uint64_t g, shm_ring *ring) {
  share_entry *e = calloc(1, sizeof *e);
  batch_job *b = e ? calloc(1, sizeof *b) : NULL;
  if (!b) return free(e), NULL;
  e->cls = c;
  e->g = g;
  e->findable = 1;
  e->build = b;
  e->next = c->entries;
  c->entries = e;
  c->sh->alive++;
  int slot = ring && job->shm_slot ? (int)job->shm_index : -1;
  if (slot >= 0) {
    shm_ring_hold(ring, (uint32_t)slot);
  } else if (c->ring && c->shm_members && (slot = shm_ring_take(c->ring, share_fits_cb, c->sh)) >= 0) {
    ring = c->ring; /* taken: held once, for the entry */
  }
  if (slot >= 0) {
    e->ring = ring;
    e->slot = slot;
    shm_ring_ref(ring);
    b->shm_slot = shm_ring_slot(ring, (uint32_t)slot);
    b->shm_index = (uint32_t)slot;
    b->shm_slot_size = shm_ring_slot_size(ring);
  }
  share_entry_count(e, e->ring ? 0 : c->estimate);
  b->spec = &c->spec;
  b->orders = &c->orders;
  b->buffers = c->spec.buffers;
  b->epoch = job->epoch;
  b->index = job->index;
  b->seq = job->seq; /* a stream counting it at this seq sends it as it is */
  b->first = job->first;
  b->count = job->count;
  b->owner = e;
  b->done = share_on_built;
  workers_submit(c->sh->wk, b);
  return e;
}

void share_submit(share_member *m, batch_job *job, shm_ring *ring) {
  share_class *c = m->cls;
  uint64_t g = job->epoch * c->bpe + job->index;
  m->cursor = g + 1;
  share_entry *e = c->sh->wk ? share_find(c, g) : NULL;
  job->shared = e != NULL;
  if (!e && c->sh->wk) e = share_start(c, job, g, ring);
  if (!e) {
    job->rc = c->sh->wk ? BFEED_ENOMEM : BFEED_ESHUTDOWN;
    snprintf(job->err, sizeof job->err, "%s", c->sh->wk ? "out of memory sharing a batch" : "bfeedd is shutting down");
    job->done(job);
    return;
  }
  e->refs++;
  job->unref = share_entry_unref;
  job->unref_arg = e;
  if (e->built) {
    job->src = e->build;
    workers_submit_first(c->sh->wk, job);
  } else {
    job->next = e->waiting;
    e->waiting = job;
  }
  share_sweep(c);
}

/* ------------------------------------------------------------------ */
/* Shared memory                                                       */

void share_shm_join(share_member *m, uint64_t slot_size) {
  if (m->shm) return;
  m->shm = 1;
  m->cls->shm_members++;
  if (slot_size > m->cls->slot_size) m->cls->slot_size = slot_size;
}

/* A class ring is made when a second stream on shared memory joins, and
 * made afresh when the one in use has too few free slots for a stream
 * that comes (slots whose batches clients of closed streams may still
 * read are never written again): the streams on the old one keep it. */
int share_ring_ready(const share_member *m) { return m->shm && m->cls->shm_members >= 2; }

shm_ring *share_ring(share_member *m, const logger *log) {
  share_class *c = m->cls;
  uint64_t need = 2ull * ((uint64_t)m->window + 2);
  if (!share_ring_ready(m)) return NULL;
  if (c->ring && shm_ring_free_slots(c->ring) < need) {
    shm_ring_free(c->ring);
    c->ring = NULL;
  }
  if (!c->ring) {
    char err[256];
    if (!(c->ring = shm_ring_new_cold(MSG_SHM_MAX_SLOTS, c->slot_size, err, sizeof err))) {
      log_warn(log, "dataset %s: a ring for streams that share their batches: %s; each keeps its own", c->ds->name,
               err);
      return NULL;
    }
  }
  shm_ring_ref(c->ring);
  return c->ring;
}

int share_slot(share_member *m, shm_ring *ring, uint64_t epoch, uint64_t index, uint64_t avoid) {
  share_entry *e = share_find(m->cls, epoch * m->cls->bpe + index);
  if (e && e->ring == ring && !(avoid >> e->slot & 1)) {
    shm_ring_hold(ring, (uint32_t)e->slot);
    return e->slot;
  }
  return shm_ring_take(ring, share_fits_cb, m->cls->sh);
}

void share_free(share *sh) {
  if (!sh) return;
  while (sh->classes) {
    share_class *c = sh->classes;
    while (c->members) {
      share_member *m = c->members;
      c->members = m->next;
      free(m);
    }
    c->nmembers = 0;
    while (c->entries) {
      share_entry *e = c->entries;
      c->entries = e->next;
      batch_job_free(e->build);
      share_entry_unslot(e);
      free(e);
    }
    sh->classes = c->next;
    epoch_cache_free(&c->orders);
    dataset_unref(c->spec.ds);
    shm_ring_free(c->ring);
    free(c);
  }
  free(sh);
}
