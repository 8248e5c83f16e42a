/*
 * opts_name.c -- the stream options by name (opts.h): set from their text
 * form (the command line, the Python keywords, bfeed_stream_opts_set),
 * their names and --help, and the text datasets' options described.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_errors.h"
#include "opts_row.h"

/* ---- by name ----------------------------------------------------------- */

/* printf at buf + *at, never past cap (the text is cut, NUL-terminated). */
void opts_appendf(char *buf, size_t cap, size_t *at, const char *fmt, ...) {
  if (*at >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *at, cap - *at, fmt, ap);
  va_end(ap);
  *at = n < 0 ? *at : *at + (size_t)n < cap ? *at + (size_t)n : cap - 1;
}

/* "start_batch" and "start-batch" name the same option. */
static int opts_same_name(const char *spelled, const char *name) {
  for (; *spelled && *name; spelled++, name++)
    if (*spelled != *name && !(*spelled == '_' && *name == '-')) return 0;
  return *spelled == *name;
}

static const opts_row *opts_find(const char *name) {
  for (size_t i = 0; name && i < OPTS_N; i++)
    if (opts_table[i].text && opts_same_name(name, opts_table[i].text)) return &opts_table[i];
  return NULL;
}

/* Edit distance between a and b (letters; '_' and '-' alike), capped at
 * 9: enough to name the option a misspelt one meant. */
static int opts_distance(const char *a, const char *b) {
  size_t n = strlen(b);
  if (strlen(a) > 32 || n > 32) return 9;
  int row[33];
  for (size_t j = 0; j <= n; j++) row[j] = (int)j;
  for (size_t i = 1; a[i - 1]; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= n; j++) {
      char x = a[i - 1] == '_' ? '-' : a[i - 1], y = b[j - 1];
      int best = diag + (x != y);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = row[j];
      row[j] = best;
    }
  }
  return row[n] < 9 ? row[n] : 9;
}

/* "unknown stream option 'sise' (did you mean 'size'?)": the nearest name
 * within a third of its length, if any. */
static int opts_unknown(const char *name, char *err, size_t errlen) {
  if (!name) return snprintf(err, errlen, "unknown stream option (null)"), BFEED_EINVAL;
  const char *best = NULL;
  int best_d = 9;
  for (size_t i = 0; i < OPTS_N; i++) {
    const char *t = opts_table[i].text;
    int d = t && (!best || strcmp(t, best) != 0) ? opts_distance(name, t) : 9;
    if (d < best_d && d * 3 <= (int)strlen(t)) best = t, best_d = d;
  }
  if (best) return snprintf(err, errlen, "unknown stream option '%s' (did you mean '%s'?)", name, best), BFEED_EINVAL;
  return snprintf(err, errlen, "unknown stream option '%s'", name), BFEED_EINVAL;
}

static int opts_parse_number(const opts_row *r, const char *value, uint64_t *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(value, &end, 10);
  if (!*value || *end || errno || value[0] == '-' || v < r->lo || v > r->hi)
    return snprintf(err, errlen, "%s %s: expected a whole number from %llu to %llu", r->text, value,
                    (unsigned long long)r->lo, (unsigned long long)r->hi),
           BFEED_EINVAL;
  *out = v;
  return 0;
}

static int opts_parse_choice(const opts_row *r, const char *value, uint64_t *out, char *err, size_t errlen) {
  char list[96] = "";
  for (int i = 0; i < r->choices->nset; i++) {
    if (strcmp(value, r->choices->names[i]) == 0) return *out = (uint64_t)i, 0;
    snprintf(list + strlen(list), sizeof list - strlen(list), " %s", r->choices->names[i]);
  }
  return snprintf(err, errlen, "%s %s: expected one of%s", r->text, value, list), BFEED_EINVAL;
}

/* "LO,HI": nf numbers separated by commas, then the row's checks. A slash
 * separates them too: a binding turns a pair of whole numbers into "A/B"
 * whatever the option (shard=(3, 4) and a scale range (1, 1) alike). */
static int opts_parse_floats(bfeed_stream_opts *o, const opts_row *r, const char *value, char *err, size_t errlen) {
  float f[8];
  const char *p = value;
  for (int c = 0; c < r->nf; c++) {
    char *end;
    errno = 0;
    f[c] = strtof(p, &end);
    if (end == p || errno || (c + 1 < r->nf ? *end != ',' && *end != '/' : *end != 0))
      return snprintf(err, errlen, "%s %s: expected %d numbers separated by commas", r->text, value, r->nf),
             BFEED_EINVAL;
    p = end + 1;
  }
  bfeed_stream_opts t = *o;
  char why[160];
  memcpy(OPTS_AT(&t, r, float), f, sizeof(float) * (size_t)r->nf);
  if (opts_check_row(&t, r, why, sizeof why) < 0)
    return snprintf(err, errlen, "%s %s: %s", r->text, value, why), BFEED_EINVAL;
  *o = t;
  return 0;
}

int opts_set(bfeed_stream_opts *o, const char *name, const char *value, char *err, size_t errlen) {
  const opts_row *r = opts_find(name);
  if (!r) return opts_unknown(name, err, errlen);
  uint64_t v = 0;
  if (r->type == OPTS_FLAG) {
    if (!value || strcmp(value, "1") == 0 || strcmp(value, "true") == 0) return opts_put(o, r, 1), 0;
    if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0) return opts_put(o, r, 0), 0;
    return snprintf(err, errlen, "%s %s: expected 1 or 0 (true or false)", r->text, value), BFEED_EINVAL;
  }
  if (!value) return snprintf(err, errlen, "%s needs a value", r->text), BFEED_EINVAL;
  const opts_joint *j = opts_joint_of(r);
  if (j) {
    bfeed_stream_opts t = *o; /* all or nothing */
    if (j->parse(&t, value, err, errlen) < 0) return BFEED_EINVAL;
    return *o = t, 0;
  }
  if (r->type == OPTS_F32S) return opts_parse_floats(o, r, value, err, errlen);
  int rc = r->type == OPTS_CHOICE ? opts_parse_choice(r, value, &v, err, errlen)
                                  : opts_parse_number(r, value, &v, err, errlen);
  if (rc < 0) return BFEED_EINVAL;
  opts_put(o, r, v);
  return 0;
}

int opts_takes_value(const char *name) {
  const opts_row *r = opts_find(name);
  return r ? r->type != OPTS_FLAG : -1;
}

const char *opts_name(int i) {
  for (size_t k = 0; k < OPTS_N && i >= 0; k++)
    if (opts_first_of_text(&opts_table[k]) && i-- == 0) return opts_table[k].text;
  return NULL;
}

/* An option's value in its text form (--help shows the defaults so). */
void opts_default_text(const opts_row *r, const bfeed_stream_opts *d, char *buf, size_t n) {
  uint64_t v = opts_get(d, r);
  const opts_joint *j = opts_joint_of(r);
  if (j && j->format) j->format(d, buf, n);
  else if (r->type == OPTS_CHOICE) snprintf(buf, n, "%s", v < (uint64_t)r->choices->n ? r->choices->names[v] : "?");
  else if (r->type == OPTS_F32S) {
    const float *f = OPTS_CAT(d, r, float);
    size_t at = 0;
    for (int c = 0; c < r->nf; c++) opts_appendf(buf, n, &at, "%s%g", c ? "," : "", (double)f[c]);
  } else snprintf(buf, n, "%llu", (unsigned long long)v);
}

size_t opts_help(int text, const bfeed_stream_opts *d, char *buf, size_t cap) {
  size_t at = 0;
  for (size_t i = 0; i < OPTS_N && at < cap; i++) {
    const opts_row *r = &opts_table[i];
    if (!r->help || !(r->flags & OPTS_TEXT) != !text) continue;
    char head[160], def[48] = "", arg[128] = "";
    const opts_joint *j = opts_joint_of(r);
    if (r->arg) snprintf(arg, sizeof arg, "%s", r->arg);
    else if (j && j->metavar) j->metavar(arg, sizeof arg);
    snprintf(head, sizeof head, "--%s%s%s", r->text, arg[0] ? " " : "", arg);
    if (r->type != OPTS_FLAG) opts_default_text(r, d, def, sizeof def);
    /* Words start in column 27; a head too long for that gets two spaces,
     * or a line of its own; each further line of the words is indented. */
    size_t hl = strlen(head);
    if (hl <= 24) opts_appendf(buf, cap, &at, "  %-24s", head);
    else if (hl <= 26) opts_appendf(buf, cap, &at, "  %s  ", head);
    else opts_appendf(buf, cap, &at, "  %s\n%26s", head, "");
    for (const char *p = r->help; *p && at < cap;) {
      size_t n = strcspn(p, "\n");
      opts_appendf(buf, cap, &at, "%.*s", (int)n, p);
      p += n;
      if (*p == '\n' && at < cap) opts_appendf(buf, cap, &at, "\n%26s", ""), p++;
    }
    if (at < cap) opts_appendf(buf, cap, &at, def[0] ? " (%s)\n" : "\n", def);
  }
  return at;
}

size_t opts_text_describe(const bfeed_stream_opts *o, char *buf, size_t cap) {
  size_t at = 0;
  if (cap) buf[0] = 0;
  for (size_t i = 0; i < OPTS_N; i++) {
    const opts_row *r = &opts_table[i];
    if (!(r->flags & OPTS_TEXT) || (r->type == OPTS_FLAG && !opts_get(o, r))) continue;
    char v[48] = "";
    if (r->type != OPTS_FLAG) opts_default_text(r, o, v, sizeof v);
    opts_appendf(buf, cap, &at, "%s%s%s%s", at ? ", " : "", r->text, v[0] ? " " : "", v);
  }
  return at;
}

int opts_text_set(const bfeed_stream_opts *o, char *names, size_t cap) {
  int n = 0;
  size_t at = 0;
  if (cap) names[0] = 0;
  for (size_t i = 0; i < OPTS_N; i++)
    if ((opts_table[i].flags & OPTS_TEXT) && !opts_is_default(o, &opts_table[i]))
      opts_appendf(names, cap, &at, "%s%s", n++ ? ", " : "", opts_table[i].field);
  return n;
}
