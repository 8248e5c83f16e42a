/*
 * options.c -- stream options set by name, as the command line spells them:
 * the public face of proto/opts.c, whose table (proto/opts.def) is every
 * option once.
 *
 * Bindings (the Python package) and the bfeed command line set options by
 * name through here, so that none of them copies the layout of
 * bfeed_stream_opts or re-implements the checks; a new option is a row in
 * opts.def and is reachable everywhere at once.
 */
#include "api.h"
#include "opts.h"

BFEED_API int bfeed_stream_opts_set(bfeed_stream_opts *o, const char *name, const char *value, bfeed_error *err) {
  char why[MSG_ERROR_MAX];
  int rc = opts_set(o, name, value, why, sizeof why);
  return rc < 0 ? api_err_public(err, rc, "%s", why) : 0;
}

BFEED_API int bfeed_stream_opt_takes_value(const char *name) { return name ? opts_takes_value(name) : -1; }

BFEED_API const char *bfeed_stream_opt_name(int i) { return opts_name(i); }

BFEED_API size_t bfeed_stream_opts_size(void) { return sizeof(bfeed_stream_opts); }
