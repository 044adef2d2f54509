#!/usr/bin/env bash
# perftest against ibemu and against the kernel's rdma_rxe, side by side in
# one QEMU guest (verbs need CUSE): the same Debian perftest binaries with
# their default flags, ibemu0 -> ibemu1 across both switches of the
# default fabric (ibemu's provider, as `ibemu exec` gives it) and rxe0 to
# itself on a dummy netdev. Prints typical latency and average bandwidth,
# medians of RUNS runs each, and ibemu's figure as a ratio to rxe's.
# Needs root. usage: bench/perftest_rxe.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
command -v ib_send_lat >/dev/null || { echo "perftest_rxe: needs perftest (tools/install-deps.sh)" >&2; exit 1; }
[ "${IBEMU_IN_VM:-}" = 1 ] || exec "$here/bench/vm_bench.sh" 2400 "$here/bench/perftest_rxe.sh" "$build" "$runs"

# --- in the guest
. "$here/bench/lib.sh"
ibemu=$build/tools/ibemu
export IBEMU_RUN_DIR=/run/ibemu-bench OSM_CACHE_DIR=/run/ibemu-bench-osm
mkdir -p "$OSM_CACHE_DIR"
ip link set lo up
"$ibemu" up --instance bench >/dev/null
"$ibemu" exec --instance bench -- opensm -g 0x0002c90300000101 -f /run/osm.log -s 0 >/dev/null 2>&1 &
for _ in $(seq 600); do
	"$ibemu" exec --instance bench -- sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu1 | grep -q "State: Active"' && break
	sleep 0.2
done
modprobe crc32_generic && modprobe rdma_rxe && modprobe ib_uverbs && modprobe dummy
ip link add rxed0 type dummy && ip link set rxed0 up && rdma link add rxe0 type rxe netdev rxed0

port=18600
# one TARGET TEST ARGS...: one run, prints the figure (t_typical or BW
# average); a run whose cycle-rate measurement was too noisy to report
# ("Correlation coefficient r^2 < 0.9") is repeated, at most twice
one() {
	local fig
	for _ in 1 2 3; do
		fig=$(one_try "$@")
		[ -n "$fig" ] && break
	done
	echo "$fig"
}
one_try() {
	local target=$1 test=$2
	shift 2
	port=$((port + 1))
	local srv=() cli=()
	if [ "$target" = ibemu ]; then
		srv=("$ibemu" exec --instance bench -- "$test" -d ibemu1)
		cli=("$ibemu" exec --instance bench -- "$test" -d ibemu0)
	else
		srv=("$test" -d rxe0)
		cli=("$test" -d rxe0)
	fi
	"${srv[@]}" -p $port "$@" >/tmp/srv.out 2>&1 &
	local s=$!
	for _ in $(seq 100); do ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.1; done
	timeout 300 "${cli[@]}" -p $port "$@" 127.0.0.1 >/tmp/cli.out 2>&1 || true
	wait $s || true
	# the result line: "#bytes #iterations ..." then the figures
	perftest_figure "$test" /tmp/cli.out
}

echo "perftest, default flags, $(nproc) vCPU TCG guest, medians of $runs runs"
printf '%-12s %9s %12s %12s %14s\n' test size ibemu rxe ibemu/rxe
row() { # TEST SIZE UNIT ARGS...
	local test=$1 size=$2 unit=$3
	shift 3
	local a b
	a=$(for _ in $(seq "$runs"); do one ibemu "$test" -s "$size" "$@"; done | median)
	b=$(for _ in $(seq "$runs"); do one rxe "$test" -s "$size" "$@"; done | median)
	printf '%-12s %9s %12s %12s %14s\n' "$test" "$size" "$a $unit" "$b $unit" \
		"$(ratio "$a" "$b")"
}
row ib_send_lat 2 us -n 300
row ib_write_lat 2 us -n 300
row ib_read_lat 2 us -n 300
row ib_write_bw 65536 MB/s -n 200
row ib_write_bw 1048576 MB/s -n 20
row ib_read_bw 65536 MB/s -n 200
row ib_read_bw 1048576 MB/s -n 20
rdma link delete rxe0
"$ibemu" down --instance bench --kill-clients >/dev/null
