# Integration tests: the real bfeedd, started as a child process, talked to
# over real Unix and TCP sockets by libbfeed and by raw protocol clients.
bfeed_cmocka_test(test_integration
  SOURCES test_integration.c itest_util.c
  LIBS bfeed_static bfeed_cliutil Threads::Threads
  TIMEOUT 180)
target_compile_definitions(test_integration PRIVATE ITEST_BFEEDD="$<TARGET_FILE:bfeedd>")
# The tests run the daemon binary, so building them builds it.
add_dependencies(test_integration bfeedd)

# `bfeed fetch` against Pillow doing torchvision's eval transform on the
# fixture JPEGs.
add_test(NAME integration_fetch_oracle
  COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/fetch_oracle.py
    $<TARGET_FILE:bfeedd> $<TARGET_FILE:bfeed_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/images)
set_tests_properties(integration_fetch_oracle PROPERTIES TIMEOUT 120)
