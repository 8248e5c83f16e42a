#!/bin/sh
# Side-by-side throughput: bfeedd + `bfeed bench` against the PyTorch
# DataLoader peer (../shared/bench/torch_peer.py), same images, same
# transforms (train: RandomResizedCrop + flip, normalize, bf16), same batch,
# same number of cores. Runs them alternately ROUNDS times and prints the
# median images/s of each and their ratio.
#
#   scripts/bench_vs_torch.sh [DATASET_DIR] [EPOCHS] [ROUNDS] [MODE]
#   defaults: ../shared/data/imagenet-100, 10, 3, train
set -eu
cd "$(dirname "$0")/.."
data=${1:-../shared/data/imagenet-100}
epochs=${2:-10}
rounds=${3:-3}
mode=${4:-train}
peer=../shared/bench/torch_peer.py
workers=$(nproc)
[ -d "$data" ] || { echo "no dataset at $data" >&2; exit 1; }
[ -f "$peer" ] || { echo "no peer at $peer" >&2; exit 1; }
scripts/deps.sh --test >/dev/null
scripts/build.sh >/dev/null
run=$(mktemp -d /tmp/bfeed-bench.XXXXXX)
build/bin/bfeedd --listen "unix:$run/s.sock" --dataset bench="$data" --workers "$workers" \
  --log-level warning 2>"$run/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$run"' EXIT
while [ ! -S "$run/s.sock" ]; do sleep 0.1; done
# The peer times epochs 1..E after a warm-up epoch 0; bfeed does the same:
# E+1 epochs with the first epoch's batches as warm-up.
n=$(find "$data" -iname '*.jp*g' | wc -l)
bpe=$((n / 64))
for r in $(seq "$rounds"); do
  build/bin/bfeed bench --connect "unix:$run/s.sock" --dataset bench --mode "$mode" --size 224 --batch 64 \
    --epochs $((epochs + 1)) --warmup "$bpe" --seed "$r" --json | tail -1 |
    /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print('bfeed', d['samples_per_s'])" >>"$run/res"
  /usr/bin/python3 "$peer" "$data" --mode "$mode" --batch 64 --workers "$workers" --epochs "$epochs" --size 224 |
    /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print('torch', d['images_per_s'])" >>"$run/res"
done
/usr/bin/python3 - "$run/res" "$mode" "$epochs" "$workers" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
b = [float(v) for k, v in rows if k == "bfeed"]
t = [float(v) for k, v in rows if k == "torch"]
print(f"mode {sys.argv[2]}, 224x224, batch 64, {sys.argv[3]} epochs measured, {sys.argv[4]} workers each")
print(f"bfeed bench images/s: {', '.join(f'{x:.1f}' for x in b)}  median {statistics.median(b):.1f}")
print(f"torch peer  images/s: {', '.join(f'{x:.1f}' for x in t)}  median {statistics.median(t):.1f}")
print(f"ratio bfeed/torch (medians): {statistics.median(b) / statistics.median(t):.2f}")
PY
