#!/bin/sh
# The main job on the bundled demo: install, build, make a demo dataset,
# start bfeedd, measure it with `bfeed bench`, stop it.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
bin=build/bin
demo=build/demo
if [ ! -d "$demo/train" ]; then
  "$bin/bfeed" make-demo "$demo"
fi
# The same images as TFRecord shards (tf.train.Example, TPU ImageNet layout).
demo_tf=build/demo-tfrecord
if [ ! -f "$demo_tf/train-00000-of-00004" ]; then
  "$bin/bfeed" make-demo "$demo_tf" --format tfrecord
fi
run=$(mktemp -d /tmp/bfeed-demo.XXXXXX)
sock="$run/bfeedd.sock"
"$bin/bfeedd" --listen "unix:$sock" --dataset demo-train="$demo/train" --dataset demo-val="$demo/val" \
  --dataset demo-tfrecord="tfrecord:$demo_tf/train-*" \
  >"$run/bfeedd.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM
i=0
until [ -S "$sock" ]; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "bfeedd did not start:" >&2
    cat "$run/bfeedd.log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "== bfeedd is serving $demo (log: $run/bfeedd.log)"
echo
echo "== training stream: random-resized crop + flip, 224x224, batch 64, bf16 NCHW, 2 epochs"
"$bin/bfeed" bench --connect "unix:$sock" --dataset demo-train --mode train --size 224 --batch 64 --epochs 2
echo
echo "== the same training images from TFRecord shards (indexed in the background at start)"
"$bin/bfeed" bench --connect "unix:$sock" --dataset demo-tfrecord --mode train --size 224 --batch 64 --epochs 2
grep "dataset demo-tfrecord: [0-9]* samples" "$run/bfeedd.log" | sed 's/^.*bfeedd info: /   /'
echo
echo "== evaluation stream: resize 256 + centre crop 224, batch 32, zstd on the wire"
"$bin/bfeed" bench --connect "unix:$sock" --dataset demo-val --mode eval --size 224 --batch 32 --codec zstd:3 --epochs 1
echo
out="$run/batch0"
"$bin/bfeed" fetch --connect "unix:$sock" --dataset demo-val --mode eval --batch 8 --batch-index 0 --out "$out" >/dev/null
echo "== one batch fetched as .npy:"
sed -n 's/^ *{"name": "\([a-z]*\)", "dtype": "\([a-z0-9]*\)".*"shape": \(\[[0-9, ]*\]\).*/   \1: \2 \3/p' "$out/meta.json"
kill -TERM "$pid"
wait "$pid" && echo && echo "== bfeedd stopped cleanly"
trap - EXIT INT TERM
rm -rf "$run"
