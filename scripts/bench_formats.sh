#!/bin/sh
# The same images served from a folder, TFRecord shards and tar shards:
# samples/s of each (alternating rounds, medians, ratios to the folder), the
# time to index one shard, and what a record read costs beside its decode.
# Prints figures; asserts nothing. Needs the test packages (deps.sh --test).
#
#   scripts/bench_formats.sh [DATASET_DIR] [COPIES] [EPOCHS] [ROUNDS]
#   defaults: ../shared/data/imagenet-100 (else the make-demo images), 10, 2, 5
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --test >/dev/null
scripts/build.sh >/dev/null
data=${1:-../shared/data/imagenet-100}
if [ ! -d "$data" ]; then
  data=build/demo/train
  [ -d "$data" ] || build/bin/bfeed make-demo build/demo >/dev/null
fi
exec /usr/bin/python3 scripts/bench_formats.py build/bin/bfeedd build/bin/bfeed build/bin/shard_bench "$data" \
  "${2:-10}" "${3:-2}" "${4:-5}" "$(nproc)"
