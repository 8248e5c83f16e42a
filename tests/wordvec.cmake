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

# A text dataset through the real daemon: order, padding, lengths and
# labels against expectations worked out from the files, bucketing,
# pooling, fixed length, refusals, and byte-identical batches from 1 and 2
# workers.
bfeed_cmocka_test(test_text_integration
  SOURCES test_text_integration.c itest_util.c
  LIBS bfeed_static bfeed_cliutil Threads::Threads
  TIMEOUT 180)
target_compile_definitions(test_text_integration PRIVATE ITEST_BFEEDD="$<TARGET_FILE:bfeedd>"
                           TEXT_SHARED_DATA="${BFEED_SHARED_DATA}")
add_dependencies(test_text_integration bfeedd)

# make-demo --text: deterministic, about 6% unknown words, and learnable by
# a nearest-centroid classifier on mean word vectors (numpy).
add_test(NAME wordvec_demo_oracle
         COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/wordvec_demo_oracle.py
                 $<TARGET_FILE:bfeed_cli> ${BFEED_SHARED_DATA}/wordvec)
set_tests_properties(wordvec_demo_oracle PROPERTIES TIMEOUT 300)

# Fuzz targets for each text-side parser (fuzz/fuzz_wordvec*.c). In every
# build the replay runs them over seeds and deterministic mutations; with
# -DBFEED_FUZZ=ON under clang each is also a libFuzzer binary, its sources
# compiled in so that libFuzzer's coverage sees them.
add_executable(fuzz_wordvec_replay fuzz/fuzz_wordvec_replay.c fuzz/fuzz_wordvec.c fuzz/fuzz_wordvec_cache.c
                                   fuzz/fuzz_wordvec_npy.c fuzz/fuzz_wordvec_text.c)
target_link_libraries(fuzz_wordvec_replay PRIVATE bfeed_text)
add_test(NAME fuzz_wordvec_replay COMMAND fuzz_wordvec_replay ${BFEED_SHARED_DATA}/wordvec)
set_tests_properties(fuzz_wordvec_replay PROPERTIES TIMEOUT 300)

option(BFEED_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(BFEED_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
  get_target_property(BFEED_TEXT_SOURCES bfeed_text SOURCES)
  list(TRANSFORM BFEED_TEXT_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/daemon/)
  foreach(t fuzz_wordvec fuzz_wordvec_cache fuzz_wordvec_npy fuzz_wordvec_text)
    add_executable(${t} fuzz/${t}.c ${BFEED_TEXT_SOURCES})
    target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/daemon/sources ${PROJECT_SOURCE_DIR}/daemon/text)
    target_compile_definitions(${t} PRIVATE BFEED_LIBFUZZER)
    target_compile_options(${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${t} PRIVATE bfeed_proto PkgConfig::XXHASH)
  endforeach()
endif()
