# Wire format (proto/): unit tests, and a fuzz target whose entry point also
# runs under the normal build over a corpus and deterministic mutations.
bfeed_cmocka_test(test_frame SOURCES test_frame.c LIBS bfeed_proto)
bfeed_cmocka_test(test_msg SOURCES test_msg.c LIBS bfeed_proto)

# The fuzz entry point under the normal build: the corpus, the seed frames
# and a few thousand deterministic mutations of them (see fuzz/README.md).
add_executable(fuzz_proto_replay fuzz/fuzz_replay.c fuzz/fuzz_proto.c)
target_link_libraries(fuzz_proto_replay PRIVATE bfeed_proto)
add_test(NAME fuzz_proto_replay COMMAND fuzz_proto_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
set_tests_properties(fuzz_proto_replay PROPERTIES TIMEOUT 300)

# libFuzzer needs clang. The proto sources are compiled into the target
# rather than linked from bfeed_proto, so that they carry the coverage
# instrumentation libFuzzer steers by.
option(BFEED_FUZZ "Build the libFuzzer target fuzz_proto (clang only)" OFF)
if(BFEED_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
  get_target_property(BFEED_PROTO_SOURCES bfeed_proto_objs SOURCES)
  list(TRANSFORM BFEED_PROTO_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/proto/)
  add_executable(fuzz_proto fuzz/fuzz_proto.c ${BFEED_PROTO_SOURCES})
  target_include_directories(fuzz_proto PRIVATE ${PROJECT_SOURCE_DIR}/proto ${PROJECT_SOURCE_DIR}/client/lib)
  target_compile_options(fuzz_proto PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_proto PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_proto PRIVATE PkgConfig::XXHASH)
elseif(BFEED_FUZZ)
  message(WARNING "BFEED_FUZZ needs clang (CC=clang); fuzz_proto is not built")
endif()
