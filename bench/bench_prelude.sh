# bench/bench_prelude.sh -- sourced by the benchmark scripts, from the
# repository root: the binaries to time ($bin: BFEED_BIN, default build/bin,
# built if missing), Debian's Python ($py), the core count ($cores), and
# bench_machine WHEN, the load and the busiest processes (a figure counts
# only if nothing else ran beside it).
bin=${BFEED_BIN:-build/bin}
[ -x "$bin/bfeedd" ] || scripts/build.sh >/dev/null
py=/usr/bin/python3
cores=$(nproc)

bench_machine() {
  echo "== the machine $1: load $(cut -d' ' -f1-3 /proc/loadavg); busiest processes:"
  ps -eo pcpu=,comm= --sort=-pcpu | head -5
}
