/*
 * test_text_memory.c -- a text dataset with one line of 3 Mi tokens, through
 * the real daemon under --max-memory 256M (vectors of 16 dimensions: 32
 * bytes a token; unbounded, a batch of 4 holding that line is 402 MB).
 *
 * The dataset is written here: 16 fastText lines of ten words, one of them
 * 3 x 2^20 tokens long, and a table of four words.
 *  - With no max_len anywhere, the line is served at the default cap,
 *    16 MiB of vectors (524288 tokens), the others whole, and the daemon's
 *    peak RSS stays within max_memory and its slack.
 *  - Three streams of batch 8 on one connection (a raw client that reads
 *    nothing): the first is served, the others are refused at OPEN with
 *    ELIMIT and a message saying what fits (a batch, a max_len) and how
 *    long the longest line is; the peak RSS stays bounded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsuite.h"

#define TXT_MIB MEMSUITE_MIB
#define TXT_LINES 16
#define TXT_LONG_LINE 5
#define TXT_LONG (3u << 20)
#define TXT_DIM 16
#define TXT_CAP (16u * (1u << 20) / (2 * TXT_DIM)) /* the default cap: 16 MiB of vectors */
#define TXT_MAX_MEMORY (256 * TXT_MIB)

static char txt_arg[600]; /* the dataset, "t=text:..." */

static int txt_setup(void **state) {
  (void)state;
  char vec[256], text[256];
  if (memsuite_make_root() < 0) return -1;
  snprintf(vec, sizeof vec, "%s/v.vec", memsuite_the.root);
  snprintf(text, sizeof text, "%s/t.txt", memsuite_the.root);
  static const char *const words[] = {"a", "b", "c", "d"};
  char table[1024];
  size_t k = (size_t)snprintf(table, sizeof table, "4 %d\n", TXT_DIM);
  for (int w = 0; w < 4; w++) {
    k += (size_t)snprintf(table + k, sizeof table - k, "%s", words[w]);
    for (int d = 0; d < TXT_DIM; d++) k += (size_t)snprintf(table + k, sizeof table - k, " 0.%d", (w * 5 + d) % 10);
    table[k++] = '\n';
  }
  size_t cap = (size_t)TXT_LONG * 2 + 4096, n = 0;
  char *lines = malloc(cap);
  if (!lines || itest_write_file(vec, table, k) < 0) return free(lines), -1;
  for (int i = 0; i < TXT_LINES; i++) {
    n += (size_t)snprintf(lines + n, cap - n, "__label__%d", i % 2);
    for (uint32_t t = 0; t < (i == TXT_LONG_LINE ? TXT_LONG : 10); t++) {
      lines[n++] = ' ';
      lines[n++] = words[i == TXT_LONG_LINE ? 0 : (i + t) % 4][0];
    }
    lines[n++] = '\n';
  }
  int rc = itest_write_file(text, lines, n);
  free(lines);
  snprintf(txt_arg, sizeof txt_arg, "t=text:%s,vectors=%s,cache=0", text, vec);
  return rc;
}

static const char *const txt_args[] = {"--max-memory", "256M", NULL};

static void txt_opts(bfeed_stream_opts *o, uint32_t batch) {
  bfeed_stream_opts_init(o);
  o->batch = batch;
  o->shuffle = BFEED_SHUFFLE_OFF;
  o->epochs = 1;
}

/* No max_len: the long line is served at the default cap, the others whole. */
static void test_long_line_default_cap(void **state) {
  (void)state;
  memsuite_start(txt_arg, txt_args);
  bfeed_client *c;
  bfeed_stream *st;
  bfeed_error err;
  bfeed_stream_opts o;
  txt_opts(&o, 4);
  o.window = 2;
  c = memsuite_connect();
  if (bfeed_stream_open(c, "t", &o, &st, &err) < 0) fail_msg("open: %s", err.message);
  int32_t lengths[TXT_LINES] = {0};
  int64_t tokens_t[TXT_LINES] = {0};
  for (int b = 0; b < TXT_LINES / 4; b++) {
    bfeed_batch *batch;
    bfeed_tensor len, idx, tok;
    if (bfeed_stream_next(st, &batch, &err) < 0) fail_msg("next: %s", err.message);
    assert_int_equal(bfeed_batch_find(batch, "length", &len), 0);
    assert_int_equal(bfeed_batch_find(batch, "index", &idx), 0);
    assert_int_equal(bfeed_batch_find(batch, "tokens", &tok), 0);
    for (int i = 0; i < 4; i++) {
      int64_t at = ((const int64_t *)idx.data)[i];
      assert_true(at >= 0 && at < TXT_LINES);
      lengths[at] = ((const int32_t *)len.data)[i];
      tokens_t[at] = tok.shape[1];
    }
    bfeed_batch_release(batch);
  }
  bfeed_stream_close(st);
  bfeed_close(c);
  memsuite_peak_within("a 3 Mi-token line, batch 4, no max_len, --max-memory 256M", TXT_MAX_MEMORY + 64 * TXT_MIB);
  for (int i = 0; i < TXT_LINES; i++) assert_int_equal(lengths[i], i == TXT_LONG_LINE ? (int32_t)TXT_CAP : 10);
  assert_int_equal(tokens_t[TXT_LONG_LINE], TXT_CAP);
  assert_int_equal(tokens_t[TXT_LONG_LINE == 0 ? 15 : 0], 10); /* a batch without it: its own longest */
  assert_true(itest_daemon_log_has(&memsuite_the.d, "the longest sample of t has 3145728 tokens: serving at most 524288"));
  memsuite_stop();
}

/* Three streams of batch 8 (128 MiB batches at the default cap) on one
 * connection that reads nothing: shares of 256, 128 and 85 MiB. */
static void test_three_streams_refused_past_their_share(void **state) {
  (void)state;
  memsuite_start(txt_arg, txt_args);
  bfeed_stream_opts o;
  txt_opts(&o, 8);
  int fd = itest_raw_connect(memsuite_the.d.unix_addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_hello(fd), 0);
  for (uint32_t id = 1; id <= 3; id++) assert_int_equal(itest_raw_open(fd, id, "t", &o), 0);
  frame_header h;
  uint8_t *p = NULL;
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  free(p);
  assert_int_equal(h.stream, 1);
  char msg[2][256];
  int code[2];
  for (int k = 0; k < 2; k++) {
    uint32_t stream = 0;
    int rc = itest_raw_expect_error(fd, &stream, &code[k], msg[k], sizeof msg[k]);
    if (rc < 0) { /* the daemon took every stream: see what that cost before failing */
      memsuite_peak_within("three streams of batch 8 on one connection, --max-memory 256M", TXT_MAX_MEMORY + 128 * TXT_MIB);
      fail_msg("stream %d was not refused (%d)", k + 2, rc);
    }
    assert_int_equal(stream, (uint32_t)k + 2);
    print_message("stream %d: %s\n", k + 2, msg[k]);
  }
  bfeed_client *probe = memsuite_connect();
  memsuite_settle(probe);
  bfeed_close(probe);
  close(fd);
  /* Stream 1 holds its share, 256 MiB, beyond which its one batch may go. */
  memsuite_peak_within("three streams of batch 8 on one connection, --max-memory 256M", TXT_MAX_MEMORY + 128 * TXT_MIB);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(code[k], BFEED_ELIMIT);
    assert_non_null(strstr(msg[k], "over its share of max_memory (268435456 / "));
    assert_non_null(strstr(msg[k], "batch 7 fits"));
    assert_non_null(strstr(msg[k], " at batch 8 (t's longest sample: 3145728 tokens)"));
  }
  assert_non_null(strstr(msg[0], "/ 2 streams = 134217728): "));
  assert_non_null(strstr(msg[1], "/ 2 streams = 134217728): ")); /* stream 2 was refused: still one open */
  memsuite_stop();
}

MEMSUITE_MAIN("text_memory", txt_setup, MEMSUITE_TEST(test_long_line_default_cap), MEMSUITE_TEST(test_three_streams_refused_past_their_share))
