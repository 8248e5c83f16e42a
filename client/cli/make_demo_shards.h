/*
 * make_demo_shards.h -- the demo dataset as TFRecord or WebDataset tar shards.
 * Called by make_demo.c for `bfeed make-demo DIR --format tfrecord|tar`.
 *
 * The client links no daemon code, so this writes the formats itself: a
 * minimal tf.train.Example encoder (image/encoded bytes, image/class/label
 * int64, in the TPU ImageNet layout: labels counted from 1), TFRecord
 * framing with masked CRC-32C, and tar members with libarchive's writer
 * (KEY.jpg + KEY.cls, the label counted from 0 as text). Samples go to the
 * shards in the order they are added, an equal run per shard; each shard is
 * written under a temporary name and renamed when complete.
 */
#ifndef BFEED_MAKE_DEMO_SHARDS_H
#define BFEED_MAKE_DEMO_SHARDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct make_demo_shards make_demo_shards;

/* A writer of total samples in nshards shards named after split:
 * DIR/SPLIT-00000-of-0000N (tfrecord) or DIR/SPLIT-000000.tar (tar). */
int make_demo_shards_open(make_demo_shards **out, int tar, const char *dir, const char *split, int total, int nshards,
                          char *err, size_t errlen);
/* Add a sample: its JPEG and its class (0-based). */
int make_demo_shards_add(make_demo_shards *w, const uint8_t *jpeg, size_t len, int label, char *err, size_t errlen);
/* Finish the last shard (when rc is 0) and free; returns rc or a new error. */
int make_demo_shards_close(make_demo_shards *w, int rc, char *err, size_t errlen);

/* The masked CRC-32C TFRecord frames carry; exposed for the tests. */
uint32_t make_demo_shards_masked_crc(const uint8_t *p, size_t n);

#endif
