# JPEG decoding, Pillow-exact resampling and the sample pipeline: unit tests
# and the Pillow oracle.

bfeed_cmocka_test(test_resize SOURCES test_resize.c LIBS bfeed_image)
bfeed_cmocka_test(test_jpeg SOURCES test_jpeg.c LIBS bfeed_image)
target_compile_definitions(test_jpeg PRIVATE
  BFEED_IMAGE_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures/images")

# Tools: the oracle's driver, and a timing tool that no test runs.
add_executable(sample_dump tools/sample_dump.c)
target_link_libraries(sample_dump PRIVATE bfeed_image)
add_executable(sample_bench tools/sample_bench.c)
target_link_libraries(sample_bench PRIVATE bfeed_image)

# The ImageNet sample is checked too when the team data is present.
add_test(NAME oracle_image_pillow
  COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/image_oracle.py
    $<TARGET_FILE:sample_dump> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/images
    ${BFEED_SHARED_DATA}/imagenet-100)
set_tests_properties(oracle_image_pillow PROPERTIES TIMEOUT 900)
