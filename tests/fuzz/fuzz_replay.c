/*
 * fuzz_replay.c -- runs the fuzz entry point without libFuzzer, so that
 * every build (gcc included) exercises it:
 *
 *   fuzz_proto_replay [CORPUS_DIR]       replay the corpus, then the seeds
 *                                        and deterministic mutations of them
 *   fuzz_proto_replay --write-corpus DIR write the seed frames as files
 *
 * The seeds are valid frames of every message, built with the encoders.
 * The run fails when a property in fuzz_proto.c aborts, when a seed is not
 * accepted by its own decoder, or when some parser never both accepted and
 * refused an input (the mutations would then not be testing it).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "splitmix.h"
#include "fuzz_proto.h"
#include "msg.h"
#include "tlv.h"

enum { REPLAY_MUTATIONS = 20000, REPLAY_MAX_INPUT = 4096, REPLAY_MAX_SEEDS = 32 };

typedef struct seed {
  const char *name;
  int expect; /* FUZZ_* bits its decoder must set */
  uint8_t *data;
  size_t size;
} seed;

typedef struct seeds {
  seed s[REPLAY_MAX_SEEDS];
  int n;
} seeds;

static seed *new_seed(seeds *ss, const char *name, int ok) {
  if (!ok || ss->n == REPLAY_MAX_SEEDS) {
    fprintf(stderr, "fuzz_proto_replay: cannot build seed %s\n", name);
    exit(1);
  }
  seed *s = &ss->s[ss->n++];
  s->name = name;
  return s;
}

/* Take the frame begun at 0 in w as a seed. */
static void add_frame(seeds *ss, const char *name, int expect, wbuf *w, int type) {
  seed *s = new_seed(ss, name, msg_finish(w, 0, type, 1) == 0);
  s->expect = FUZZ_HEADER | expect;
  s->data = wbuf_take(w, &s->size);
}

/* An address, as bfeedd --listen or bfeed --connect would get it. */
static void add_text(seeds *ss, const char *name, const char *text) {
  seed *s = new_seed(ss, name, 1);
  s->expect = FUZZ_ADDR;
  s->size = strlen(text);
  s->data = malloc(s->size);
  if (!s->data) abort();
  memcpy(s->data, text, s->size);
}

static void build_seeds(seeds *ss) {
  wbuf w;
  ss->n = 0;

  msg_hello hello = {.min_version = 1, .max_version = 1, .agent = "libbfeed/0.1.0"};
  wbuf_init(&w);
  msg_begin(&w);
  msg_hello_encode(&w, &hello);
  add_frame(ss, "hello", FUZZ_HELLO, &w, FRAME_HELLO);

  msg_hello_ok hello_ok = {.version = 1, .max_frame = FRAME_MAX_PAYLOAD, .server = "bfeedd/0.1.0"};
  wbuf_init(&w);
  msg_begin(&w);
  msg_hello_ok_encode(&w, &hello_ok);
  add_frame(ss, "hello_ok", FUZZ_HELLO_OK, &w, FRAME_HELLO_OK);

  msg_open open;
  memset(&open, 0, sizeof open);
  strcpy(open.dataset, "imagenet");
  msg_opts_defaults(&open.opts);
  wbuf_init(&w);
  msg_begin(&w);
  msg_open_encode(&w, &open);
  add_frame(ss, "open_defaults", FUZZ_OPEN | FUZZ_TLV, &w, FRAME_OPEN);

  open.opts.batch = 256;
  open.opts.size = 160;
  open.opts.mode = BFEED_MODE_EVAL;
  open.opts.normalize = BFEED_NORM_CUSTOM;
  open.opts.std[1] = 0.5f;
  open.opts.seed = UINT64_MAX;
  open.opts.shard_index = 3;
  open.opts.shard_count = 8;
  open.opts.codec = BFEED_CODEC_ZSTD;
  open.opts.keep_partial = 1;
  open.opts.epochs = 90;
  open.opts.select = BFEED_SELECT_RESIDUE;
  open.opts.select_mod = 3;
  open.opts.select_rem = 2;
  wbuf_init(&w);
  msg_begin(&w);
  msg_open_encode(&w, &open);
  tlv_put_str(&w, 0x0063, "a hint");
  add_frame(ss, "open_options", FUZZ_OPEN | FUZZ_TLV, &w, FRAME_OPEN);

  msg_open_ok open_ok = {.samples = 1281167, .batches_per_epoch = 5004, .classes = 1000,
                         .fingerprint = 0x9e3779b97f4a7c15ull, .features = MSG_FEATURE_TIMING};
  wbuf_init(&w);
  msg_begin(&w);
  msg_open_ok_encode(&w, &open_ok);
  add_frame(ss, "open_ok", FUZZ_OPEN_OK, &w, FRAME_OPEN_OK);

  static msg_request req = {.count = 3, .b = {{0, 7}, {2, 0}, {UINT64_MAX, UINT64_MAX}}};
  wbuf_init(&w);
  msg_begin(&w);
  msg_request_encode(&w, &req);
  add_frame(ss, "request", FUZZ_REQUEST, &w, FRAME_REQUEST);

  wbuf_init(&w);
  msg_begin(&w);
  msg_u64_encode(&w, 12);
  add_frame(ss, "ack", FUZZ_U64, &w, FRAME_ACK);

  msg_timing timing = {.batches = 99, .wait_us = 1234567, .step_us = 7654321, .wait_p50_us = 900,
                       .wait_p99_us = 40000, .first_wait_us = 250000, .expand_us = 17, .flags = MSG_TIMING_LOOP};
  wbuf_init(&w);
  msg_begin(&w);
  msg_timing_encode(&w, &timing);
  add_frame(ss, "timing", FUZZ_TIMING, &w, FRAME_TIMING);

  wbuf_init(&w);
  msg_begin(&w);
  msg_classes_req_encode(&w, &(msg_classes_req){.first = 1056});
  add_frame(ss, "classes_req", FUZZ_CLASSES_REQ, &w, FRAME_CLASSES_REQ);

  static const char *const class_names[] = {"n01440764", "tench, Tinca tinca", "caf\xc3\xa9"};
  wbuf_init(&w);
  msg_begin(&w);
  msg_classes_encode(&w, 1000, 997, class_names, 3, MSG_CLASSES_MAX);
  add_frame(ss, "classes", FUZZ_CLASSES, &w, FRAME_CLASSES);

  wbuf_init(&w);
  msg_begin(&w);
  msg_error_encode(&w, BFEED_ENODATASET, "no dataset \"x\"; served: imagenet");
  add_frame(ss, "error", FUZZ_ERROR, &w, FRAME_ERROR);

  msg_counter c[3] = {{"samples", 4096}, {"batches", 16}, {"wire_bytes", UINT64_MAX}};
  wbuf_init(&w);
  msg_begin(&w);
  msg_stats_encode(&w, c, 3);
  add_frame(ss, "stats", FUZZ_STATS, &w, FRAME_STATS);

  /* An image stream's batch: image bf16 [2,3,4,4], label i32 [2], index i64 [2]. */
  msg_batch b = {.epoch = 3, .index = 7, .seq = 40, .codec = BFEED_CODEC_NONE, .ntensors = 3,
                 .raw_size = 272,
                 .t = {{"image", BFEED_DTYPE_BF16, 4, {2, 3, 4, 4}, 0, 192},
                       {"label", BFEED_DTYPE_I32, 1, {2}, 192, 8},
                       {"index", BFEED_DTYPE_I64, 1, {2}, 256, 16}}};
  /* One per codec; zstd's data is a stand-in compressed frame, u8's is the
   * 1540-byte normalization head, 96 image bytes and the 80 other bytes. */
  static const struct {
    const char *name;
    bfeed_codec codec;
    size_t data;
  } codecs[] = {{"batch", BFEED_CODEC_NONE, 272},
                {"batch_zstd", BFEED_CODEC_ZSTD, 29},
                {"batch_u8", BFEED_CODEC_U8, MSG_U8_HEAD + 96 + 80},
                {"batch_u8_zstd", BFEED_CODEC_U8_ZSTD, 31}};
  for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
    b.codec = codecs[k].codec;
    wbuf_init(&w);
    msg_begin(&w);
    msg_batch_encode_head(&w, &b);
    for (size_t i = 0; i < codecs[k].data; i++) wbuf_u8(&w, (uint8_t)(i * 13));
    add_frame(ss, codecs[k].name, FUZZ_BATCH, &w, FRAME_BATCH);
  }

  wbuf_init(&w);
  msg_begin(&w);
  add_frame(ss, "close", FUZZ_TLV, &w, FRAME_CLOSE);

  add_text(ss, "addr_unix", "unix:/run/bfeed/bfeedd.sock");
  add_text(ss, "addr_v4", "127.0.0.1:7070");
  add_text(ss, "addr_v6", "[::1]:7070");
}

/* splitmix64: a fixed sequence, so every run tries the same inputs. */
static uint64_t next_rand(uint64_t *state) { return splitmix64_next(state); }
static size_t below(uint64_t *st, size_t n) { return n ? (size_t)(next_rand(st) % n) : 0; }

/* Values that sit on the limits the decoders check. */
static const uint64_t interesting[] = {
    0, 1, 2, 6, 7, 8, 9, 12, 16, 17, 31, 32, 63, 64, 65, 127, 128, 255, 256,
    0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xffffffffu, 1ull << 30,
    (1ull << 30) + 1, 1ull << 32, 1ull << 33, 1ull << 63, UINT64_MAX - 7, UINT64_MAX,
};

static void mutate_once(uint64_t *st, uint8_t *buf, size_t *size, const seeds *ss) {
  size_t n = *size;
  switch (below(st, 8)) {
    case 0: /* flip a bit */
      if (n) buf[below(st, n)] ^= (uint8_t)(1u << below(st, 8));
      break;
    case 1: /* set a byte */
      if (n) buf[below(st, n)] = (uint8_t)interesting[below(st, sizeof interesting / 8)];
      break;
    case 2: { /* overwrite a little-endian integer of 2, 4 or 8 bytes */
      size_t width = (size_t)2 << below(st, 3);
      if (n < width) break;
      size_t at = below(st, n - width + 1);
      uint64_t v = interesting[below(st, sizeof interesting / 8)];
      for (size_t i = 0; i < width; i++) buf[at + i] = (uint8_t)(v >> (8 * i));
      break;
    }
    case 3: /* truncate */
      *size = below(st, n + 1);
      break;
    case 4: { /* insert random bytes */
      size_t k = 1 + below(st, 16), at = below(st, n + 1);
      if (n + k > REPLAY_MAX_INPUT) break;
      memmove(buf + at + k, buf + at, n - at);
      for (size_t i = 0; i < k; i++) buf[at + i] = (uint8_t)next_rand(st);
      *size = n + k;
      break;
    }
    case 5: { /* delete a range */
      if (!n) break;
      size_t at = below(st, n), k = 1 + below(st, n - at);
      memmove(buf + at, buf + at + k, n - at - k);
      *size = n - k;
      break;
    }
    case 6: { /* copy a range over another place */
      if (!n) break;
      size_t from = below(st, n), to = below(st, n);
      size_t k = 1 + below(st, n - (from > to ? from : to));
      memmove(buf + to, buf + from, k);
      break;
    }
    default: { /* splice: keep a head, append the tail of another seed */
      const seed *o = &ss->s[below(st, (size_t)ss->n)];
      size_t keep = below(st, n + 1), from = below(st, o->size + 1);
      size_t k = o->size - from;
      if (keep + k > REPLAY_MAX_INPUT) k = REPLAY_MAX_INPUT - keep;
      memcpy(buf + keep, o->data + from, k);
      *size = keep + k;
      break;
    }
  }
}

/* Half the time make the header describe the mutated payload, as a peer
 * that builds bad messages but good frames would. */
static void fix_frame(uint64_t *st, uint8_t *buf, size_t size) {
  if (size < FRAME_HEADER_SIZE || below(st, 2)) return;
  frame_header h;
  if (frame_header_decode(buf, FRAME_MAX_PAYLOAD, &h, NULL, 0) != 0) return;
  frame_header_init(&h, h.type, h.stream, buf + FRAME_HEADER_SIZE,
                    (uint32_t)(size - FRAME_HEADER_SIZE));
  frame_header_encode(&h, buf);
}

typedef struct tally {
  long accepted[16], refused[16], runs;
} tally;

/* Run one input from a buffer of exactly its size. */
static int run_one(tally *t, const uint8_t *data, size_t size) {
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) abort();
  if (size) memcpy(copy, data, size);
  int bits = fuzz_proto_one(copy, size);
  free(copy);
  for (int b = 0; b < 16; b++) {
    if (!(FUZZ_ALL_ & (1 << b))) continue;
    if (bits & (1 << b))
      t->accepted[b]++;
    else
      t->refused[b]++;
  }
  t->runs++;
  return bits;
}

static int replay_dir(tally *t, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "fuzz_proto_replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int files = 0;
  static uint8_t buf[1 << 20];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    run_one(t, buf, n);
    files++;
  }
  closedir(d);
  return files;
}

static int write_corpus(const seeds *ss, const char *dir) {
  for (int i = 0; i < ss->n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, ss->s[i].name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(ss->s[i].data, 1, ss->s[i].size, f) != ss->s[i].size || fclose(f) != 0) {
      fprintf(stderr, "fuzz_proto_replay: cannot write %s\n", path);
      return 1;
    }
  }
  printf("wrote %d seeds to %s\n", ss->n, dir);
  return 0;
}

int main(int argc, char **argv) {
  seeds ss;
  build_seeds(&ss);
  if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0) return write_corpus(&ss, argv[2]);
  if (argc > 2) {
    fprintf(stderr, "usage: %s [CORPUS_DIR] | --write-corpus DIR\n", argv[0]);
    return 2;
  }

  tally t;
  memset(&t, 0, sizeof t);
  int failed = 0;
  if (argc == 2) {
    int files = replay_dir(&t, argv[1]);
    if (files <= 0) {
      fprintf(stderr, "fuzz_proto_replay: no corpus files in %s\n", argv[1]);
      failed = 1;
    }
    printf("corpus: %d files\n", files);
  }
  for (int i = 0; i < ss.n; i++) {
    int bits = run_one(&t, ss.s[i].data, ss.s[i].size);
    if ((bits & ss.s[i].expect) != ss.s[i].expect) {
      fprintf(stderr, "seed %s: accepted by 0x%x, expected 0x%x\n", ss.s[i].name, bits,
              ss.s[i].expect);
      failed = 1;
    }
  }

  static uint8_t buf[REPLAY_MAX_INPUT];
  uint64_t st = 0x62666565642d7131ull;
  for (int i = 0; i < REPLAY_MUTATIONS; i++) {
    const seed *s = &ss.s[below(&st, (size_t)ss.n)];
    size_t size = s->size;
    memcpy(buf, s->data, size);
    for (size_t k = 1 + below(&st, 4); k > 0; k--) mutate_once(&st, buf, &size, &ss);
    fix_frame(&st, buf, size);
    run_one(&t, buf, size);
  }

  static const char *const names[] = {"header",  "hello",  "hello_ok", "open",   "open_ok",     "u64",
                                      "error",   "stats",  "batch",    "tlv",    "addr",        "freader",
                                      "request", "timing", "classes_req", "classes"};
  printf("%ld inputs; accepted/refused per parser:\n", t.runs);
  for (int b = 0; b < (int)(sizeof names / sizeof names[0]); b++) {
    printf("  %-9s %6ld %6ld\n", names[b], t.accepted[b], t.refused[b]);
    if (!t.accepted[b] || !t.refused[b]) {
      fprintf(stderr, "parser %s was not driven both ways\n", names[b]);
      failed = 1;
    }
  }
  for (int i = 0; i < ss.n; i++) free(ss.s[i].data);
  return failed;
}
