/* tf_example.c -- tf.train.Example: the image bytes, label and features of one record. */
#include "tf_example.h"

#include <stdio.h>
#include <string.h>

#include "bfeed_types.h"
#include "tf_example.pb-c.h"

static const char *const tf_example_kind_names[] = {"no value", "a bytes_list", "a float_list", "an int64_list"};

static const char *tf_example_kind(Tfex__Feature__KindCase c) {
  return (unsigned)c < 4 ? tf_example_kind_names[c] : "unknown kind";
}

/* The feature called key: the last entry of that name wins, as protobuf
 * map semantics say for repeated keys. */
static const Tfex__Feature *tf_example_find(const Tfex__Example *ex, const char *key) {
  const Tfex__Feature *found = NULL;
  const Tfex__Features *fs = ex->features;
  for (size_t i = 0; fs && i < fs->n_feature; i++)
    if (fs->feature[i]->key && strcmp(fs->feature[i]->key, key) == 0) found = fs->feature[i]->value;
  return found;
}

static int tf_example_want(const Tfex__Example *ex, const char *key, Tfex__Feature__KindCase kind,
                           const Tfex__Feature **out, char *err, size_t errlen) {
  const Tfex__Feature *f = tf_example_find(ex, key);
  if (!f) return snprintf(err, errlen, "no feature '%s'", key), BFEED_EDATASET;
  if (f->kind_case != kind)
    return snprintf(err, errlen, "feature '%s' is %s, not %s", key, tf_example_kind(f->kind_case),
                    tf_example_kind(kind)),
           BFEED_EDATASET;
  *out = f;
  return 0;
}

int tf_example_parse(const uint8_t *p, size_t n, const tf_example_keys *k, tf_example *out, char *err,
                     size_t errlen) {
  memset(out, 0, sizeof *out);
  Tfex__Example *ex = tfex__example__unpack(NULL, n, p);
  if (!ex) return snprintf(err, errlen, "not a tf.train.Example (protobuf parse failed)"), BFEED_EDATASET;
  out->msg = ex;
  const Tfex__Feature *f;
  if (k->image) {
    if (tf_example_want(ex, k->image, TFEX__FEATURE__KIND_BYTES_LIST, &f, err, errlen) < 0) goto fail;
    if (f->bytes_list->n_value != 1) {
      snprintf(err, errlen, "feature '%s' holds %zu values, expected 1", k->image, f->bytes_list->n_value);
      goto fail;
    }
    out->image = f->bytes_list->value[0].data;
    out->image_len = f->bytes_list->value[0].len;
  }
  if (k->label) {
    if (tf_example_want(ex, k->label, TFEX__FEATURE__KIND_INT64_LIST, &f, err, errlen) < 0) goto fail;
    if (f->int64_list->n_value != 1) {
      snprintf(err, errlen, "feature '%s' holds %zu values, expected 1", k->label, f->int64_list->n_value);
      goto fail;
    }
    out->label = f->int64_list->value[0];
  }
  if (k->features) {
    if (tf_example_want(ex, k->features, TFEX__FEATURE__KIND_FLOAT_LIST, &f, err, errlen) < 0) goto fail;
    out->features = f->float_list->value;
    out->nfeatures = f->float_list->n_value;
  }
  return 0;
fail:
  tf_example_free(out);
  return BFEED_EDATASET;
}

void tf_example_free(tf_example *e) {
  if (e->msg) tfex__example__free_unpacked(e->msg, NULL);
  memset(e, 0, sizeof *e);
}
