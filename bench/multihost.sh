#!/usr/bin/env bash
# One subnet on one daemon against the same subnet split over 4 daemons
# (4 network namespaces on a bridge, on this machine), split two ways:
#   leaves  each leaf switch with its CAs to the next host in turn, the
#           spines dealt out in turn (most SMPs cross one or two hosts)
#   cas     every switch on the first host, the CAs dealt out by leaf
#           (each host its HCAs, one host the switch fabric)
# on a 2-level fat tree of 2048 CAs, radix 64. Measured, median of RUNS
# fresh fabrics:
#   - OpenSM -o bring-up wall time, from an SM in the first host,
#   - ibnetdiscover wall time, from the first host,
#   - median round trip of 2000 serial 2-hop DR NodeInfo SMPs to a spine
#     (bench/smp_rtt; on another host in the leaves split, on the SM's in
#     the cas split),
#   - the daemons' CPU time over all of it (every daemon's utime+stime),
#   - packets the fabric dropped (every daemon's dropped_packets).
# Prints each figure with the split/single ratio from this run. The
# issue's goal is a bring-up ratio of at most 1.5.
# Needs root. usage: bench/multihost.sh [BUILD_DIR] [RUNS] [HOSTS_CAS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
cas=${3:-2048}
ibemu=$build/tools/ibemu
rtt=$build/bench/smp_rtt
[ -x "$ibemu" ] && [ -x "$rtt" ] || { echo "multihost: build first (meson compile -C $build)" >&2; exit 1; }
work=$(mktemp -d /tmp/ibemu-bench-mh.XXXXXX)
export IBEMU_RUN_DIR=$work/run OSM_CACHE_DIR=$work/osm
mkdir -p "$OSM_CACHE_DIR"
tag=$$
names=(a b c d)
declare -A NS
inst=bench-mh-$tag
cleanup() {
	for h in single "${names[@]}"; do "$ibemu" down --instance "$inst-$h" >/dev/null 2>&1 || true; done
	for h in "${names[@]}"; do ip netns del "${NS[$h]}" 2>/dev/null || true; done
	ip netns del "ibemu-bmh$tag-sw" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

. "$here/bench/lib.sh"
cpu() { # INSTANCE: the daemon's CPU seconds so far
	local pid
	pid=$("$ibemu" status --instance "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
	awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"
}
dropped() { "$ibemu" status --instance "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["dropped_packets"])'; }

# the hosts: namespaces with documentation addresses, on a bridge
ip netns add "ibemu-bmh$tag-sw"
ip -n "ibemu-bmh$tag-sw" link add br0 type bridge
ip -n "ibemu-bmh$tag-sw" link set br0 up
hostargs=()
for i in "${!names[@]}"; do
	h=${names[$i]}
	NS[$h]=ibemu-bmh$tag-$h
	ip netns add "${NS[$h]}"
	ip link add "bm$tag$h" netns "${NS[$h]}" type veth peer name "bb$tag$h" netns "ibemu-bmh$tag-sw"
	ip -n "${NS[$h]}" link set lo up
	ip -n "${NS[$h]}" link set "bm$tag$h" up
	ip -n "${NS[$h]}" addr add "192.0.2.$((i + 1))/24" dev "bm$tag$h"
	ip -n "ibemu-bmh$tag-sw" link set "bb$tag$h" master br0 up
	hostargs+=("$h=192.0.2.$((i + 1)):7700")
done

"$ibemu" topo gen fat-tree --levels 2 --hosts "$cas" --radix 64 -o "$work/full.topo"
python3 "$here/bench/split_topology.py" --by leaves "$work/full.topo" "$work/leaves.topo" "${hostargs[@]}"
python3 "$here/bench/split_topology.py" --by cas "$work/full.topo" "$work/cas.topo" "${hostargs[@]}"
head -c 32 /dev/urandom | base64 >"$work/key"
chmod 600 "$work/key"
sm_guid=0x0002c90300000011 # host00001's port: on leaf-001, which the split gives host a
path=0,1,35                # leaf-001's port 35: spine-003, which the split gives host c

measure() { # INSTANCE-OF-SM: one bring-up, discovery, RTT
	local t
	t=$(now)
	"$ibemu" exec --instance "$1" -- opensm -o -g $sm_guid -f "$work/osm.log" >/dev/null 2>&1
	up+=("$(elapsed "$t")")
	t=$(now)
	"$ibemu" exec --instance "$1" -- ibnetdiscover >"$work/disc.out" 2>&1
	disc+=("$(elapsed "$t")")
	found+=("$(grep -cE '^(Switch|Ca)' "$work/disc.out")")
	rtts+=("$("$ibemu" exec --instance "$1" -- "$rtt" ibemu0 1 2000 $path | cut -d' ' -f1)")
}

declare -A r_up r_disc r_rtt r_drop r_found r_cpu
for mode in single leaves cas; do
	up=() disc=() rtts=() found=() drops=() cpus=()
	for _ in $(seq "$runs"); do
		if [ $mode = single ]; then
			"$ibemu" up --instance "$inst-single" --topology "$work/full.topo" >/dev/null
			measure "$inst-single"
			drops+=("$(dropped "$inst-single")")
			cpus+=("$(cpu "$inst-single")")
			"$ibemu" down --instance "$inst-single" >/dev/null
		else
			for h in "${names[@]}"; do
				nsenter --net="/run/netns/${NS[$h]}" "$ibemu" up --instance "$inst-$h" --topology "$work/$mode.topo" \
					--host "$h" --subnet-key "$work/key" >/dev/null
			done
			# every daemon has its peers up before the SM starts
			for h in "${names[@]}"; do
				for _ in $(seq 300); do
					n=$("$ibemu" status --instance "$inst-$h" --json |
						python3 -c 'import json,sys; s=json.load(sys.stdin)["split"]; print(all(p["state"] == "up" for p in s["peers"]))')
					[ "$n" = True ] && break
					sleep 0.1
				done
			done
			measure "$inst-a"
			d=0 c=0
			for h in "${names[@]}"; do
				d=$((d + $(dropped "$inst-$h")))
				c=$(awk -v a="$c" -v b="$(cpu "$inst-$h")" 'BEGIN {print a + b}')
			done
			drops+=("$d")
			cpus+=("$c")
			for h in "${names[@]}"; do "$ibemu" down --instance "$inst-$h" >/dev/null; done
		fi
	done
	r_up[$mode]=$(printf '%s\n' "${up[@]}" | median)
	r_disc[$mode]=$(printf '%s\n' "${disc[@]}" | median)
	r_rtt[$mode]=$(printf '%s\n' "${rtts[@]}" | median)
	r_drop[$mode]=$(printf '%s\n' "${drops[@]}" | sort -g | tail -1)
	r_found[$mode]=$(printf '%s\n' "${found[@]}" | sort -g | head -1)
	r_cpu[$mode]=$(printf '%s\n' "${cpus[@]}" | median)
done

printf '%-26s %9s %9s %9s %8s %8s\n' "$cas CAs, r64" single leaves/4 cas/4 leaves cas
row() { # measure r_array
	local -n r=$2
	printf '%-26s %9s %9s %9s %8s %8s\n' "$1" "${r[single]}" "${r[leaves]}" "${r[cas]}" \
		"$(ratio "${r[leaves]}" "${r[single]}")" "$(ratio "${r[cas]}" "${r[single]}")"
}
row "opensm -o (s)" r_up
row "ibnetdiscover (s)" r_disc
row "2-hop DR SMP RTT (us)" r_rtt
row "daemons' CPU, all (s)" r_cpu
row "nodes ibnetdiscover found" r_found
row "packets dropped (max)" r_drop
echo "(median of $runs runs; the last two columns are split/single; verbs across hosts:"
echo " bench/multihost_verbs.sh, in the VM)"
