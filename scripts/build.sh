#!/bin/sh
# Configure and build into build/ (binaries in build/bin). Extra arguments go
# to cmake, e.g. scripts/build.sh -DBFEED_SANITIZE=ON
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
