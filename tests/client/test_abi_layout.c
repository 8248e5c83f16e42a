/*
 * test_abi_layout.c -- libbfeed's ABI does not move: bfeed_stream_opts_size()
 * in the shared library (what a binding built against another header checks
 * before it trusts the struct) and the offset of every field of
 * bfeed_stream_opts, bfeed_connect_opts and the other public structs.
 *
 * The oracle is numbers, not the header: each was recorded with offsetof
 * from the build before libbfeed was split into client/lib/single/ and
 * client/lib/fanout/ (x86-64 Linux, the LP64 ABI every supported target
 * shares). A change to one of them breaks every program built against an
 * older bfeed.h; if a field is added on purpose, the ABI version (SOVERSION)
 * changes with it and so do these numbers. Once so far: crop_scale came
 * after transport, with room for later options (`reserved`), and the
 * struct grew from 160 to 256 bytes (soname libbfeed.so.1); every field
 * before it kept its offset. eval_decode then took four bytes of
 * `reserved`: the size and every other offset stayed, and so did the soname;
 * share then took four more, eval_pad four and start_sample eight (at 176,
 * its natural alignment), and job eight more (at 184); the recipes' geometry
 * then took 28: width, interpolation, resize, crop_ratio (8), hflip and
 * train_decode (192..219). The recipes' augmentation then made it grow a
 * second time, from 256 to 384 bytes (soname libbfeed.so.2): the four
 * bytes left became reserved_geometry, every field before it kept its
 * offset, and color_jitter came at 224 with fifteen words of `reserved`
 * after explain.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bfeed.h"

typedef struct layout_entry {
  const char *name;
  size_t got, want;
} layout_entry;

#define FIELD(type, f, want) {#type "." #f, offsetof(type, f), want}
#define SIZE(type, want) {"sizeof " #type, sizeof(type), want}

/* Every public struct's fields, then the structs' sizes. */
static const layout_entry layout[] = {
    FIELD(bfeed_stream_opts, batch, 0),           FIELD(bfeed_stream_opts, size, 4),
    FIELD(bfeed_stream_opts, mode, 8),            FIELD(bfeed_stream_opts, layout, 12),
    FIELD(bfeed_stream_opts, normalize, 16),      FIELD(bfeed_stream_opts, mean, 20),
    FIELD(bfeed_stream_opts, std, 32),            FIELD(bfeed_stream_opts, seed, 48),
    FIELD(bfeed_stream_opts, epoch, 56),          FIELD(bfeed_stream_opts, batch_index, 64),
    FIELD(bfeed_stream_opts, shard_index, 72),    FIELD(bfeed_stream_opts, shard_count, 76),
    FIELD(bfeed_stream_opts, codec, 80),          FIELD(bfeed_stream_opts, codec_level, 84),
    FIELD(bfeed_stream_opts, window, 88),         FIELD(bfeed_stream_opts, shuffle, 92),
    FIELD(bfeed_stream_opts, keep_partial, 96),   FIELD(bfeed_stream_opts, epochs, 104),
    FIELD(bfeed_stream_opts, pool, 112),          FIELD(bfeed_stream_opts, max_len, 116),
    FIELD(bfeed_stream_opts, fixed_len, 120),     FIELD(bfeed_stream_opts, bucket, 124),
    FIELD(bfeed_stream_opts, select, 128),        FIELD(bfeed_stream_opts, select_mod, 136),
    FIELD(bfeed_stream_opts, select_rem, 144),    FIELD(bfeed_stream_opts, transport, 152),
    FIELD(bfeed_stream_opts, crop_scale, 156),    FIELD(bfeed_stream_opts, eval_decode, 164), FIELD(bfeed_stream_opts, share, 168),
    FIELD(bfeed_stream_opts, eval_pad, 172),      FIELD(bfeed_stream_opts, start_sample, 176),
    FIELD(bfeed_stream_opts, job, 184),           FIELD(bfeed_stream_opts, width, 192),
    FIELD(bfeed_stream_opts, interpolation, 196), FIELD(bfeed_stream_opts, resize, 200),
    FIELD(bfeed_stream_opts, crop_ratio, 204),    FIELD(bfeed_stream_opts, hflip, 212),
    FIELD(bfeed_stream_opts, train_decode, 216),  FIELD(bfeed_stream_opts, reserved_geometry, 220),
    FIELD(bfeed_stream_opts, color_jitter, 224),  FIELD(bfeed_stream_opts, auto_augment, 240),
    FIELD(bfeed_stream_opts, aa_num_ops, 244),    FIELD(bfeed_stream_opts, aa_magnitude, 248),
    FIELD(bfeed_stream_opts, aa_bins, 252),       FIELD(bfeed_stream_opts, aa_interpolation, 256),
    FIELD(bfeed_stream_opts, aa_fill, 260),       FIELD(bfeed_stream_opts, random_erase, 272),
    FIELD(bfeed_stream_opts, erase_scale, 276),   FIELD(bfeed_stream_opts, erase_ratio, 284),
    FIELD(bfeed_stream_opts, erase_value, 292),   FIELD(bfeed_stream_opts, erase_random, 304),
    FIELD(bfeed_stream_opts, mixup_alpha, 308),   FIELD(bfeed_stream_opts, cutmix_alpha, 312),
    FIELD(bfeed_stream_opts, mix_classes, 316),   FIELD(bfeed_stream_opts, explain, 320),
    FIELD(bfeed_stream_opts, reserved, 324),
    FIELD(bfeed_connect_opts, reconnect, 0),      FIELD(bfeed_connect_opts, reconnect_deadline, 8),
    FIELD(bfeed_connect_opts, token, 16),         FIELD(bfeed_connect_opts, token_file, 24),
    FIELD(bfeed_connect_opts, stall_timeout, 32), FIELD(bfeed_connect_opts, shm, 40),
    FIELD(bfeed_error, code, 0),                  FIELD(bfeed_error, message, 4),
    FIELD(bfeed_tensor, name, 0),                 FIELD(bfeed_tensor, dtype, 8),
    FIELD(bfeed_tensor, ndim, 12),                FIELD(bfeed_tensor, shape, 16),
    FIELD(bfeed_tensor, data, 80),                FIELD(bfeed_tensor, nbytes, 88),
    FIELD(bfeed_stream_info, samples, 0),         FIELD(bfeed_stream_info, batches_per_epoch, 8),
    FIELD(bfeed_stream_info, classes, 16),        FIELD(bfeed_counter, name, 0),
    FIELD(bfeed_counter, value, 8),               FIELD(bfeed_stat_group, kind, 0),
    FIELD(bfeed_stat_group, id, 8),               FIELD(bfeed_stat_group, ncounters, 16),
    FIELD(bfeed_stat_group, counters, 24),        SIZE(bfeed_stream_opts, 384),
    SIZE(bfeed_connect_opts, 48),                 SIZE(bfeed_error, 260),
    SIZE(bfeed_tensor, 96),                       SIZE(bfeed_stream_info, 24),
    SIZE(bfeed_counter, 16),                      SIZE(bfeed_stat_group, 32),
    /* added with bfeed_stream_get_timing */
    FIELD(bfeed_stream_timing, batches, 0),       FIELD(bfeed_stream_timing, wait_ns, 8),
    FIELD(bfeed_stream_timing, step_ns, 16),      FIELD(bfeed_stream_timing, wait_p50_ns, 24),
    FIELD(bfeed_stream_timing, wait_p99_ns, 32),  FIELD(bfeed_stream_timing, first_wait_ns, 40),
    FIELD(bfeed_stream_timing, expand_ns, 48),    FIELD(bfeed_stream_timing, wait_fraction, 56),
    FIELD(bfeed_stream_timing, batches_per_s, 64), SIZE(bfeed_stream_timing, 72),
};

static void test_layout(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof layout / sizeof layout[0]; i++)
    if (layout[i].got != layout[i].want) fail_msg("%s is %zu, was %zu", layout[i].name, layout[i].got, layout[i].want);
}

/* The library's own view of the struct, whatever header this was built with. */
static void test_opts_size(void **state) {
  (void)state;
  assert_int_equal(bfeed_stream_opts_size(), 384);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_layout), cmocka_unit_test(test_opts_size)};
  return cmocka_run_group_tests_name("abi_layout", tests, NULL, NULL);
}
