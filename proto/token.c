/* token.c -- see token.h */
#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bfeed_types.h"

int token_read_file(const char *path, char *token, size_t cap, char *why, size_t whycap) {
  size_t max = cap - 1 < 255 ? cap - 1 : 255;
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(why, whycap, "cannot read: %s", strerror(errno)), BFEED_EIO;
  char line[1024];
  size_t n = fgets(line, sizeof line, f) ? strcspn(line, "\r\n") : 0;
  fclose(f);
  while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
  if (n == 0 || n > max || memchr(line, 0, n))
    return snprintf(why, whycap, "the first line must hold the token, 1 to %zu bytes without NUL (it has %zu)", max, n),
           BFEED_EINVAL;
  memcpy(token, line, n);
  token[n] = 0;
  return 0;
}
