#!/bin/sh
# bench/compare.sh -- bfeed against the decode floor and the PyTorch DataLoader peer, on one ImageFolder tree.
# Run by hand (never by the tests); needs Debian's python3 with torch and torchvision for the peer.
#
#   bench/compare.sh DATA_DIR [ROUNDS] [MIN_SAMPLES]
#
# First it prints the load average and the processes using CPU: a ratio
# counts only when nothing else ran (stop builds, tests and helpers first).
# Then it packs the images twice with `bfeed pack` (--images raw and
# --images jpeg, the default --max-side) and prints their size beside the
# originals'. In each of ROUNDS rounds (default 3), one after another on the same
# images: the decode floor (bench/decode_floor: every JPEG decoded whole by
# libjpeg-turbo on as many threads as cores), `bfeed bench` in train and
# eval over shared memory (the default on a Unix socket) and over the socket
# with each codec (none, u8, zstd:1, u8+zstd:1), eval with --eval-decode
# fast, both packs over shared memory (train and eval), and
# bench/torch_peer.py in train and eval, plain and with Pillow's draft
# (--draft: the fastest DataLoader Debian's packages give, not exact). Alternating rounds spread the machine's other load
# over every contender. Each run measures at least MIN_SAMPLES samples
# (default 2000) after a warm-up epoch. Prints every result, then medians,
# ratios, wire bytes and CPU per 1000 samples. Works on any ImageFolder
# tree, `bfeed make-demo` output included.
#
# BFEED_PACK_OPTS="--short-side 256" (say) packs with those options instead
# of the defaults.
#
# BFEED_BEFORE=DIR (another build's bin/, e.g. main's) adds its bfeedd and
# bfeed as contenders "before/MODE/CODEC" (codecs none and u8) in the same
# rounds, and prints this build's throughput as a ratio of it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:?usage: bench/compare.sh DATA_DIR [ROUNDS] [MIN_SAMPLES]}
rounds=${2:-3}
min_samples=${3:-2000}
[ -d "$data" ] || { echo "compare.sh: no folder at $data" >&2; exit 1; }
data=$(cd "$data" && pwd)
cd "$here/.."
bin=${BFEED_BIN:-build/bin}
[ -x "$bin/bfeedd" ] && [ -x "$bin/decode_floor" ] || scripts/build.sh >/dev/null
py=/usr/bin/python3
cores=$(nproc)
n=$(find -L "$data" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l)
[ "$n" -gt 0 ] || { echo "compare.sh: no JPEGs under $data" >&2; exit 1; }
batch=64
[ "$n" -ge "$batch" ] || batch=$n
bpe=$((n / batch))
epochs=$(( (min_samples + bpe * batch - 1) / (bpe * batch) ))
[ "$epochs" -ge 2 ] || epochs=2

echo "== load before the rounds: $(cat /proc/loadavg)"
echo "== processes using CPU (top, one snapshot):"
top -b -n 1 -o %CPU | sed -n '7,14p'

run=$(mktemp -d /tmp/bfeed-compare.XXXXXX)
for images in raw jpeg; do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$bin/bfeed" pack "$data" "$run/pack-$images" --images "$images" ${BFEED_PACK_OPTS:-} >"$run/pack-$images.log" 2>&1 ||
    { cat "$run/pack-$images.log"; exit 1; }
  echo "== pack --images $images: $(du -sb "$run/pack-$images" | cut -f1) bytes, originals $(du -sbL "$data" | cut -f1) bytes;" \
    "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s to pack"
done
"$bin/bfeedd" --listen "unix:$run/s.sock" --dataset bench="$data" --dataset raw="pack:$run/pack-raw" \
  --dataset jpeg="pack:$run/pack-jpeg" --workers "$cores" --log-level warning 2>"$run/log" &
pid=$!
bpid=
before=${BFEED_BEFORE:-}
if [ -n "$before" ]; then
  "$before/bfeedd" --listen "unix:$run/b.sock" --dataset bench="$data" --workers "$cores" --log-level warning \
    2>"$run/blog" &
  bpid=$!
fi
trap 'kill $pid $bpid 2>/dev/null; wait $pid $bpid 2>/dev/null; rm -rf "$run"' EXIT
while [ ! -S "$run/s.sock" ] || { [ -n "$before" ] && [ ! -S "$run/b.sock" ]; }; do sleep 0.1; done

echo "$n JPEGs in $data; batch $batch, 224x224, $epochs epochs measured after 1 warm-up, $cores cores, $rounds rounds"
# Every result is one line: NAME JSON.
for r in $(seq "$rounds"); do
  echo "floor $("$bin/decode_floor" "$data" "$cores" "$epochs")" >>"$run/res"
  for mode in train eval; do
    # shm: the default on a unix: address (raw tensors in a shared ring);
    # the codecs are measured over the socket (--no-shm), as TCP clients get them.
    for codec in shm none u8 zstd:1 u8+zstd:1; do
      if [ "$codec" = shm ]; then how="--codec none"; else how="--codec $codec --no-shm"; fi
      # shellcheck disable=SC2086
      out=$("$bin/bfeed" bench --connect "unix:$run/s.sock" --dataset bench --mode "$mode" --size 224 \
        --batch "$batch" --epochs $((epochs + 1)) --warmup "$bpe" --seed "$r" $how --json | tail -1)
      echo "$mode/$codec $out" >>"$run/res"
      case "$codec" in none | u8) [ -n "$before" ] || continue ;; *) continue ;; esac
      # shellcheck disable=SC2086
      out=$("$before/bfeed" bench --connect "unix:$run/b.sock" --dataset bench --mode "$mode" --size 224 \
        --batch "$batch" --epochs $((epochs + 1)) --warmup "$bpe" --seed "$r" $how --json | tail -1)
      echo "before/$mode/$codec $out" >>"$run/res"
    done
    # eval_decode=fast, and the packs (shared memory, codec none).
    for what in fast raw jpeg; do
      if [ "$what" = fast ]; then [ "$mode" = eval ] || continue; set -- --dataset bench --eval-decode fast
      else set -- --dataset "$what"; fi
      out=$("$bin/bfeed" bench --connect "unix:$run/s.sock" "$@" --mode "$mode" --size 224 \
        --batch "$batch" --epochs $((epochs + 1)) --warmup "$bpe" --seed "$r" --codec none --json | tail -1)
      echo "$mode/$what $out" >>"$run/res"
    done
    for peer in torch torch-draft; do
      flag=; [ "$peer" = torch ] || flag=--draft
      # shellcheck disable=SC2086
      echo "$mode/$peer $($py bench/torch_peer.py "$data" --mode "$mode" --batch "$batch" --workers "$cores" \
        --epochs "$epochs" --size 224 $flag)" >>"$run/res"
    done
  done
  echo "round $r done" >&2
done

$py - "$run/res" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, js = line.split(" ", 1)
    runs.setdefault(name, []).append(json.loads(js))
def rate(d):
    return d.get("samples_per_s", d.get("images_per_s"))
med = {k: statistics.median(rate(d) for d in v) for k, v in runs.items()}
print("\n%-16s %10s   %s" % ("run", "median/s", "each round (images/s)"))
for k, v in runs.items():
    print("%-16s %10.1f   %s" % (k, med[k], ", ".join("%.1f" % rate(d) for d in v)))
print("\nratios of medians")
for mode in ("train", "eval"):
    none, shm = med[mode + "/none"], med[mode + "/shm"]
    print("  %s: bfeed/torch %.2f, bfeed/floor %.2f (socket, codec none); shm %.2f and %.2f" % (
        mode, none / med[mode + "/torch"], none / med["floor"], shm / med[mode + "/torch"], shm / med["floor"]))
    print("    shm/torch-draft %.2f; pack raw/floor %.2f, pack jpeg/floor %.2f%s" % (
        shm / med[mode + "/torch-draft"], med[mode + "/raw"] / med["floor"], med[mode + "/jpeg"] / med["floor"],
        ", eval-decode fast/floor %.2f" % (med["eval/fast"] / med["floor"]) if mode == "eval" else ""))
    for codec in ("u8", "zstd:1", "u8+zstd:1"):
        k = "%s/%s" % (mode, codec)
        wire = statistics.median(d["wire_bytes"] / d["raw_bytes"] for d in runs[k])
        print("    %-10s throughput %.2f of none, wire %.3f of the tensors" % (codec, med[k] / none, wire))
for k in sorted(runs):
    if k.startswith("before/"):
        print("  %s: this build %.2fx of before" % (k[7:], med[k[7:]] / med[k]))
print("\nCPU seconds per 1000 samples (medians; daemon = the whole bfeedd process)")
for k, v in runs.items():
    if "client_cpu_s_per_1k" in v[0]:
        print("  %-16s client %.3f  daemon %.3f" % (k, statistics.median(d["client_cpu_s_per_1k"] for d in v),
                                                   statistics.median(d.get("daemon_cpu_s_per_1k", -1) for d in v)))
PY
