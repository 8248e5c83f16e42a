/* crc32c.c -- CRC-32C: SSE4.2 instruction (three streams at once on long
 * buffers) with a slicing-by-8 table fallback. */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc32c_table[8][256];
#if defined(__x86_64__)
/* The crc32 instruction takes three cycles and the CPU can start one a
 * cycle: three independent streams over three CRC32C_LANE-byte blocks go
 * about three times as fast as one, and are joined by crc32c_shift (the
 * state after CRC32C_LANE zero bytes, which is linear in the state: four
 * tables of its value for each byte). A record of a raw pack (hundreds of
 * KB, checked on every read) spends a tenth of its serving time here with
 * one stream. */
#define CRC32C_LANE 4096
static uint32_t crc32c_shift_tab[4][256];
static void crc32c_shift_init(void);
#endif
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static int crc32c_hw_ok;

static void crc32c_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    crc32c_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^ crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  crc32c_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
#if defined(__x86_64__)
  if (crc32c_hw_ok) crc32c_shift_init();
#endif
}

int crc32c_have_hw(void) {
  pthread_once(&crc32c_once, crc32c_init);
  return crc32c_hw_ok;
}

uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n) {
  pthread_once(&crc32c_once, crc32c_init);
  const uint8_t *b = p;
  uint32_t c = ~crc;
  /* Slicing by 8: eight table lookups per 8 bytes instead of a dependent
   * chain of eight, about four times the byte-at-a-time speed. */
  while (n >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, b, 4);
    memcpy(&hi, b + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= c;
    c = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^ crc32c_table[5][(lo >> 16) & 0xff] ^
        crc32c_table[4][lo >> 24] ^ crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
        crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
    b += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ crc32c_table[0][(c ^ *b++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_zeros(uint32_t c, size_t n) {
  uint64_t s = c;
  for (size_t i = 0; i < n; i += 8) s = __builtin_ia32_crc32di(s, 0);
  return (uint32_t)s;
}

static void crc32c_shift_init(void) {
  uint32_t basis[32];
  for (int i = 0; i < 32; i++) basis[i] = crc32c_zeros(1u << i, CRC32C_LANE);
  for (int k = 0; k < 4; k++)
    for (uint32_t v = 0; v < 256; v++) {
      uint32_t x = 0;
      for (int j = 0; j < 8; j++)
        if (v >> j & 1) x ^= basis[8 * k + j];
      crc32c_shift_tab[k][v] = x;
    }
}

static inline uint32_t crc32c_shift(uint32_t c) {
  return crc32c_shift_tab[0][c & 0xff] ^ crc32c_shift_tab[1][(c >> 8) & 0xff] ^ crc32c_shift_tab[2][(c >> 16) & 0xff] ^
         crc32c_shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *b, size_t n) {
  uint64_t c = ~crc;
  for (; n && ((uintptr_t)b & 7); n--) c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
  /* The state after A0 A1 A2 from c: shift(shift(crc(c, A0)) ^ crc(0, A1)) ^ crc(0, A2). */
  for (; n >= 3 * CRC32C_LANE; n -= 3 * CRC32C_LANE, b += 3 * CRC32C_LANE) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < CRC32C_LANE; i += 8) {
      uint64_t v0, v1, v2;
      memcpy(&v0, b + i, 8);
      memcpy(&v1, b + CRC32C_LANE + i, 8);
      memcpy(&v2, b + 2 * CRC32C_LANE + i, 8);
      c = __builtin_ia32_crc32di(c, v0);
      c1 = __builtin_ia32_crc32di(c1, v1);
      c2 = __builtin_ia32_crc32di(c2, v2);
    }
    c = crc32c_shift(crc32c_shift((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
  }
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t v;
    memcpy(&v, b, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  for (; n; n--) c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
  return ~(uint32_t)c;
}
#endif

uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n) {
#if defined(__x86_64__)
  if (crc32c_have_hw()) return crc32c_sse42(crc, p, n);
#endif
  return crc32c_portable(crc, p, n);
}

uint32_t crc32c_update(uint32_t crc, const void *p, size_t n) {
  return crc32c_hw(crc, p, n);
}
