/*
 * opts.h -- the stream options, from the one table in opts.def.
 * Called by msg.c (OPEN), libbfeed (bfeed_stream_opts_set and friends),
 * the command line (flags and --help), the daemon (fingerprint, shuffle).
 *
 * Every function here walks the table: none names an option, except the
 * four written as one value (size H,W, shard I/N, codec, select), whose text forms
 * and joint checks opts.c keeps beside the table.
 */
#ifndef BFEED_OPTS_H
#define BFEED_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"
#include "tlv.h"

/* The values of an option that is an enum: names[i] is value i; the first
 * nset may be set by name (normalize's "custom" comes from mean and std). */
typedef struct opts_choices {
  const char *noun; /* for messages: "unknown normalization 3" */
  int n, nset;
  const char *const *names;
} opts_choices;

/* The defaults of every option (opts.def): what OPEN leaves unsaid. */
void opts_defaults(bfeed_stream_opts *o);
/* o as OPEN's TLV items (PROTOCOL.md), the dataset aside. */
void opts_encode(wbuf *w, const bfeed_stream_opts *o);
/* One OPEN item into o: 1 taken, 0 not an option (a tag this table does not
 * know and that is not critical: ignored), BFEED_EINVAL a critical tag it
 * does not know, BFEED_EPROTO a malformed value. */
int opts_decode_item(const tlv_item *it, bfeed_stream_opts *o);
/* Range and consistency: 0, or BFEED_EINVAL with the reason in err. */
int opts_check(const bfeed_stream_opts *o, char *err, size_t errlen);

/* Set the option called name (as opts.def's text; '_' for '-') from its
 * text form; a flag takes NULL, 1/0 or true/false. On failure, o is left
 * as it was and err names the option and the value. */
int opts_set(bfeed_stream_opts *o, const char *name, const char *value, char *err, size_t errlen);
/* 1 if the option takes a value, 0 for a flag, -1 for an unknown name. */
int opts_takes_value(const char *name);
/* The i-th option's name (0, 1, ...), NULL past the last. */
const char *opts_name(int i);
/* The --help lines of one group (text 0: stream options; 1: text
 * datasets) into buf, defaults taken from d. Returns the bytes written. */
size_t opts_help(int text, const bfeed_stream_opts *d, char *buf, size_t cap);

/* How many of the text datasets' options (opts.def's TEXT rows) o sets
 * away from their defaults; their names, comma-separated, into names. */
int opts_text_set(const bfeed_stream_opts *o, char *names, size_t cap);
/* The text datasets' options as "pool mean, max-len 9, fixed-len, bucket
 * 4" (flags only when set), for a command's summary line. */
size_t opts_text_describe(const bfeed_stream_opts *o, char *buf, size_t cap);
/* Whether the stream's recipe makes values after Normalize (RandomErasing,
 * MixUp, CutMix), which 8-bit pixels cannot carry: no u8 codec then. */
int opts_after_normalize(const bfeed_stream_opts *o);
/* Whether the stream's epochs are shuffled: shuffle on, or auto in train. */
int opts_shuffled(const bfeed_stream_opts *o);
/* The options' lines of the stream fingerprint's canonical form
 * (PROTOCOL.md), in table order, into buf; returns their length. */
size_t opts_canon(const bfeed_stream_opts *o, char *buf, size_t cap);

#endif
