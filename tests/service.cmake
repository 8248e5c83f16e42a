# Running as a service (systemd units, readiness, socket activation,
# configuration, reload, metrics, installation): tests/service/test_service.py
# drives the real daemon; stream_hash is its scriptable client.
add_executable(stream_hash tools/stream_hash.c)
target_link_libraries(stream_hash PRIVATE bfeed_static PkgConfig::XXHASH)

set(BFEED_SVC_DEMO ${CMAKE_CURRENT_BINARY_DIR}/service-demo)
add_test(NAME service_demo_data
  COMMAND sh -c "rm -rf '${BFEED_SVC_DEMO}' && '$<TARGET_FILE:bfeed_cli>' make-demo '${BFEED_SVC_DEMO}' --train 8 --val 4")
set_tests_properties(service_demo_data PROPERTIES FIXTURES_SETUP service_demo)

# The install test builds a plain program against the installed library,
# which a sanitizer build's library cannot serve (the runtime must come
# first); the regular build runs it.
set(BFEED_SVC_TESTS verify notify activate config reload metrics logs)
if(NOT BFEED_SANITIZE)
  list(APPEND BFEED_SVC_TESTS install)
endif()
foreach(t ${BFEED_SVC_TESTS})
  add_test(NAME service_${t}
    COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/service/test_service.py
      ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${BFEED_SVC_DEMO} ${t})
  set_tests_properties(service_${t} PROPERTIES FIXTURES_REQUIRED service_demo TIMEOUT 180
    DEPENDS "stream_hash")
endforeach()
