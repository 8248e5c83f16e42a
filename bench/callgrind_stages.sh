#!/bin/sh
# bench/callgrind_stages.sh -- instructions per sample for each stage of the daemon's image path, by callgrind.
# Run by hand (valgrind is not a test dependency); the table in bench/README.md comes from it.
#
#   bench/callgrind_stages.sh BIN_DIR DATA_DIR [MODE] [SAMPLES] [SIZE]
#
# Starts BIN_DIR/bfeedd under callgrind with one worker on the ImageFolder
# DATA_DIR, has BIN_DIR/bfeed fetch SAMPLES (default 64) samples in MODE
# (train or eval, default eval; SIZE x SIZE, default 224, bf16 NCHW, codec none, no shuffle),
# stops the daemon and prints, per sample (instructions divided by the calls
# of sample_load), the inclusive instruction counts of:
#   decode     image_decode_header + _start + _read (libjpeg included)
#   resize     resize_rgb8
#   sample     sample_load (decode + resize + what sample.c adds: mirror)
#   batch      batch_build (sample + file read + cast to bf16 + frame)
# and their differences: batch - sample is the read, cast and framing.
# With a recipe in RECIPE (stream options, e.g. RECIPE="--auto-augment ta_wide
# --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1"), also the recipe's
# stages per sample (aug_program_sample: the pixel ops; batch_aug_image: erase,
# mix, cast) and each pixel op's instructions per call, on the output size.
set -eu
bin=${1:?usage: bench/callgrind_stages.sh BIN_DIR DATA_DIR [MODE] [SAMPLES] [SIZE]}
data=${2:?usage: bench/callgrind_stages.sh BIN_DIR DATA_DIR [MODE] [SAMPLES] [SIZE]}
mode=${3:-eval}
samples=${4:-64}
size=${5:-224}
run=$(mktemp -d /tmp/bfeed-callgrind.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$run"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$run/cg.out" "$bin/bfeedd" --listen "unix:$run/s.sock" \
  --dataset bench="$data" --workers 1 --log-level warning 2>"$run/vg.log" &
pid=$!
i=0
while [ ! -S "$run/s.sock" ]; do sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || { cat "$run/vg.log"; exit 1; }; done
"$bin/bfeed" fetch --connect "unix:$run/s.sock" --dataset bench --mode "$mode" --size "$size" --batch "$samples" \
  --shuffle off --batch-index 0 --out "$run/out" ${RECIPE:-} >/dev/null
kill -TERM $pid
wait $pid || true
/usr/bin/python3 - "$run/cg.out" "$mode" <<'PY'
import re, subprocess, sys
out, mode = sys.argv[1], sys.argv[2]
# calls of each function, from the callgrind file (names may be compressed as "(id) name" / "(id)").
names, calls, cur = {}, {}, None
for line in open(out):
    m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3).strip()
        if m.group(1) == "cfn":
            cur = names[m.group(2)]
        continue
    m = re.match(r"calls=(\d+)", line)
    if m and cur:
        calls[cur] = calls.get(cur, 0) + int(m.group(1))
        cur = None
ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", out],
                     stdout=subprocess.PIPE, universal_newlines=True).stdout
incl = {}
for line in ann.splitlines():
    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*:(\S+?)(?: \[.*\])?$", line)
    if m:
        # a function may be listed under two spellings of its file (and bits inlined from headers): the largest
        incl[m.group(2)] = max(incl.get(m.group(2), 0), int(m.group(1).replace(",", "")))
print("calls:", {k: calls.get(k) for k in ("sample_load", "image_decode_header", "resize_rgb8", "batch_build", "tobf16_image")}, file=sys.stderr)
n = calls.get("sample_load", 0)
if not n:
    sys.exit("callgrind_stages: no call of sample_load recorded")
def per(*fs):
    return sum(incl.get(f, 0) for f in fs) / n
dec = per("image_decode_header", "image_decode_start", "image_decode_read")
rs, smp, bb = per("resize_rgb8"), per("sample_load"), per("batch_build")
print("%s, %d samples; instructions per sample (millions)" % (mode, n))
print("| decode | resize | sample (decode+resize+rest) | batch_build - sample (read, cast, frame) | batch_build |")
print("|---|---|---|---|---|")
print("| %.2f | %.2f | %.2f | %.2f | %.2f |" % (dec / 1e6, rs / 1e6, smp / 1e6, (bb - smp) / 1e6, bb / 1e6))
if calls.get("aug_program_sample"):
    print("\nrecipe: pixel ops (aug_program_sample) %.2f, erase + mix + cast (batch_aug_image) %.2f million per sample"
          % (per("aug_program_sample") / 1e6, per("batch_aug_image") / 1e6))
    print("| op | calls | instructions per call (millions) |")
    print("|---|---:|---:|")
    ops = r"pil_(affine_(apply_op|rotate)|hsv_adjust_hue|enhance_(brightness|saturation|contrast|sharpness|" \
          r"posterize|solarize|autocontrast|equalize|invert))$"
    for f in sorted(k for k in incl if re.match(ops, k) and calls.get(k)):
        print("| %s | %d | %.3f |" % (f, calls[f], incl[f] / calls[f] / 1e6))
PY
