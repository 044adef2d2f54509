#!/usr/bin/env bash
# Fabric scale benchmark: loads generated fat trees of 2k, 20k and 100k CAs
# with `ibemu topo check` (read + parse + build the whole subnet) and prints
# the median load time, the peak RSS and the RSS per node.
#
# Baseline, measured in the same run on the same files: ibsim (Debian
# ibsim-utils) loading the same net file and exiting. Ratios < 1 mean ibemu
# is faster / smaller.
#
# usage: bench/fabric_load.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
runs=${2:-5}
ibemu=$build/tools/ibemu
[ -x "$ibemu" ] || { echo "fabric_load: build ibemu first (meson compile -C $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export IBSIM_SOCKNAME="ibemu-bench-$$"

. "$(dirname "$0")/lib.sh"

# run CMD... `runs` times; prints "median_seconds max_rss_kib"
measure() {
	local t=() m=0
	for _ in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" </dev/null || {
			cat "$tmp/err" >&2; return 1; }
		read -r e k <"$tmp/time"
		t+=("$e"); [ "$k" -gt "$m" ] && m=$k
	done
	printf '%s %s\n' "$(printf '%s\n' "${t[@]}" | median)" "$m"
}


base_rss=$(measure "$ibemu" topo check "$here/tests/data/topology/net.1" | cut -d' ' -f2)

printf '%-34s %7s %9s %10s %9s %10s %11s %11s\n' fabric nodes "load s" "peak MiB" "B/node" "ibsim s" "time ratio" "RSS ratio"
for spec in "2 2048 64" "2 20000 200" "3 100000 74"; do
	set -- $spec
	levels=$1 hosts=$2 radix=$3
	file=$tmp/ft-$hosts.topo
	"$ibemu" topo gen fat-tree --levels "$levels" --hosts "$hosts" --radix "$radix" -o "$file"
	counts=$("$ibemu" topo check "$file")
	switches=$(sed 's/.*"switches":\([0-9]*\).*/\1/' <<<"$counts")
	links=$(sed 's/.*"links":\([0-9]*\).*/\1/' <<<"$counts")
	nodes=$((switches + hosts))
	read -r t rss < <(measure "$ibemu" topo check "$file")
	per=$(( (rss - base_rss) * 1024 / nodes ))
	ibsim_cmd="echo quit | ibsim -N $((nodes + 16)) -S $((switches + 16)) -P $((switches * (radix + 1) + 2 * hosts + 1024)) $file"
	if read -r st srss < <(measure bash -c "$ibsim_cmd" 2>/dev/null); then
		tr=$(awk -v a="$t" -v b="$st" 'BEGIN {printf "%.2f", a / b}')
		rr=$(awk -v a="$rss" -v b="$srss" 'BEGIN {printf "%.2f", a / b}')
	else
		st="failed" tr="n/a" rr="n/a"
	fi
	printf '%-34s %7d %9s %10d %9d %10s %11s %11s\n' \
		"${levels}-level fat tree r$radix, $hosts CAs" "$nodes" "$t" $((rss / 1024)) "$per" "$st" "$tr" "$rr"
done
echo "(median of $runs runs; peak RSS includes the file text and parse tree; ratios are ibemu/ibsim)"
