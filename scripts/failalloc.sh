#!/bin/sh
# The allocation-failure sweep, every allocation of the daemon's start, a
# short stream and its stop failed in turn (ctest's failalloc_sweep tries
# 40 of them). Under the ASan build when there is one, so that a crash
# comes with its trace; the logs of failing runs go to failalloc-logs/.
# Usage: scripts/failalloc.sh [BUILD_DIR] [sweep options, e.g. --step 3 --strict]
set -eu
cd "$(dirname "$0")/.."
build=${1:-}
[ -n "$build" ] && shift
if [ -z "$build" ]; then
  if [ -x build-asan/bin/failalloc_sweep ]; then build=build-asan; else build=build; fi
fi
[ -x "$build/bin/failalloc_sweep" ] || cmake --build "$build" --target failalloc_sweep
mkdir -p failalloc-logs
ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 \
  "$build/bin/failalloc_sweep" --all --keep failalloc-logs "$@"
