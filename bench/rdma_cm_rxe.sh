#!/usr/bin/env bash
# rdma_cm against ibemu and against the kernel's rdma_cm on rdma_rxe, side
# by side in one QEMU guest: connection setup (ucmatose: N connections
# resolved, connected, one message each way, disconnected) as connections
# a second, the same for the connections beyond the first (runs of 1 and
# 2N: the program's start and the device's opening left out), and
# ib_send_lat -R typical latency. ibemu0 -> ibemu1 across
# both switches of the default fabric with OpenSM; rxe0 to itself on a
# dummy netdev. Medians of RUNS runs, ibemu's and rxe's alternating, and
# ibemu's figure as a ratio to rxe's.
# Needs root. usage: bench/rdma_cm_rxe.sh [BUILD_DIR] [RUNS] [CONNECTIONS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
conns=${3:-20}
command -v ucmatose >/dev/null || { echo "rdma_cm_rxe: needs rdmacm-utils (tools/install-deps.sh)" >&2; exit 1; }
[ "${IBEMU_IN_VM:-}" = 1 ] || exec "$here/bench/vm_bench.sh" 2400 "$here/bench/rdma_cm_rxe.sh" "$build" "$runs" "$conns"

# --- in the guest
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
rm -f /etc/modprobe.d/ibemu-no-ib-core.conf
modprobe crc32_generic && modprobe rdma_rxe && modprobe rdma_ucm && modprobe dummy
ip link add rxed0 type dummy && ip addr add 10.55.0.1/24 dev rxed0 && ip link set rxed0 up
rdma link add rxe0 type rxe netdev rxed0

# run TARGET SERVER... -- CLIENT...: the server in the background, the
# client timed; prints the client's wall time in seconds, or nothing if it failed
run() {
	local target=$1 s=() c=() pre=()
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	[ "$target" = ibemu ] && pre=("$ibemu" exec --instance bench --)
	"${pre[@]}" "${s[@]}" >/tmp/srv.out 2>&1 &
	local srv=$!
	sleep 2
	local t0 t1 rc=0
	t0=$(date +%s.%N)
	timeout 600 "${pre[@]}" "${c[@]}" >/tmp/cli.out 2>&1 || rc=$?
	t1=$(date +%s.%N)
	wait $srv || rc=1
	[ $rc = 0 ] && awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
	return 0
}
ucmatose_run() { # TARGET N: the client's seconds for N connections
	if [ "$1" = ibemu ]; then
		run ibemu ucmatose -b 10.200.1.1 -c "$2" -C 1 -- ucmatose -s 10.200.1.1 -b 10.200.0.1 -c "$2" -C 1
	else
		run rxe ucmatose -b 10.55.0.1 -c "$2" -C 1 -- ucmatose -s 10.55.0.1 -b 10.55.0.1 -c "$2" -C 1
	fi
}
rate() { # TARGET: connections a second of one ucmatose run
	local t
	t=$(ucmatose_run "$1" "$conns")
	[ -n "$t" ] && awk -v n="$conns" -v t="$t" 'BEGIN { printf "%.1f\n", n / t }'
	return 0
}
marginal() { # TARGET: connections a second beyond the first, (2N - 1) / (t(2N) - t(1))
	local one many
	one=$(ucmatose_run "$1" 1)
	many=$(ucmatose_run "$1" $((2 * conns)))
	[ -n "$one" ] && [ -n "$many" ] &&
		awk -v n=$((2 * conns - 1)) -v a="$one" -v b="$many" 'BEGIN { if (b > a) printf "%.1f\n", n / (b - a) }'
	return 0
}
lat() { # TARGET: ib_send_lat -R typical latency, us
	local dev=ibemu1 cdev=ibemu0 addr=10.200.1.1
	[ "$1" = rxe ] && dev=rxe0 cdev=rxe0 addr=10.55.0.1
	for _ in 1 2 3; do # a run spoiled by TCG's clock noise prints no figures: again
		run "$1" ib_send_lat -R -d $dev -n 300 -- ib_send_lat -R -d $cdev -n 300 $addr >/dev/null
		perftest_figure ib_send_lat /tmp/cli.out | grep . && return 0
	done
}
. "$here/bench/lib.sh"

# row LABEL FN: FN for ibemu and for rxe in turn, RUNS rounds (the host's
# load drifts; alternating keeps it from favouring either), medians
row() {
	local label=$1 fn=$2 res a b
	res=$(for _ in $(seq "$runs"); do
		echo "ibemu $($fn ibemu)"
		echo "rxe $($fn rxe)"
	done)
	a=$(awk '$1 == "ibemu" && NF == 2 { print $2 }' <<<"$res" | median)
	b=$(awk '$1 == "rxe" && NF == 2 { print $2 }' <<<"$res" | median)
	printf '%-34s %12s %12s %10s\n' "$label" "$a" "$b" "$(ratio "$a" "$b")"
}
echo "rdma_cm, $(nproc) vCPU TCG guest, medians of $runs runs, ibemu and rxe alternating"
printf '%-34s %12s %12s %10s\n' measure ibemu rxe ibemu/rxe
row "ucmatose -c $conns: connections/s" rate
row "beyond the first: connections/s" marginal
row "ib_send_lat -R: t_typical us" lat
rdma link delete rxe0
"$ibemu" down --instance bench --kill-clients >/dev/null
