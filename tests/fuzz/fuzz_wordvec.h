/*
 * fuzz_wordvec.h -- the fuzz entry points of the text-side parsers, shared
 * by the libFuzzer targets (built with BFEED_FUZZ under clang, one binary
 * each, LLVMFuzzerTestOneInput defined when BFEED_LIBFUZZER is) and by
 * fuzz_wordvec_replay, which runs them in every build over seeds and
 * deterministic mutations.
 *
 * Each returns 1 when the parser accepted the input, 0 when it refused it,
 * and abort()s when a guarantee breaks: an accepted table whose words are
 * not found where they are, a refusal without a message naming the input,
 * a record or token outside the input, a header whose sizes disagree.
 */
#ifndef BFEED_FUZZ_WORDVEC_H
#define BFEED_FUZZ_WORDVEC_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h" /* FUZZ_CHECK, FUZZ_UTIL_TARGET */

/* Embeddings files (wordvec_parse): word2vec binary and text, GloVe. */
int fuzz_wordvec_table(const uint8_t *data, size_t size);
/* The binary cache's checker (wordvec_cache_check). */
int fuzz_wordvec_cache(const uint8_t *data, size_t size);
/* .npy headers (npy_source_parse_header). */
int fuzz_wordvec_npy(const uint8_t *data, size_t size);
/* fastText and TSV sources, manifests, the tokenizer and tokenized samples:
 * returns 1 when at least one of the parsers accepted. */
int fuzz_wordvec_text(const uint8_t *data, size_t size);

#ifdef BFEED_LIBFUZZER
#define FUZZ_WORDVEC_TARGET(fn) FUZZ_UTIL_TARGET(fn)
#else
#define FUZZ_WORDVEC_TARGET(fn)
#endif

#endif
