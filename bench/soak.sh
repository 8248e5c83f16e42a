#!/bin/sh
# bench/soak.sh -- one daemon under a mix of clients for a long time: its
# memory, threads and descriptors over time, and whether anything is lost.
# Run by hand (never by the tests), alone on the machine.
#
#   bench/soak.sh IMAGE_DIR VECTORS [MINUTES] [MAX_MEMORY]
#
# One daemon (--max-memory MAX_MEMORY, default 512M; as many workers as
# cores) serves IMAGE_DIR (an ImageFolder) and a text dataset that
# `bfeed make-demo --text VECTORS` writes, on a Unix socket and on TCP.
# For MINUTES (default 30), four clients run one `bfeed bench` after the
# other, each a new connection and stream with a new seed:
#   train  batch 32 at 224 over shared memory (the Unix socket's default);
#   eval   batch 32 at 160 (resize + centre crop);
#   text   batch 64 of the text dataset, max_len 64;
#   zstd   batch 32 at 224 over TCP, zstd:1;
# and the daemon gets a SIGHUP (a reload) every 30 s. Every 10 s a line:
# the time, the daemon's VmRSS and VmHWM, its threads and open descriptors,
# and the clients' runs so far. At the end, each 5-minute window's lowest
# and highest RSS, the runs and samples per client, the failed runs (their
# messages), and the daemon's own counters of connections and samples.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
images=${1:?usage: bench/soak.sh IMAGE_DIR VECTORS [MINUTES] [MAX_MEMORY]}
vectors=${2:?usage: bench/soak.sh IMAGE_DIR VECTORS [MINUTES] [MAX_MEMORY]}
minutes=${3:-30}
maxmem=${4:-512M}
images=$(cd "$images" && pwd)
vectors=$(cd "$(dirname "$vectors")" && pwd)/$(basename "$vectors")
cd "$here/.."
. bench/bench_prelude.sh
bench_machine before

run=$(mktemp -d /tmp/bfeed-soak.XXXXXX)
"$bin/bfeed" make-demo "$run/corpus" --text "$vectors" >/dev/null
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/bfeedd" --listen "unix:$run/s.sock" --listen "127.0.0.1:$port" --dataset img="$images" \
  --dataset txt="text:$run/corpus/train.txt,vectors=$vectors" --workers "$cores" --max-memory "$maxmem" \
  --log-level warning >"$run/log" 2>&1 &
pid=$!
kids=
# The daemon and the clients go with the script, however it ends (set -e
# must not cut the trap short: a bare `kill` with no pids fails).
trap 'set +e; [ -z "$kids" ] || kill $kids 2>/dev/null; kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$run"' EXIT
trap 'exit 130' INT TERM
i=0
until [ -S "$run/s.sock" ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$run/s.sock" ] || { cat "$run/log"; exit 1; }
end=$(($(date +%s) + minutes * 60))

# One client: NAME, then its bench options, in a loop until the end. Each
# run appends "ok SAMPLES" or "fail MESSAGE" to $run/NAME.
client() {
  name=$1
  shift
  seed=0
  while [ "$(date +%s)" -lt "$end" ]; do
    seed=$((seed + 1))
    if "$bin/bfeed" bench "$@" --seed "$seed" --epochs 2 --json >"$run/$name.json" 2>"$run/$name.err"; then
      echo "ok $(sed -n 's/.*"samples": *\([0-9]*\).*/\1/p' "$run/$name.json")" >>"$run/$name"
    else
      echo "fail $(tail -1 "$run/$name.err")" >>"$run/$name"
    fi
  done
}
client train --connect "unix:$run/s.sock" --dataset img --batch 32 --size 224 &
kids="$kids $!"
client eval --connect "unix:$run/s.sock" --dataset img --batch 32 --size 160 --mode eval &
kids="$kids $!"
client text --connect "unix:$run/s.sock" --dataset txt --batch 64 --max-len 64 &
kids="$kids $!"
client zstd --connect "127.0.0.1:$port" --dataset img --batch 32 --size 224 --codec zstd:1 &
kids="$kids $!"

status() { awk -v k="$1" '$1 == k ":" {print $2}' "/proc/$pid/status"; }
runs() { cat "$run/$1" 2>/dev/null | wc -l; }
start=$(date +%s)
last_hup=$start
echo "seconds rss_kib hwm_kib threads fds runs(train eval text zstd)"
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 10
  now=$(date +%s)
  if [ $((now - last_hup)) -ge 30 ]; then
    kill -HUP "$pid"
    last_hup=$now
  fi
  line="$((now - start)) $(status VmRSS) $(status VmHWM) $(status Threads) $(ls "/proc/$pid/fd" | wc -l)"
  echo "$line $(runs train) $(runs eval) $(runs text) $(runs zstd)" | tee -a "$run/samples"
done
wait $kids 2>/dev/null || true
kids=
"$bin/bfeed" stats --connect "unix:$run/s.sock" --json >"$run/stats.json"
"$py" - "$run" <<'EOF'
import json, os, sys
run = sys.argv[1]
rows = [list(map(int, l.split()[:5])) for l in open(os.path.join(run, "samples"))]
print("== RSS by 5-minute window (KiB): lowest, highest; threads and fds at its end")
for w in range(0, rows[-1][0] + 1, 300):
    part = [r for r in rows if w <= r[0] < w + 300]
    if part:
        print(f"{w // 60:3d}-{w // 60 + 5:3d} min  rss {min(r[1] for r in part):8d} {max(r[1] for r in part):8d}"
              f"  threads {part[-1][3]}  fds {part[-1][4]}")
print(f"peak RSS (VmHWM, highest read) {max(r[2] for r in rows)} KiB")
failed = 0
for name in ("train", "eval", "text", "zstd"):
    lines = open(os.path.join(run, name)).read().splitlines() if os.path.exists(os.path.join(run, name)) else []
    ok = [l for l in lines if l.startswith("ok")]
    bad = [l for l in lines if not l.startswith("ok")]
    failed += len(bad)
    samples = sum(int(l.split()[1]) for l in ok if len(l.split()) > 1)
    print(f"{name:6s} {len(ok)} runs, {samples} samples, {len(bad)} failed")
    for l in bad[:5]:
        print("   ", l)
stats = json.load(open(os.path.join(run, "stats.json")))
print("daemon:", ", ".join(f"{k} {stats['daemon'][k]}" for k in ("clients_total", "clients_rejected", "protocol_errors")))
for name, ds in sorted(stats["datasets"].items()):
    print(f"dataset {name}: {ds['streams_total']} streams, {ds['samples']} samples, {ds['skipped']} skipped")
sys.exit(1 if failed else 0)
EOF
