#!/bin/sh
# Configure and build into build/ (binaries in build/bin). Extra arguments go
# to cmake, e.g. scripts/build.sh -DBFEED_SANITIZE=ON. Warnings are errors here
# (BFEED_WERROR), as in CI; a packager's plain cmake build leaves them warnings.
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFEED_WERROR=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
