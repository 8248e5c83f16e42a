/* cli_util.h -- small helpers the command-line programs share. */
#ifndef BFEED_CLI_UTIL_H
#define BFEED_CLI_UTIL_H

#include <stddef.h>

/* Format a message into err[errlen] (if err) and return code: for the
 * "return cli_fail(err, errlen, BFEED_EIO, "cannot write %s", path)" idiom. */
int cli_fail(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Monotonic clock in seconds, for benchmarks. */
double cli_now_s(void);

/* mkdir -p: each missing component of path, with mode 0777 (less umask);
 * BFEED_EIO naming the component that could not be made, or a path that
 * is not a directory. */
int cli_mkdirs(const char *path, char *err, size_t errlen);

/* qsort comparator for doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);

#endif
