/*
 * tf_example.h -- the fields bfeed serves from a tf.train.Example record.
 * Called by tfrecord.c (indexing a shard, reading a sample); parsing is
 * protobuf-c's, from tf_example.proto.
 */
#ifndef BFEED_TF_EXAMPLE_H
#define BFEED_TF_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Feature names to look up; NULL: not wanted. */
typedef struct tf_example_keys {
  const char *image;    /* bytes_list with one value (encoded image) */
  const char *label;    /* int64_list with one value */
  const char *features; /* float_list, any length */
} tf_example_keys;

typedef struct tf_example {
  const uint8_t *image; /* into msg; image_len bytes */
  size_t image_len;
  int64_t label;
  const float *features; /* into msg; nfeatures floats */
  size_t nfeatures;
  void *msg; /* the unpacked message, freed by tf_example_free */
} tf_example;

/* Parse record p[0..n) and find the wanted features. 0, or BFEED_EDATASET
 * with the reason ("not a tf.train.Example", "no feature 'image/encoded'",
 * "feature 'image/class/label' is a bytes_list, not an int64_list", ...). */
int tf_example_parse(const uint8_t *p, size_t n, const tf_example_keys *k, tf_example *out, char *err,
                     size_t errlen);
void tf_example_free(tf_example *e);

#endif
