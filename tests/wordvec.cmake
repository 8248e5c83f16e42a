# Word vectors, text, .npy and manifest datasets (daemon/wordvec*.c,
# tokenize.c, text_source.c, textset.c, labelset.c, manifest.c,
# npy_source.c, batch_text.c; client/make_demo_text.c).

# The loader as a tool, for the numpy oracle.
add_executable(wordvec_dump test_wordvec_dump.c)
target_link_libraries(wordvec_dump PRIVATE bfeed_text)

# Every vector of test_glove.txt, lee_fasttext.vec and of word2vec binary,
# word2vec text and GloVe files the oracle writes, bit-equal to torch's bf16
# rounding of the float32 the file holds (exact decimal rounding), parsed
# and through the cache.
add_test(NAME wordvec_oracle
         COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/wordvec_oracle.py
                 $<TARGET_FILE:wordvec_dump> ${BFEED_SHARED_DATA}/wordvec)
set_tests_properties(wordvec_oracle PROPERTIES TIMEOUT 300)

# Malformed tables (each error names the file and line or byte offset),
# duplicates, and the cache: hit, rebuild on a new source, damage, atomic
# writes, every byte of a cache's index damaged.
bfeed_cmocka_test(test_wordvec SOURCES test_wordvec.c LIBS bfeed_text TIMEOUT 120)
# Tokenization, labels, fastText/TSV sources, manifests, .npy headers, OOV policies.
bfeed_cmocka_test(test_text_sources SOURCES test_text_sources.c LIBS bfeed_text)

# Text (TSV and fastText, OOV policies, lowercase, punctuation, max_len,
# fixed length, mean pooling), npy (aligned and not) and manifest datasets
# through the real daemon and `bfeed fetch`, against numpy and torch.
add_test(NAME wordvec_fetch_oracle
         COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/wordvec_fetch_oracle.py
                 $<TARGET_FILE:bfeedd> $<TARGET_FILE:bfeed_cli> ${BFEED_SHARED_DATA}/wordvec
                 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/images)
set_tests_properties(wordvec_fetch_oracle PROPERTIES TIMEOUT 300)
