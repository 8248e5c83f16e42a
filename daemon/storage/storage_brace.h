/*
 * storage_brace.h -- brace expansion of shard patterns, as WebDataset
 * names shards: "train-{000000..000127}.tar" is 128 names.
 * Called by storage_glob (storage.c) before a backend matches the rest of
 * a pattern's wildcards, so that every backend, an object store that
 * cannot list a folder's files by wildcard among them, reads the same
 * patterns.
 *
 * What a pattern may hold, besides text:
 * - {A..B}: the integers from A to B (decimal digits, no sign, at most 18
 *   of them), upward or downward ({5..1} is 5 4 3 2 1, as bash has it);
 *   when either end starts with a 0 and has more than one digit, every
 *   number is zero-padded to the width of the wider end ({1..010}: 001 ...
 *   010; {0..10} is not padded), as bash pads;
 * - {a,b,c}: each item in turn, empty ones too ("x{a,}" is xa and x);
 * - several of them: every combination, the leftmost varying slowest
 *   ("{a,b}{1,2}": a1 a2 b1 b2), as bash orders them.
 * Unlike bash, which keeps what it cannot expand as text, these are
 * refused with a message naming the pattern and the byte: an unmatched '{'
 * or '}', a brace inside a brace, "{}", and a brace that is neither a list
 * nor a range ("{a}", "{a..e}", "{1..9..2}"). A brace inside a bracket
 * expression is the glob's, taken as text ("[{]" matches a '{'): the way
 * to name a file with a brace in its name; so is a comma there. Backslashes
 * are not special.
 */
#ifndef BFEED_STORAGE_BRACE_H
#define BFEED_STORAGE_BRACE_H

#include <stddef.h>

#include "strlist.h"

#define STORAGE_BRACE_MAX 1000000                   /* names one pattern may expand to */
#define STORAGE_BRACE_MAX_BYTES ((size_t)128 << 20) /* and their bytes, all together */

/* Append pattern's expansions to out, in order (a pattern without braces: itself). Over STORAGE_BRACE_MAX
 * names or STORAGE_BRACE_MAX_BYTES: BFEED_ETOOBIG; malformed: BFEED_EDATASET; ENOMEM; out then as it was. */
int storage_brace_expand(const char *pattern, strlist *out, char *err, size_t errlen);

#endif
