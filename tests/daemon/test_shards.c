/*
 * test_shards.c -- CRC-32C known answers on the SSE4.2 and the portable
 * path, TensorFlow's CRC mask, and the shard index cache: reused when the
 * shard is unchanged, refused when its size, mtime or the settings differ
 * or the file is damaged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfeed_types.h"
#include "crc32c.h"
#include "shard_index.h"
#include "test_tmpdir.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* RFC 3720 (iSCSI) appendix B.4 and the common check value. */
static void check_known_answers(crc_fn crc) {
  uint8_t b[32];
  memset(b, 0, 32);
  assert_int_equal(crc(0, b, 32), 0x8a9136aa);
  memset(b, 0xff, 32);
  assert_int_equal(crc(0, b, 32), 0x62a8ab43);
  for (int i = 0; i < 32; i++) b[i] = (uint8_t)i;
  assert_int_equal(crc(0, b, 32), 0x46dd794e);
  for (int i = 0; i < 32; i++) b[i] = (uint8_t)(31 - i);
  assert_int_equal(crc(0, b, 32), 0x113fdb5c);
  assert_int_equal(crc(0, "123456789", 9), 0xe3069283);
  assert_int_equal(crc(0, "", 0), 0);
  /* In pieces, as continuing from a previous value. */
  assert_int_equal(crc(crc(0, "1234", 4), "56789", 5), 0xe3069283);
}

static void test_crc_portable(void **state) {
  (void)state;
  check_known_answers(crc32c_portable);
}

static void test_crc_hw(void **state) {
  (void)state;
  if (!crc32c_have_hw()) print_message("no SSE4.2 on this CPU: crc32c_hw is the portable code\n");
  check_known_answers(crc32c_hw);
  check_known_answers(crc32c_update);
}

/* Every length and alignment up to 64 + 8: both paths agree, and with a
 * value computed independently (python3 crcmod 'crc-32c' of bytes 0..255
 * four times then "abc": 0x084a7877). */
static void test_crc_paths_agree(void **state) {
  (void)state;
  static uint8_t buf[1024 + 16];
  for (int i = 0; i < 1024; i++) buf[i + 8] = (uint8_t)i;
  memcpy(buf + 8 + 1024, "abc", 3);
  assert_int_equal(crc32c_hw(0, buf + 8, 1027), 0x084a7877);
  assert_int_equal(crc32c_portable(0, buf + 8, 1027), 0x084a7877);
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n <= 64; n++) assert_int_equal(crc32c_hw(7, buf + off, n), crc32c_portable(7, buf + off, n));
  /* Long buffers, where the hardware path runs three streams of 4096
   * bytes and joins them: lengths around the 12288-byte rounds. */
  static uint8_t big[3 * 12288 + 64];
  uint32_t x = 1;
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
  static const size_t lens[] = {12287, 12288, 12289, 12288 + 4095, 24576, 24583, 36864, 3 * 12288 + 57};
  for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
    for (size_t off = 0; off < 8 && lens[i] + off <= sizeof big; off += 3)
      assert_int_equal(crc32c_hw(0x1234567, big + off, lens[i]), crc32c_portable(0x1234567, big + off, lens[i]));
}

/* Masked values from python3 crcmod: mask(crc32c("123456789")) and of "". */
static void test_crc_mask(void **state) {
  (void)state;
  assert_int_equal(crc32c_mask(crc32c_update(0, "123456789", 9)), 0xc78ab0e5);
  assert_int_equal(crc32c_mask(0), 0xa282ead8);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void set_mtime(const char *path, time_t t) {
  struct timeval tv[2] = {{t, 0}, {t, 0}};
  assert_int_equal(utimes(path, tv), 0);
}

static void test_index_cache(void **state) {
  tmpdir *t = *state;
  char shard[256], cache[512], err[512];
  snprintf(shard, sizeof shard, "%s/train-00000", t->path);
  write_file(shard, "0123456789");
  set_mtime(shard, 1700000000);
  shard_index_path(cache, sizeof cache, shard, NULL);
  char want[512];
  snprintf(want, sizeof want, "%s/.train-00000.bfidx", t->path);
  assert_string_equal(cache, want);

  shard_index x = {0}, y;
  float f[2] = {1.5f, -2.0f};
  assert_int_equal(shard_index_add(&x, 0, 10, 3, f, 2), 0);
  assert_int_equal(shard_index_add(&x, 22, 7, SHARD_INDEX_NO_LABEL, f, 2), 0);
  x.skipped = 4;
  struct stat st;
  assert_int_equal(stat(shard, &st), 0);
  assert_int_equal(shard_index_save(&x, cache, &st, 42, err, sizeof err), 0);

  /* Reused as it was. */
  assert_int_equal(shard_index_load(&y, cache, &st, 42, err, sizeof err), 0);
  assert_int_equal(y.n, 2);
  assert_int_equal(y.dim, 2);
  assert_int_equal(y.skipped, 4);
  assert_int_equal(y.e[1].off, 22);
  assert_int_equal(y.e[1].len, 7);
  assert_true(y.e[1].label == SHARD_INDEX_NO_LABEL);
  assert_int_equal(y.e[0].label, 3);
  assert_memory_equal(y.features + 2, f, sizeof f);
  shard_index_free(&y);

  /* Other settings: refused. */
  assert_int_equal(shard_index_load(&y, cache, &st, 43, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "other dataset settings"));

  /* The shard touched (same size, new mtime): refused. */
  set_mtime(shard, 1700000100);
  struct stat st2;
  assert_int_equal(stat(shard, &st2), 0);
  assert_int_equal(shard_index_load(&y, cache, &st2, 42, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "size or mtime changed"));
  /* ...and grown with the old mtime put back: refused too. */
  write_file(shard, "0123456789abc");
  set_mtime(shard, 1700000000);
  assert_int_equal(stat(shard, &st2), 0);
  assert_int_equal(shard_index_load(&y, cache, &st2, 42, err, sizeof err), BFEED_EDATASET);

  /* A damaged cache: one byte flipped, then cut short. */
  FILE *c = fopen(cache, "r+b");
  assert_non_null(c);
  fseek(c, 70, SEEK_SET);
  int ch = fgetc(c);
  fseek(c, 70, SEEK_SET);
  fputc(ch ^ 1, c);
  fclose(c);
  assert_int_equal(shard_index_load(&y, cache, &st, 42, err, sizeof err), BFEED_EDATASET);
  assert_non_null(strstr(err, "checksum"));
  assert_int_equal(truncate(cache, 50), 0);
  assert_int_equal(shard_index_load(&y, cache, &st, 42, err, sizeof err), BFEED_EDATASET);
  assert_int_equal(y.n, 0);

  /* In cache_dir: named after the shard, with a hash of its full path. */
  shard_index_path(cache, sizeof cache, shard, "/var/cache/bfeed");
  assert_int_equal(strncmp(cache, "/var/cache/bfeed/train-00000.", 29), 0);
  assert_non_null(strstr(cache, ".bfidx"));
  shard_index_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc_portable),
      cmocka_unit_test(test_crc_hw),
      cmocka_unit_test(test_crc_paths_agree),
      cmocka_unit_test(test_crc_mask),
      TMPDIR_TEST(test_index_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
