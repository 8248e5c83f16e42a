/*
 * names.h -- names and sizes of the shared vocabulary: error codes, dtypes.
 * Called by proto/ itself, the daemon, and libbfeed's bfeed_strerror/bfeed_dtype_*.
 */
#ifndef BFEED_NAMES_H
#define BFEED_NAMES_H

#include <stddef.h>

#include "bfeed_types.h"

/* "BFEED_ECHECKSUM: frame checksum mismatch"; "BFEED_E?: ..." if unknown. */
const char *names_errcode(int code);
/* The one error style of bfeed's internal calls: return a negative
 * BFEED_E* code and leave the reason in the caller's err[errlen] (err may
 * be NULL). names_fail copies why there and returns code. */
int names_fail(char *err, size_t errlen, int code, const char *why);
/* Bytes per element of a bfeed_dtype, 0 for an unknown one. */
size_t names_dtype_size(int dtype);
/* "bf16", "f32", "i32", "i64", "u8", or "?" */
const char *names_dtype(int dtype);

#endif
