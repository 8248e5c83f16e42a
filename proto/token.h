/*
 * token.h -- the access token's file, read the same way by bfeedd
 * (auth_token_file) and libbfeed (token_file, BFEED_TOKEN_FILE), so that
 * one file serves both sides.
 */
#ifndef BFEED_TOKEN_H
#define BFEED_TOKEN_H

#include <stddef.h>

/* The token is path's first line without its line end and trailing blanks:
 * 1 to min(cap - 1, 255) bytes, no NUL. 0 with it in token[cap]; or
 * BFEED_EIO (cannot open) / BFEED_EINVAL (no such line), with the reason in
 * why[whycap], the path left for the caller to name. */
int token_read_file(const char *path, char *token, size_t cap, char *why, size_t whycap);

#endif
