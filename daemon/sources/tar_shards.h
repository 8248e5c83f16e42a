/*
 * tar_shards.h -- WebDataset tar shards: the sample index of one shard.
 * Called by kind_tar.c from dataset_shards.c's indexing threads.
 *
 * Members sharing a key (the path up to the first '.' of the file name)
 * and standing next to each other form one sample: an image member
 * (.jpg, .jpeg, .png or .webp) and a label member (label_ext, "cls": an
 * integer as text). libarchive reads the shard once (through storage.h);
 * the index records where each image's bytes lie, so that samples are
 * then read with storage_pread.
 */
#ifndef BFEED_TAR_SHARDS_H
#define BFEED_TAR_SHARDS_H

#include "shard_index.h"

/* Index the samples of the tar at path. A sample without an image or a
 * label, or with an unreadable label, is logged (file, member, byte
 * offset), counted in x->skipped and left out. 0, or BFEED_EIO when the
 * file cannot be opened, BFEED_EDATASET when it is not an uncompressed tar,
 * BFEED_ENOMEM. label_ext NULL: samples have no labels. */
int tar_shards_index(const char *path, const char *label_ext, const shard_index_ctx *ctx, shard_index *x, char *err,
                     size_t errlen);

#endif
