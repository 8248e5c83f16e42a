#!/bin/sh
# bench/idle_streams.sh -- a working stream alone, and beside streams that
# open and never read, under a small max_memory (PROTOCOL.md "Flow control":
# idle streams give their memory to streams that read).
# Run by hand (never by the tests), alone on the machine.
#
#   bench/idle_streams.sh DATA_DIR [ROUNDS] [IDLE] [MAX_MEMORY]
#
# One daemon (--max-memory MAX_MEMORY, default 256M; as many workers as
# cores) serves DATA_DIR. In each of ROUNDS rounds (default 5), one after
# the other: `bfeed bench` alone, then the same with IDLE streams (default
# 8) held open by a second client that never reads them, once the daemon
# counts them idle. Prints the load and the busiest processes first, every
# result, then medians and the ratio beside/alone, with the bench's shm
# batch count. IDLE_WINDOW=N opens the idle streams with window N (the
# library's default otherwise), and IDLE_SHM=0 over the socket; the
# holder's peak RSS (what its streams were sent and never took) is printed
# each round. IDLE_WAIT=0 runs the bench as soon as the idle streams are
# open, while their windows are still being built and sent (a working
# client's first run beside clients that just connected).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:?usage: bench/idle_streams.sh DATA_DIR [ROUNDS] [IDLE] [MAX_MEMORY]}
rounds=${2:-5}
idle=${3:-8}
maxmem=${4:-256M}
data=$(cd "$data" && pwd)
cd "$here/.."
. bench/bench_prelude.sh
bench_machine before

run=$(mktemp -d /tmp/bfeed-idle.XXXXXX)
"$bin/bfeedd" --listen "unix:$run/s.sock" --dataset bench="$data" --workers "$cores" --max-memory "$maxmem" \
  --log-level warning 2>"$run/log" &
pid=$!
holder=
trap 'kill $pid $holder 2>/dev/null; wait $pid $holder 2>/dev/null; rm -rf "$run"' EXIT
while [ ! -S "$run/s.sock" ]; do sleep 0.1; done

bench() {
  "$bin/bfeed" bench --connect "unix:$run/s.sock" --dataset bench --batch 64 --size 224 --batches 60 \
    --warmup 5 --json 2>/dev/null
}

# IDLE streams on one connection, opened (so the daemon builds their
# windows) and never read, until the process is killed.
hold_idle() {
  PYTHONPATH=build/python "$py" -c '
import sys, time, bfeed
c = bfeed.connect(sys.argv[1], shm=sys.argv[4] != "0")
w = {"window": int(sys.argv[3])} if sys.argv[3] else {}
streams = [c.stream("bench", batch=64, size=224, seed=100 + i, **w) for i in range(int(sys.argv[2]))]
print("open", flush=True)
time.sleep(3600)' "unix:$run/s.sock" "$idle" "${IDLE_WINDOW:-}" "${IDLE_SHM:-1}" >"$run/holder.out" &
  holder=$!
  while ! grep -q open "$run/holder.out" 2>/dev/null; do sleep 0.1; done
  [ "${IDLE_WAIT:-1}" != 0 ] || return 0
  # Their batches built and sent, their memory held, until the daemon
  # counts them idle (a second after each had a batch to take; up to 60 s).
  for _ in $(seq 600); do
    n=$("$bin/bfeed" stats --connect "unix:$run/s.sock" --json 2>/dev/null |
      "$py" -c 'import json, sys; print(json.load(sys.stdin)["daemon"]["idle_streams"])' 2>/dev/null || echo 0)
    [ "$n" -ge "$idle" ] && break
    sleep 0.1
  done
}

for r in $(seq "$rounds"); do
  echo "alone $(bench)" >>"$run/res"
  hold_idle
  echo "beside $(bench)" >>"$run/res"
  echo "round $r: the idle streams' process peaked at $(grep VmHWM /proc/$holder/status | tr -s ' ' | cut -d' ' -f2-)"
  kill "$holder" && wait "$holder" 2>/dev/null || true
  holder=
done
cat "$run/res"
"$py" - "$run/res" "$idle" "$maxmem" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, js = line.split(" ", 1)
    rows.setdefault(name, []).append(json.loads(js))
med = {k: statistics.median(r["samples_per_s"] for r in v) for k, v in rows.items()}
for k in ("alone", "beside"):
    v = rows[k]
    print(f"{k:7s} median {med[k]:7.1f} samples/s  (min {min(r['samples_per_s'] for r in v):.1f}, "
          f"max {max(r['samples_per_s'] for r in v):.1f}); shm batches {[r.get('shm_batches') for r in v]}; "
          f"seconds {[round(r['seconds'], 2) for r in v]}")
print(f"beside {sys.argv[2]} idle streams / alone, max_memory {sys.argv[3]}: {med['beside'] / med['alone']:.3f}")
EOF
echo "== the machine after: load $(cut -d' ' -f1-3 /proc/loadavg)"
