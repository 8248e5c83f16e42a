#!/bin/sh
# Release builds (-O3) with gcc and with clang, warnings as errors, tests
# included: what packagers and other compilers see. -O3 inlines more than
# scripts/build.sh's -O2 and so finds maybe-uninitialized paths the default
# build does not; clang refuses gcc-only flags. Into build-release-gcc/ and
# build-release-clang/ (clang skipped, with a note, when it is not installed).
set -eu
cd "$(dirname "$0")/.."
for cc in gcc clang; do
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build_release: $cc not installed, skipped"
    continue
  fi
  echo "== Release build with $cc (build-release-$cc)"
  CC=$cc cmake -S . -B "build-release-$cc" -DCMAKE_BUILD_TYPE=Release -DBFEED_WERROR=ON >/dev/null
  cmake --build "build-release-$cc" -j"$(nproc)" >/dev/null
done
