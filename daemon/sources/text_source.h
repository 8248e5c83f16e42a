/*
 * text_source.h -- labelled text records from the files people have.
 * Called by kind_text.c (kind text); kind_list.c and manifest.c share its line reader.
 *
 *   fasttext  one record per line: "__label__pos __label__x some text ...";
 *             the leading __label__ tokens are the labels, the rest of the
 *             line is the text (a __label__ token later on is a word)
 *   tsv       one record per line: "label<TAB>text" (the first tab splits)
 *   folder    ImageFolder-like: ROOT/CLASS/.../FILE.txt, one record per
 *             file, the class folder's name as its label
 *
 * Blank lines are skipped; a trailing '\r' is dropped. With format auto a
 * folder is a folder, and a file is fastText when its first non-blank line
 * starts with "__label__", TSV when that line has a tab. Errors name the
 * file and line.
 */
#ifndef BFEED_TEXT_SOURCE_H
#define BFEED_TEXT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "strlist.h"

typedef enum text_format { TEXT_AUTO = 0, TEXT_FASTTEXT, TEXT_TSV, TEXT_FOLDER } text_format;

typedef struct text_record {
  const char *label, *text;
  size_t label_len, text_len;
  const char *file; /* for messages */
  uint64_t line;    /* 1-based; 0 for a whole file */
} text_record;

/* Called for every record, in order; a negative return stops the read
 * (the callback has written err). */
typedef int (*text_record_fn)(void *ctx, const text_record *r, char *err, size_t errlen);

typedef struct text_source_opts {
  text_format format;
  int label_pick; /* which of a fastText line's labels: 1 = first (default when 0), -1 = last, N = Nth */
  strlist *dropped; /* folders: entries left out ("PATH: why"), or NULL */
} text_source_opts;

/* "auto", "fasttext", "tsv", "folder" -> format, or -1. */
int text_source_format_parse(const char *s);

/* The records of one file's bytes (fasttext or tsv; auto decides). */
int text_source_parse(const char *data, size_t size, const char *name, const text_source_opts *o,
                      text_record_fn fn, void *ctx, char *err, size_t errlen);
/* The records at path: a folder, or a file read with text_source_parse. */
int text_source_read(const char *path, const text_source_opts *o, text_record_fn fn, void *ctx, char *err,
                     size_t errlen);

/* The next line of [*p, end) and its length in *n, without its "\n" or
 * "\r\n"; *p moves past it. NULL at the end. (Also manifest.c's.) */
const char *text_source_line(const char **p, const char *end, size_t *n);
/* 1 if p[0..n) is only ASCII whitespace (a line to skip). */
int text_source_blank(const char *p, size_t n);

/* A label is 1..LABELSET_MAX_LEN bytes without NUL; BFEED_EDATASET with a message
 * naming file:line otherwise. */
int text_source_check_label(const char *label, size_t len, const char *file, uint64_t line, char *err,
                            size_t errlen);

#endif
