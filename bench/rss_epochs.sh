#!/bin/sh
# bench/rss_epochs.sh -- bfeedd's resident memory after each of EPOCHS epochs of the demo dataset.
# Run by hand (never by the tests).
#
#   bench/rss_epochs.sh [EPOCHS] [MODE] [BIN_DIR]
#
# Writes `bfeed make-demo` into a temporary folder, starts BIN_DIR/bfeedd
# (default build/bin) on its train split, then runs EPOCHS times one epoch of
# `bfeed bench` (MODE train by default, batch 64, size 224, seed = the epoch)
# and prints the daemon's VmRSS and VmHWM (from /proc) after each. Flat means
# no growth after epoch 1: the worker buffers reach their size in the first
# epoch and are reused after.
set -eu
epochs=${1:-20}
mode=${2:-train}
bin=${3:-build/bin}
cd "$(dirname "$0")/.."
run=$(mktemp -d /tmp/bfeed-rss.XXXXXX)
"$bin/bfeed" make-demo "$run/demo" >/dev/null
"$bin/bfeedd" --listen "unix:$run/s.sock" --dataset demo="$run/demo/train" --log-level warning 2>"$run/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$run"' EXIT
while [ ! -S "$run/s.sock" ]; do sleep 0.1; done
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
echo "epoch rss_kb hwm_kb ($mode, $(find "$run/demo/train" -type f | wc -l) samples an epoch)"
echo "0 $(kb VmRSS) $(kb VmHWM)"
for e in $(seq "$epochs"); do
  "$bin/bfeed" bench --connect "unix:$run/s.sock" --dataset demo --mode "$mode" --size 224 --batch 64 \
    --epochs 1 --warmup 0 --seed "$e" --json >/dev/null 2>&1
  echo "$e $(kb VmRSS) $(kb VmHWM)"
done
