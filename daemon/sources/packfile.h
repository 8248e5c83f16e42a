/*
 * packfile.h -- bfeed's own shard format (`bfeed pack`, the pack kind):
 * one shard file of records (a sample's image bytes), an index with each
 * record's place, label and CRC-32C, an optional block of float features,
 * and a footer whose CRC covers header, index and features. The byte
 * layout is PACK_FORMAT.md's; the metadata file beside the shards
 * (packfile_meta) is described there too.
 *
 * Called by the pack kind (kind_pack.c: parse at load, check a record on
 * read), by the writer (tools/pack: write a shard, check one left by an
 * interrupted run) and by the fuzz target. Parsing works on bytes the
 * caller read through storage.h; writing goes to a plain stdio FILE, the
 * writer's own output.
 *
 * Everything is little-endian; records, index and features start on 8-byte
 * boundaries, so a mapped shard's fields can be read in place.
 */
#ifndef BFEED_PACKFILE_H
#define BFEED_PACKFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PACKFILE_VERSION 1
#define PACKFILE_HEADER 32
#define PACKFILE_FOOTER 32
#define PACKFILE_ENTRY 24
/* A record's bytes at most (as a folder's file at most: DATASET_MAX_FILE). */
#define PACKFILE_MAX_RECORD (256u << 20)
/* Floats per sample at most, and records per shard at most. */
#define PACKFILE_MAX_DIM (1u << 20)
#define PACKFILE_MAX_RECORDS (1u << 24)
/* The metadata file, written last: a pack without it is incomplete. */
#define PACKFILE_META "bfeed-pack.meta"
#define PACKFILE_META_MAX (64u << 20)

typedef struct packfile_entry {
  uint64_t off;   /* the record's first byte in the shard */
  uint32_t len;   /* its bytes */
  int32_t label;  /* -1 where the pack has no labels */
  uint32_t crc;   /* CRC-32C of its bytes */
} packfile_entry;

/* One shard as its index describes it. */
typedef struct packfile_shard {
  uint32_t n, dim;   /* records; floats of features per record (0: none) */
  uint32_t number;   /* the shard's place in the pack (its file name's number) */
  uint64_t key;      /* the pack's key (source fingerprint and options) */
  uint64_t index_off; /* where the index starts: the records end here */
  packfile_entry *e; /* n entries */
  float *features;   /* n x dim, or NULL */
} packfile_shard;

/* The footer's place and the index bytes it announces, from the header and
 * footer (the first and last 32 bytes of a file of `size` bytes): *tail_off
 * is where the index starts; the caller reads [*tail_off, size) for
 * packfile_parse_tail. BFEED_EDATASET naming what is wrong. */
int packfile_parse_ends(const uint8_t *head, const uint8_t *foot, uint64_t size, uint64_t *tail_off, char *err,
                        size_t errlen);
/* The shard from its header and its tail (index, features and footer:
 * [tail_off, size)): CRC, sizes and every entry's place checked. out is
 * the caller's; packfile_shard_free frees it. BFEED_EDATASET naming the
 * field or record, BFEED_ENOMEM. */
int packfile_parse_tail(const uint8_t *head, const uint8_t *tail, uint64_t tail_off, uint64_t size,
                        packfile_shard *out, char *err, size_t errlen);
/* Both, on a whole shard in memory (the writer's check, the fuzz target). */
int packfile_parse(const uint8_t *file, size_t size, packfile_shard *out, char *err, size_t errlen);
void packfile_shard_free(packfile_shard *s);

/* Record k's bytes against its CRC: 0 or BFEED_ECHECKSUM ("record K: bad CRC-32C"). */
int packfile_check_record(const packfile_shard *s, uint32_t k, const uint8_t *bytes, char *err, size_t errlen);

/* Writing one shard, records in order, to a FILE the caller opened. */
typedef struct packfile_writer {
  FILE *f;
  uint64_t off;
  uint32_t number, dim;
  uint64_t key;
  packfile_entry *e;
  float *features;
  size_t n, cap;
  uint32_t crc; /* of the header, then the index as it is written */
} packfile_writer;

int packfile_write_begin(packfile_writer *w, FILE *f, uint32_t number, uint32_t dim, uint64_t key, char *err,
                         size_t errlen);
/* features: dim floats, or NULL when dim is 0. BFEED_EIO, BFEED_ENOMEM. */
int packfile_write_record(packfile_writer *w, const uint8_t *bytes, size_t len, int32_t label, const float *features,
                          char *err, size_t errlen);
/* Index, features, footer; the file stays the caller's to close. */
int packfile_write_end(packfile_writer *w, char *err, size_t errlen);
void packfile_write_free(packfile_writer *w);

/* "shard-000012.bfpack" */
void packfile_shard_name(char *out, size_t cap, uint32_t number);

/* The metadata file (PACK_FORMAT.md "Metadata"). */
typedef struct packfile_meta {
  unsigned version;
  uint64_t samples;        /* records in the pack */
  uint64_t source_samples; /* samples of the source: shard k packs [k, k + 1) x shard_samples of them */
  uint64_t shards, shard_samples, key, source_fingerprint;
  uint64_t skipped;        /* source samples left out as undecodable */
  uint32_t dim;          /* features per sample, 0: none */
  int labelled;
  char images[16];       /* original, jpeg, raw */
  uint32_t max_side, short_side, quality;
  char *source;          /* the source as given */
  uint64_t nclasses;
  char **classes;        /* nclasses names, or NULL when the source had none */
} packfile_meta;

/* Parse text[0..len). BFEED_EDATASET "line N: why", BFEED_ENOMEM. */
int packfile_meta_parse(const char *text, size_t len, packfile_meta *m, char *err, size_t errlen);
/* Write m to f; BFEED_EIO. Class names holding a newline are refused
 * (BFEED_EINVAL) before anything is written. */
int packfile_meta_write(const packfile_meta *m, FILE *f, char *err, size_t errlen);
void packfile_meta_free(packfile_meta *m);

#endif
