#!/bin/sh
# Install what is needed, build, and run every test (unit, oracle,
# integration, service) with ctest; build Release (-O3) with gcc and clang,
# warnings as errors; then rebuild with AddressSanitizer and
# UBSan and run the suite again, less the exhaustive sweeps (too slow under
# the sanitizers, and pure arithmetic that the first pass covers); then
# with ThreadSanitizer, the tests that run threads against each other (see
# below); then, where clang is, a 10-second libFuzzer smoke run per target.
set -eu
cd "$(dirname "$0")/.."
# Every test stops what it starts, also when it fails: after each pass, no
# process started from this checkout's build folders or tests may be left.
# Those still there after a grace period are listed, killed, and fail the
# run.
leftovers() {
  top=$(pwd -P)
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(ps -eo pid=,args= | awk -v b="$top/build" -v t="$top/tests/" \
      '(index($0, b) || index($0, t)) && $0 !~ /awk -v b=/ {print $1}')
    [ -z "$pids" ] && return 0
    sleep 1
  done
  echo "== processes left behind by the $1 pass:"
  for p in $pids; do ps -o pid=,args= -p "$p" || true; done
  kill -9 $pids 2>/dev/null || true
  return 1
}
scripts/deps.sh --test
scripts/build.sh
(cd build && ctest --output-on-failure --timeout 900)
leftovers "first"
scripts/build_release.sh
echo "== sanitizer pass (build-asan)"
cmake -S . -B build-asan -DBFEED_SANITIZE=ON -DBFEED_WERROR=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure --timeout 900 -E '^(test_bf16|oracle_bf16_torch|oracle_crop_torchvision)$')
leftovers "sanitizer"
# ThreadSanitizer: the tests where threads meet. Workers sharing a stream's
# epoch orders (test_epoch_cache); the daemon's event loop and
# its workers (every integration test drives them; test_daemon_life stops
# them mid-stream; service_reload reloads while they run; test_faults,
# test_memory and test_access push them to their limits), libbfeed's
# reader thread beside the caller (test_stream, test_shm_write, test_hostile, test_flow,
# test_text_integration, bfeed fetch in integration_fetch_oracle), and both
# under many connections with a reload and a restart (load_short); the
# remote storage's read-ahead threads, block cache and object table under
# faults (remote_fetch_oracle). The other unit
# tests are single-threaded and the oracle and service tests repeat the same
# daemon paths, so they stay out: this pass takes about a minute on 2 cores.
echo "== thread sanitizer pass (build-tsan)"
cmake -S . -B build-tsan -DBFEED_TSAN=ON >/dev/null
cmake --build build-tsan -j"$(nproc)"
(cd build-tsan && TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 history_size=4" \
  ctest --output-on-failure --timeout 900 \
  -R '^(test_epoch_cache|test_stream|test_shm|test_shm_write|test_hostile|test_flow|test_daemon_life|test_faults|test_memory|test_access|test_text_integration|integration_fetch_oracle|service_reload|load_short|remote_fetch_oracle|share_oracle_identity|share_oracle_reload)$')
leftovers "thread sanitizer"
if command -v clang >/dev/null 2>&1; then
  echo "== fuzz smoke run (build-fuzz)"
  scripts/fuzz.sh 10
fi
