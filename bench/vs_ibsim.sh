#!/usr/bin/env bash
# ibemu, on the seccomp transport (the default for `ibemu exec`) and on
# both FUSE request paths (/dev/fuse, and io_uring with a queue per CPU),
# against ibsim on the same generated fat trees (2k and 20k CAs):
#   - OpenSM -o bring-up wall time (fresh fabric each run, median),
#   - ibnetdiscover wall time (median),
#   - median round trip of a serial loop of 1-hop DR NodeInfo SMPs (bench/smp_rtt),
#   - the daemon's (ibemud / ibsim) peak RSS.
# Each figure is printed with the ibemu/ibsim ratios from this run.
# The io_uring runs turn the host's fuse parameter enable_uring on while
# they last (ibemud --fuse-uring puts it back).
# Needs root. usage: bench/vs_ibsim.sh [BUILD_DIR] [RUNS] [SIZES, e.g. "2048 20000"]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
sizes=${3:-"2048 20000"}
ibemu=$build/tools/ibemu
rtt=$build/bench/smp_rtt
[ -x "$ibemu" ] && [ -x "$rtt" ] || { echo "vs_ibsim: build first (meson compile -C $build)" >&2; exit 1; }
work=$(mktemp -d /tmp/ibemu-bench.XXXXXX)
export IBEMU_RUN_DIR=$work/run OSM_CACHE_DIR=$work/osm
export IBSIM_SOCKNAME=ibemu-bench-$$
mkdir -p "$OSM_CACHE_DIR"
inst=bench-$$
cleanup() {
	"$ibemu" down --instance $inst >/dev/null 2>&1 || true
	pkill -f "ibsim -s -n .*$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

. "$here/bench/lib.sh"
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; } # KiB

sm_guid=0x0002c90300000011 # host00001's port in generated fat trees
sim_host=H-0002c90300000010

ibsim_start() { # file nodes switches ports
	ibsim -s -n -N "$2" -S "$3" -P "$4" "$1" >"$work/ibsim.log" 2>&1 &
	sim=$!
	for _ in $(seq 600); do
		grep -q "@$IBSIM_SOCKNAME:ctl" /proc/net/unix && return 0
		sleep 0.1
	done
	echo "ibsim did not start: $(tail -3 "$work/ibsim.log")" >&2
	return 1
}
simrun() { SIM_HOST=$sim_host LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so "$@"; }

printf '%-22s %-18s %9s %9s %9s %9s %8s %8s %8s\n' fabric measure seccomp fuse uring ibsim secc/sim \
	fuse/sim uring/sim
for hosts in $sizes; do
	radix=64
	[ "$hosts" -gt 2048 ] && radix=200
	file=$work/ft-$hosts.topo
	"$ibemu" topo gen fat-tree --levels 2 --hosts "$hosts" --radix $radix -o "$file"
	sw=$(sed 's/.*"switches":\([0-9]*\).*/\1/' <<<"$("$ibemu" topo check "$file")")
	nodes=$((hosts + sw + 16)) ports=$((sw * (radix + 1) + 2 * hosts + 1024))
	label="${hosts} CAs, r$radix"

	# --- ibemu, each request path
	declare -A e_up e_disc e_rtt e_rss
	for path in seccomp fuse uring; do
		case $path in
		seccomp) args=(--transport seccomp) ;;
		fuse) args=(--transport fuse --fuse-uring=off) ;;
		uring) args=(--transport fuse --fuse-uring=on) ;;
		esac
		up=() disc=()
		for _ in $(seq "$runs"); do
			"$ibemu" up --instance $inst --topology "$file" "${args[@]}" >/dev/null
			t=$(now)
			"$ibemu" exec --instance $inst -- opensm -o -g $sm_guid -f "$work/osm.log" >/dev/null 2>&1
			up+=("$(elapsed "$t")")
			t=$(now)
			"$ibemu" exec --instance $inst -- ibnetdiscover >/dev/null 2>&1
			disc+=("$(elapsed "$t")")
			e_rtt[$path]=$("$ibemu" exec --instance $inst -- "$rtt" ibemu0 1 2000 0,1 | cut -d' ' -f1)
			pid=$("$ibemu" status --instance $inst --json | sed 's/.*"pid":\([0-9]*\).*/\1/')
			e_rss[$path]=$(hwm "$pid")
			"$ibemu" down --instance $inst >/dev/null
		done
		e_up[$path]=$(printf '%s\n' "${up[@]}" | median)
		e_disc[$path]=$(printf '%s\n' "${disc[@]}" | median)
	done

	# --- ibsim
	up=() disc=()
	for _ in $(seq "$runs"); do
		ibsim_start "$file" $nodes $((sw + 16)) $ports
		t=$(now)
		simrun opensm -o -f "$work/osm-sim.log" >/dev/null 2>&1 || true
		up+=("$(elapsed "$t")")
		t=$(now)
		(cd "$work" && simrun ibnetdiscover >/dev/null 2>&1) || true
		disc+=("$(elapsed "$t")")
		s_rtt=$(cd "$work" && simrun "$rtt" ibsim0 1 2000 0,1 | cut -d' ' -f1)
		s_rss=$(hwm $sim)
		kill $sim
		wait $sim 2>/dev/null || true
	done
	s_up=$(printf '%s\n' "${up[@]}" | median)
	s_disc=$(printf '%s\n' "${disc[@]}" | median)

	row() { # measure seccomp fuse uring ibsim
		printf '%-22s %-18s %9s %9s %9s %9s %8s %8s %8s\n' "$label" "$1" "$2" "$3" "$4" "$5" \
			"$(ratio "$2" "$5")" "$(ratio "$3" "$5")" "$(ratio "$4" "$5")"
	}
	row "opensm -o (s)" "${e_up[seccomp]}" "${e_up[fuse]}" "${e_up[uring]}" "$s_up"
	row "ibnetdiscover (s)" "${e_disc[seccomp]}" "${e_disc[fuse]}" "${e_disc[uring]}" "$s_disc"
	row "SMP RTT (us)" "${e_rtt[seccomp]}" "${e_rtt[fuse]}" "${e_rtt[uring]}" "$s_rtt"
	row "peak RSS (MiB)" $((e_rss[seccomp] / 1024)) $((e_rss[fuse] / 1024)) $((e_rss[uring] / 1024)) $((s_rss / 1024))
done
echo "(median of $runs runs; RTT: median of 2000 serial 1-hop DR NodeInfo SMPs; ratios are ibemu/ibsim)"
