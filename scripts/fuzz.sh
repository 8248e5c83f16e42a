#!/bin/sh
# Build the libFuzzer targets with clang (ASan + UBSan) into build-fuzz and
# run each for SECONDS (default 60). Each target grows its corpus in
# build-fuzz/corpus/TARGET, starting from the committed seeds; a crash,
# leak or timeout stops the script with libFuzzer's reproducer in
# build-fuzz/artifacts/ (see tests/fuzz/README.md).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-"fuzz_proto fuzz_open fuzz_freader fuzz_image fuzz_wordvec fuzz_wordvec_cache fuzz_wordvec_npy fuzz_wordvec_text fuzz_shards fuzz_pack fuzz_remote_list"}
# -Wno-unknown-warning-option: clang does not know the gcc-only
# -Wno-format-truncation that the top-level CMakeLists.txt adds.
CC=clang cmake -S . -B build-fuzz -DBFEED_FUZZ=ON -DBFEED_SANITIZE=ON \
  -DCMAKE_C_FLAGS=-Wno-unknown-warning-option >/dev/null
# shellcheck disable=SC2086
cmake --build build-fuzz -j"$(nproc)" --target $targets
mkdir -p build-fuzz/artifacts
for t in $targets; do
  case $t in
    fuzz_proto|fuzz_open|fuzz_freader) seeds=tests/fuzz/corpus; max=4096 ;;
    fuzz_image) seeds=tests/fuzz/corpus_image; max=65536 ;;
    fuzz_remote_list) seeds=tests/fuzz/corpus_remote_list; max=16384 ;;
    *) seeds=; max=8192 ;; # seeds built in (wordvec), or none
  esac
  mkdir -p "build-fuzz/corpus/$t"
  echo "== $t: $secs s"
  # shellcheck disable=SC2086
  build-fuzz/bin/"$t" -max_total_time="$secs" -max_len="$max" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
    "build-fuzz/corpus/$t" $seeds 2>&1 | grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|INFO: Running|.*property failed)' || true
  # libFuzzer exits non-zero on a finding; the pipe hides it, the artifact does not.
  if ls build-fuzz/artifacts/"$t"-* >/dev/null 2>&1; then
    echo "$t: found $(ls build-fuzz/artifacts/"$t"-*)" >&2
    exit 1
  fi
done
