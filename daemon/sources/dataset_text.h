/*
 * dataset_text.h -- what the kinds with text share: the settings of their
 * words, the embedding table, and labelled samples tokenized at load.
 * Called by kind_text.c and kind_manifest.c; implemented in dataset_text.c.
 */
#ifndef BFEED_DATASET_TEXT_H
#define BFEED_DATASET_TEXT_H

#include "dataset_kind.h"
#include "labelset.h"
#include "text_source.h"

/* The keys both kinds take, for their key tables. */
#define DATASET_TEXT_KEYS                                                                                   \
  {"vectors", DATASET_KEY_FILE}, {"lowercase", DATASET_KEY_VALUE}, {"punct", DATASET_KEY_VALUE},            \
      {"oov", DATASET_KEY_VALUE}, {"unk", DATASET_KEY_VALUE}, {"max_len", DATASET_KEY_VALUE},                \
      {"cache", DATASET_KEY_PLACE}, {"cache_dir", DATASET_KEY_PLACE}, {"max_table_bytes", DATASET_KEY_PLACE}

typedef struct dataset_text_opts {
  const char *vectors;
  wordvec_opts wv;
  textset_opts ts;
  const char *unk;
  uint64_t len_cap; /* the dataset's length setting: tokens served per sample */
  text_source_opts src; /* text: format=, label= */
} dataset_text_opts;

/* Read the settings (dataset_open has checked the keys) and load the
 * table into d->vectors. */
int dataset_text_prepare(dataset *d, const dataset_keys *k, dataset_text_opts *s, const logger *log, char *err,
                         size_t errlen);

/* Samples as their records come. */
typedef struct dataset_text_builder {
  dataset *d;
  const dataset_text_opts *s;
  labelset labels;
  uint32_t *prov; /* provisional label of each sample */
  size_t cap;
} dataset_text_builder;

/* One sample: its label and text, tokenized; file and line for messages. */
int dataset_text_add(dataset_text_builder *b, const char *label, size_t label_len, const char *text, size_t text_len,
                     const char *file, uint64_t line, char *err, size_t errlen);
/* Labels to class indices (allow_numeric 0: always sorted names, as for
 * folders), statistics logged, d's text tensor set. */
int dataset_text_finish(dataset_text_builder *b, int allow_numeric, const logger *log, char *err, size_t errlen);
void dataset_text_builder_free(dataset_text_builder *b);

#endif
