/*
 * api_classes.c -- bfeed_stream_class_names: the names of a stream's
 * dataset's classes in label order, asked of the daemon through
 * ops->class_names (single/ pages through CLASSES frames, fanout/ asks a
 * member) and handed out as one NULL-terminated array of copies.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* Room for one more name and the NULL after the last. */
static int api_names_room(api_names *a, char *err, size_t errlen) {
  if (a->n + 2 <= a->cap) return 0;
  size_t cap = a->cap ? 2 * a->cap : 16;
  char **v = realloc(a->v, cap * sizeof *v);
  if (!v) return api_err(err, errlen, BFEED_ENOMEM, "out of memory for %zu class names", a->n + 1);
  a->v = v;
  a->cap = cap;
  return 0;
}

int api_names_add(api_names *a, const char *s, size_t len, char *err, size_t errlen) {
  if (api_names_room(a, err, errlen) < 0) return BFEED_ENOMEM;
  char *copy = malloc(len + 1);
  if (!copy) return api_err(err, errlen, BFEED_ENOMEM, "out of memory for class name %zu (%zu bytes)", a->n, len);
  memcpy(copy, s, len);
  copy[len] = 0;
  a->v[a->n++] = copy;
  a->v[a->n] = NULL;
  return 0;
}

void api_names_clear(api_names *a) {
  bfeed_class_names_free(a->v, a->n);
  *a = (api_names){0};
}

int api_stream_class_names(bfeed_stream *s, api_names *out, char *err, size_t errlen) {
  int rc = api_client_enter(s->c, err, errlen);
  if (rc < 0) return rc;
  rc = s->ops->class_names(s, out, err, errlen);
  api_client_leave(s->c);
  pthread_mutex_unlock(&s->c->mu);
  return rc;
}

BFEED_API int bfeed_stream_class_names(bfeed_stream *s, char ***names, size_t *count, bfeed_error *err) {
  char e[API_ERRLEN] = "";
  api_names a = {0};
  *names = NULL;
  *count = 0;
  int rc = api_stream_class_names(s, &a, e, sizeof e);
  if (rc == 0 && !a.v && (rc = api_names_room(&a, e, sizeof e)) == 0) a.v[0] = NULL; /* none: still an array */
  if (rc < 0) {
    api_names_clear(&a);
    return api_err_public(err, rc, "%s", e);
  }
  *names = a.v;
  *count = a.n;
  return 0;
}

BFEED_API void bfeed_class_names_free(char **names, size_t count) {
  for (size_t i = 0; names && i < count; i++) free(names[i]);
  free(names);
}
