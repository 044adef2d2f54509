#!/usr/bin/env bash
# perftest across hosts against the same on one daemon, in one QEMU guest
# (verbs need CUSE): host1 -> host2 of the built-in fabric, once on one
# daemon (both HCAs local to it) and once on the fabric split over three
# daemons in network namespaces (tests/data/split3.topo: host1 in a,
# host2 in b), where every message and reply crosses between daemons as
# packets over the authenticated TCP channel. Typical latency and average
# bandwidth, medians of RUNS runs, and split/one ratios.
# Needs root. usage: bench/multihost_verbs.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
command -v ib_send_lat >/dev/null || { echo "multihost_verbs: needs perftest (tools/install-deps.sh)" >&2; exit 1; }
[ "${IBEMU_IN_VM:-}" = 1 ] || exec "$here/bench/vm_bench.sh" 2400 "$here/bench/multihost_verbs.sh" "$build" "$runs"

# --- in the guest
. "$here/bench/lib.sh"
ibemu=$build/tools/ibemu
export IBEMU_RUN_DIR=/run/ibemu-bench OSM_CACHE_DIR=/run/ibemu-bench-osm
mkdir -p "$OSM_CACHE_DIR"
ip link set lo up
. "$here/tests/e2e/netns.sh"
netns_hosts bmv a b c
head -c 32 /dev/urandom | base64 >/run/bench.key
chmod 600 /run/bench.key

active() { # INSTANCE HCA
	for _ in $(seq 600); do
		"$ibemu" exec --instance "$1" -- sh -c "ibstat $2 | grep -q 'State: Active'" && return 0
		sleep 0.2
	done
	return 1
}
"$ibemu" up --instance one >/dev/null
"$ibemu" exec --instance one -- opensm -g 0x0002c90300000101 -f /run/osm-one.log -s 0 >/dev/null 2>&1 &
active one ibemu1
for h in a b c; do
	nsenter --net="/run/netns/${NS[$h]}" "$ibemu" up --instance "split-$h" --transport cuse \
		--topology "$here/tests/data/split3.topo" --host $h --subnet-key /run/bench.key >/dev/null
done
"$ibemu" exec --instance split-a -- opensm -g 0x0002c90300000101 -f /run/osm-split.log -s 0 >/dev/null 2>&1 &
active split-b ibemu0

port=18600
# one MODE TEST ARGS...: one run's figure (t_typical or BW average); a
# run whose cycle-rate measurement was too noisy is repeated, at most twice
one() {
	local fig
	for _ in 1 2 3; do
		fig=$(one_try "$@")
		[ -n "$fig" ] && break
	done
	echo "$fig"
}
one_try() {
	local mode=$1 test=$2
	shift 2
	port=$((port + 1))
	local srv=() cli=()
	if [ "$mode" = one ]; then
		srv=("$ibemu" exec --instance one -- "$test" -d ibemu1)
		cli=("$ibemu" exec --instance one -- "$test" -d ibemu0)
	else
		srv=("$ibemu" exec --instance split-b -- "$test" -d ibemu0)
		cli=("$ibemu" exec --instance split-a -- "$test" -d ibemu0)
	fi
	"${srv[@]}" -p $port "$@" >/tmp/srv.out 2>&1 &
	local s=$!
	for _ in $(seq 100); do ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.1; done
	timeout 300 "${cli[@]}" -p $port "$@" 127.0.0.1 >/tmp/cli.out 2>&1 || true
	wait $s || true
	perftest_figure "$test" /tmp/cli.out
}

echo "perftest, default flags, $(nproc) vCPU TCG guest, medians of $runs runs"
printf '%-12s %9s %14s %14s %10s\n' test size "one daemon" "split (a->b)" split/one
row() { # TEST SIZE UNIT ARGS...
	local test=$1 size=$2 unit=$3
	shift 3
	local a b
	a=$(for _ in $(seq "$runs"); do one one "$test" -s "$size" "$@"; done | median)
	b=$(for _ in $(seq "$runs"); do one split "$test" -s "$size" "$@"; done | median)
	printf '%-12s %9s %14s %14s %10s\n' "$test" "$size" "$a $unit" "$b $unit" \
		"$(ratio "$b" "$a")"
}
row ib_send_lat 2 us -n 300
row ib_write_lat 2 us -n 300
row ib_write_bw 65536 MB/s -n 200
row ib_write_bw 1048576 MB/s -n 20
row ib_read_bw 65536 MB/s -n 200
for i in one split-a split-b split-c; do "$ibemu" down --instance "$i" --kill-clients >/dev/null; done
netns_cleanup
