# bfeed-train (client/train): compute backends against a float64 reference,
# the MLP's gradients against an independent float64 model, optimizers on
# problems with known minima, the memory plan against what is allocated,
# and the acceptance run on make-demo data through the real daemon.
if(TARGET bfeed_train_core)
  bfeed_cmocka_test(test_train_backend SOURCES test_train_backend.c LIBS bfeed_train_core TIMEOUT 120)
  # oneDNN limited to AVX2 stands in for a CPU without AVX-512.
  if(BFEED_HAVE_ONEDNN)
    add_test(NAME train_onednn_refuses_bf16 COMMAND test_train_backend onednn-refuses)
    set_tests_properties(train_onednn_refuses_bf16 PROPERTIES ENVIRONMENT "ONEDNN_MAX_CPU_ISA=AVX2")
  endif()
  bfeed_cmocka_test(test_train_optim SOURCES test_train_optim.c LIBS bfeed_train_core)
  bfeed_cmocka_test(test_train_mlp SOURCES test_train_mlp.c LIBS bfeed_train_core)
endif()

# The acceptance run, shortened: make-demo data served by the real bfeedd,
# trained in bf16 and f32 with one seed (see the script's docstring).
if(TARGET bfeed_train)
  add_test(NAME train_acceptance
    COMMAND ${BFEED_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/train_accept.py
      $<TARGET_FILE:bfeed_cli> $<TARGET_FILE:bfeedd> $<TARGET_FILE:bfeed_train>
      ${BFEED_SHARED_DATA}/wordvec/test_glove.txt)
  set_tests_properties(train_acceptance PROPERTIES TIMEOUT 240)
endif()
