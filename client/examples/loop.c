/*
 * loop.c -- the README's training loop as a whole program: read one epoch
 * of a dataset from bfeedd, checking every call, and say what came.
 *
 *   cc loop.c -o loop $(pkg-config --cflags --libs bfeed)
 *   ./loop unix:/run/bfeed/bfeedd.sock imagenet
 *
 * Exits 0 after the epoch, 1 with the library's message on any error (no
 * daemon, no such dataset, a batch that does not arrive), 2 on bad usage.
 * The tests build it against the build tree and against an installed
 * bfeed.pc, and run it on a real daemon.
 */
#include <bfeed.h>
#include <stdio.h>

static int fail(const char *what, const bfeed_error *err) {
  fprintf(stderr, "loop: %s: %s\n", what, err->message);
  return 1;
}

/* "image bf16 [64, 3, 224, 224]" */
static void print_tensor(const bfeed_tensor *t) {
  printf("  %s %s [", t->name, bfeed_dtype_name(t->dtype));
  for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  printf("]\n");
}

int main(int argc, char **argv) {
  bfeed_client *c;
  bfeed_stream *s;
  bfeed_batch *b;
  bfeed_error err;
  bfeed_stream_opts o;
  if (argc != 3) {
    fprintf(stderr, "usage: loop ADDR DATASET   (ADDR: unix:PATH or HOST:PORT)\n");
    return 2;
  }
  if (bfeed_connect(argv[1], &c, &err) < 0) return fail("connect", &err);
  bfeed_stream_opts_init(&o);
  o.batch = 64;
  o.size = 224;
  o.seed = 42;
  o.epochs = 1; /* the default, 0, streams forever */
  if (bfeed_stream_open(c, argv[2], &o, &s, &err) < 0) {
    bfeed_close(c);
    return fail("open", &err);
  }
  unsigned long long batches = 0, samples = 0;
  int rc;
  while ((rc = bfeed_stream_next(s, &b, &err)) == 0) {
    bfeed_tensor index;
    if (batches == 0) {
      printf("first batch:\n");
      for (int i = 0; i < bfeed_batch_ntensors(b); i++) {
        bfeed_tensor t;
        bfeed_batch_tensor(b, i, &t); /* t.data: 64-byte aligned, valid until the release */
        print_tensor(&t);
      }
    }
    if (bfeed_batch_find(b, "index", &index) == 0) samples += (unsigned long long)index.shape[0];
    /* ... copy the tensors to the device, train ... */
    bfeed_batch_release(b);
    batches++;
  }
  /* The loop ends at the end of the epoch (BFEED_EEOF) or on an error. */
  if (rc != BFEED_EEOF) {
    fail("next batch", &err);
    bfeed_stream_close(s);
    bfeed_close(c);
    return 1;
  }
  printf("epoch done: %llu batches, %llu samples\n", batches, samples);
  bfeed_stream_close(s);
  bfeed_close(c);
  return 0;
}
