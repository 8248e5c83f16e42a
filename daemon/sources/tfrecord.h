/*
 * tfrecord.h -- TFRecord shards: record framing with CRC-32C checks, the
 * record index of a shard, and one sample's image bytes.
 * Called by kind_tfrecord.c (through dataset_shards.c's indexing threads
 * and batch workers); files are read through storage.h.
 *
 * A record is: uint64 length, uint32 masked CRC-32C of those 8 bytes,
 * length bytes of data (a serialized tf.train.Example), uint32 masked
 * CRC-32C of the data; integers little-endian. Both CRCs are checked on
 * every read.
 */
#ifndef BFEED_TFRECORD_H
#define BFEED_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "shard_index.h"
#include "storage.h"
#include "tf_example.h"

#define TFRECORD_HEADER 12
#define TFRECORD_FOOTER 4
/* A record longer than this is refused (as any image file is). */
#define TFRECORD_MAX_RECORD (256u << 20)

/* Read the record whose header is at off in f (fsize bytes long) into
 * *buf (grown as needed, *cap its size); *len gets the data length. 0, or
 * with the reason in err:
 *   BFEED_ECHECKSUM, BFEED_ETOOBIG, BFEED_ENOMEM  this record is bad (data
 *       CRC, over TFRECORD_MAX_RECORD, no memory); the next one starts at
 *       off + TFRECORD_HEADER + *len + TFRECORD_FOOTER;
 *   BFEED_EDATASET, BFEED_EIO  the frame is bad (length CRC, running past
 *       the end of the file) or unreadable: nothing after it can be found. */
int tfrecord_read(storage_file *f, uint64_t off, uint64_t fsize, uint8_t **buf, size_t *cap, uint64_t *len, char *err,
                  size_t errlen);

/* Index every good record of the shard at path: offset, length, label
 * (keys->label) and features (keys->features). Bad records are logged
 * with file and byte offset, counted in x->skipped and left out. 0, or
 * only when the shard cannot be read at all (BFEED_EIO), is
 * GZIP-compressed (BFEED_EDATASET) or memory runs out (BFEED_ENOMEM). */
int tfrecord_index(const char *path, const tf_example_keys *keys, const shard_index_ctx *ctx, shard_index *x,
                   char *err, size_t errlen);

/* Sample e of the open shard f: read and check the record, parse it, and
 * leave its image bytes (keys->image) in *buf[0..*len). 0, or a code of
 * tfrecord_read's (a record that changed since it was indexed is
 * BFEED_EDATASET) with the reason, which does not name the shard. */
int tfrecord_sample_at(storage_file *f, const shard_index_entry *e, const tf_example_keys *keys, uint8_t **buf,
                       size_t *cap, size_t *len, char *err, size_t errlen);
/* The same, opening the shard at path (whose failure names it). */
int tfrecord_sample(const char *path, const shard_index_entry *e, const tf_example_keys *keys, uint8_t **buf,
                    size_t *cap, size_t *len, char *err, size_t errlen);

#endif
