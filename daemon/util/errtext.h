/*
 * errtext.h -- error messages that start with where the error is, and the
 * one rule for what an errno means: the readers of files (storage
 * backends, npy headers, embedding tables, dataset settings) all report
 * "WHERE: WHAT" into a caller's fixed buffer.
 */
#ifndef BFEED_ERRTEXT_H
#define BFEED_ERRTEXT_H

#include <stdarg.h>
#include <stddef.h>

/* Write where, then fmt's text, into err[errlen] (cut to fit, always
 * terminated unless errlen is 0) and return code, so that a reader can
 * `return errtext_vset(...)`. */
int errtext_vset(char *err, size_t errlen, int code, const char *where, const char *fmt, va_list ap);
int errtext_set(char *err, size_t errlen, int code, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The code for a failed system call's errno: BFEED_EIO for a failure of
 * the moment, worth trying again (descriptors or memory short, EAGAIN,
 * EINTR, an I/O error), BFEED_EDATASET for one of the file itself
 * (missing, unreadable, a folder). */
int errtext_errno_code(int e);

#endif
