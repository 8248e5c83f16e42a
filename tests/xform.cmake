# bf16 conversion, counter-based RNG, crop choice: unit tests and the
# torch/torchvision oracles.

# bf16.c is compiled in directly: it is self-contained, and the test should
# not depend on the rest of the wire-format library building.
bfeed_cmocka_test(test_bf16
  SOURCES test_bf16.c ${PROJECT_SOURCE_DIR}/proto/bf16.c
  LIBS Threads::Threads m
  TIMEOUT 600)
target_include_directories(test_bf16 PRIVATE ${PROJECT_SOURCE_DIR}/proto)

bfeed_cmocka_test(test_rng SOURCES test_rng.c LIBS bfeed_xform)
bfeed_cmocka_test(test_transform SOURCES test_transform.c LIBS bfeed_xform)

# Tools the Python oracles drive.
add_executable(bf16_dump tools/bf16_dump.c ${PROJECT_SOURCE_DIR}/proto/bf16.c)
target_include_directories(bf16_dump PRIVATE ${PROJECT_SOURCE_DIR}/proto)
add_executable(crop_dump tools/crop_dump.c)
target_link_libraries(crop_dump PRIVATE bfeed_xform)

add_test(NAME oracle_bf16_torch
  COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/bf16_torch.py $<TARGET_FILE:bf16_dump>)
add_test(NAME oracle_crop_torchvision
  COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/crop_oracle.py $<TARGET_FILE:crop_dump>)
set_tests_properties(oracle_bf16_torch oracle_crop_torchvision PROPERTIES TIMEOUT 600)
