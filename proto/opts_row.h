/*
 * opts_row.h -- the table of options as opts.c and opts_name.c share it
 * (private to proto/: every other caller goes through opts.h). opts.c
 * holds the table (opts.def), OPEN's encoding, the checks and the
 * fingerprint; opts_name.c the options by name: setting them from text,
 * their names, --help.
 */
#ifndef BFEED_OPTS_ROW_H
#define BFEED_OPTS_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "opts.h"

typedef enum { OPTS_U32, OPTS_U64, OPTS_I32, OPTS_FLAG, OPTS_CHOICE, OPTS_F32S } opts_type;
/* opts.def's flags (its header says what each means). */
enum {
  OPTS_ALWAYS = 1 << 0, OPTS_NONCRIT = 1 << 1, OPTS_BYTES = 1 << 2, OPTS_BYTES_SET = 1 << 3,
  OPTS_TEXT = 1 << 4, OPTS_RESOLVED = 1 << 5, OPTS_NONZERO = 1 << 6, OPTS_SCALE = 1 << 7,
  OPTS_RATIO = 1 << 8, OPTS_PROB = 1 << 9, OPTS_WAS0 = 1 << 10, OPTS_JITTER = 1 << 11, OPTS_FILL = 1 << 12,
  OPTS_NONNEG = 1 << 13,
};

typedef struct opts_row {
  const char *field; /* the member's name: the fingerprint's and the messages' */
  uint16_t tag;
  opts_type type;
  const opts_choices *choices; /* CHOICE */
  int nf;                      /* F32S: floats */
  size_t offset;
  uint64_t lo, hi, def;
  const float *deff; /* F32S */
  unsigned flags;
  const char *text, *arg, *help;
} opts_row;

extern const opts_row opts_table[];
extern const size_t opts_count;
#define OPTS_N opts_count

/* A row's field in o, by type. */
#define OPTS_AT(o, r, T) ((T *)((char *)(o) + (r)->offset))
#define OPTS_CAT(o, r, T) ((const T *)((const char *)(o) + (r)->offset))

/* An option written as one value over several fields (size H,W, shard
 * I/N, codec, select): its text form's parse, check and format. */
typedef struct opts_joint {
  const char *text; /* the name its fields share in opts.def */
  int (*parse)(bfeed_stream_opts *o, const char *value, char *err, size_t errlen);
  int (*check)(const bfeed_stream_opts *o, char *err, size_t errlen);
  /* Its text form: --help's default, and the fingerprint's value for a
   * joint option of BYTES fields (shard). */
  void (*format)(const bfeed_stream_opts *o, char *buf, size_t cap);
  /* --help's metavariable, when the row has none. */
  void (*metavar)(char *buf, size_t cap);
} opts_joint;

/* The joint option r is a field of, or NULL. */
const opts_joint *opts_joint_of(const opts_row *r);
/* Whether r is the first row of its option (a joint option's others are not). */
int opts_first_of_text(const opts_row *r);
/* An integer row's value (CHOICE, FLAG and I32 are ints), and setting it. */
uint64_t opts_get(const bfeed_stream_opts *o, const opts_row *r);
void opts_put(bfeed_stream_opts *o, const opts_row *r, uint64_t v);
int opts_is_default(const bfeed_stream_opts *o, const opts_row *r);
/* One row's range and shape: 0, or BFEED_EINVAL naming the field. */
int opts_check_row(const bfeed_stream_opts *o, const opts_row *r, char *err, size_t errlen);
/* A row's value in its text form (--help's defaults; the checks' messages). */
void opts_default_text(const opts_row *r, const bfeed_stream_opts *d, char *buf, size_t n);
/* printf at buf + *at, never past cap (the text is cut, NUL-terminated). */
void opts_appendf(char *buf, size_t cap, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
