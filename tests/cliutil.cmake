# .npy writer and demo dataset generator (client/npy.c, client/make_demo.c).
bfeed_cmocka_test(test_npy SOURCES test_npy.c LIBS bfeed_cliutil)
bfeed_cmocka_test(test_make_demo SOURCES test_make_demo.c LIBS bfeed_cliutil TIMEOUT 60)

# Oracles: numpy reads what test_npy writes; Pillow and numpy judge the demo
# dataset that test_make_demo generates.
add_test(NAME npy_oracle
         COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/npy_oracle.py $<TARGET_FILE:test_npy>)
add_test(NAME demo_oracle
         COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/demo_oracle.py
                 $<TARGET_FILE:test_make_demo>)
set_tests_properties(demo_oracle PROPERTIES TIMEOUT 300)
