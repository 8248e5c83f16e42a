#!/bin/sh
# Install what is needed, build, and run every test (unit, oracle,
# integration) with ctest. Exit status is ctest's.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --test
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900
