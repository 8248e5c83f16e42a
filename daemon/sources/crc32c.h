/*
 * crc32c.h -- CRC-32C (Castagnoli), and TensorFlow's masked form of it.
 * Called by the TFRecord reader (tfrecord.c) and its tests.
 */
#ifndef BFEED_CRC32C_H
#define BFEED_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of p[0..n) continuing from crc (0 to start): the SSE4.2 crc32
 * instruction when the CPU has it, the table-driven code otherwise. */
uint32_t crc32c_update(uint32_t crc, const void *p, size_t n);
/* Each path on its own, for the known-answer tests. crc32c_hw returns the
 * portable result on a CPU without SSE4.2 (crc32c_have_hw says which). */
uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n);
uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n);
int crc32c_have_hw(void);

/* TFRecord stores rotate_right(crc, 15) + 0xa282ead8 so that a CRC of data
 * containing CRCs does not degenerate. */
static inline uint32_t crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#endif
