#!/bin/sh
# bench/rss_epochs.sh -- the daemon's resident memory over 20 epochs.
# Run by hand (never by the tests).
#
#   bench/rss_epochs.sh [DATA_DIR] [EPOCHS]
#
# Serves DATA_DIR (default: a fresh `bfeed make-demo` tree) and reads
# EPOCHS (20) epochs of train batches at 224, each by `bfeed bench --epoch E
# --epochs 1` (a connection and a stream per epoch, as a trainer that
# restarts would), printing the daemon's VmRSS after each. Flat after the
# first epoch means nothing grows per batch, per epoch or per connection:
# buffers are pooled, orders and streams freed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
bin=${BFEED_BIN:-build/bin}
epochs=${2:-20}
run=$(mktemp -d /tmp/bfeed-rss.XXXXXX)
data=${1:-}
if [ -z "$data" ]; then
  "$bin/bfeed" make-demo "$run/demo" >/dev/null
  data=$run/demo/train
fi
"$bin/bfeedd" --listen "unix:$run/s.sock" --dataset rss="$data" --workers 2 --log-level warning 2>"$run/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$run"' EXIT
i=0
until [ -S "$run/s.sock" ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
echo "daemon RSS at start: $(rss) KiB"
for e in $(seq 0 $((epochs - 1))); do
  "$bin/bfeed" bench --connect "unix:$run/s.sock" --dataset rss --epoch "$e" --epochs 1 --json \
    >"$run/e.json" 2>/dev/null
  sps=$(sed -n 's/.*"samples_per_s": *\([0-9.]*\).*/\1/p' "$run/e.json")
  echo "epoch $e: daemon RSS $(rss) KiB (${sps:-?} samples/s)"
done
