/*
 * bf16_dump -- raw float32 on stdin, their bf16_from_f32_array() on stdout
 * (native byte order), for the torch oracle. Prints the SIMD path in use on
 * stderr so the oracle can say which one it checked.
 */
#include <stdio.h>

#include "bf16.h"

int main(void) {
  enum { N = 1 << 16 };
  static float in[N];
  static uint16_t out[N];
  size_t n;
  fprintf(stderr, "bf16_dump: path %s\n", bf16_array_impl());
  while ((n = fread(in, sizeof in[0], N, stdin)) > 0) {
    bf16_from_f32_array(out, in, n);
    if (fwrite(out, sizeof out[0], n, stdout) != n) return 1;
  }
  if (ferror(stdin)) return 1;
  return fflush(stdout) != 0;
}
