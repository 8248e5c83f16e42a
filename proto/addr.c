/* addr.c -- see addr.h */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "bfeed_types.h"

int addr_parse(const char *s, addr_spec *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (strncmp(s, "unix:", 5) == 0) {
    const char *path = s + 5;
    if (!*path) return snprintf(err, errlen, "%s: empty socket path", s), BFEED_EINVAL;
    if (strlen(path) >= sizeof out->path)
      return snprintf(err, errlen, "%s: socket path longer than %zu bytes", s, sizeof out->path - 1),
             BFEED_EINVAL;
    out->kind = ADDR_UNIX;
    strcpy(out->path, path);
    return 0;
  }
  const char *colon = strrchr(s, ':');
  const char *host = s, *host_end = colon;
  if (!colon) return snprintf(err, errlen, "%s: expected unix:PATH or HOST:PORT", s), BFEED_EINVAL;
  if (s[0] != '[' && memchr(s, ':', (size_t)(colon - s)))
    return snprintf(err, errlen, "%s: an IPv6 address needs brackets: [ADDR]:PORT", s), BFEED_EINVAL;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || close + 1 != colon)
      return snprintf(err, errlen, "%s: expected [IPv6]:PORT", s), BFEED_EINVAL;
    host = s + 1;
    host_end = close;
  }
  size_t hl = (size_t)(host_end - host);
  if (hl == 0 || hl >= sizeof out->host)
    return snprintf(err, errlen, "%s: missing or overlong host", s), BFEED_EINVAL;
  /* Digits only: strtol alone would take " 80" or "+80". */
  const char *digits = colon + 1;
  char *end;
  long port = strtol(digits, &end, 10);
  if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 5 || *end || port > 65535)
    return snprintf(err, errlen, "%s: port must be a number 0..65535", s), BFEED_EINVAL;
  out->kind = ADDR_TCP;
  memcpy(out->host, host, hl);
  out->host[hl] = 0;
  out->port = (uint16_t)port;
  return 0;
}
