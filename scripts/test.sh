#!/bin/sh
# Install what is needed, build, and run every test (unit, oracle,
# integration, service) with ctest; build Release (-O3) with gcc and clang,
# warnings as errors; then rebuild with AddressSanitizer and
# UBSan and run the suite again, less the exhaustive sweeps (too slow under
# the sanitizers, and pure arithmetic that the first pass covers).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh
(cd build && ctest --output-on-failure --timeout 900)
scripts/build_release.sh
echo "== sanitizer pass (build-asan)"
cmake -S . -B build-asan -DBFEED_SANITIZE=ON -DBFEED_WERROR=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure --timeout 900 -E '^(test_bf16|oracle_bf16_torch|oracle_crop_torchvision)$'
