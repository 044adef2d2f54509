#!/usr/bin/env bash
# Verbs natively, on the seccomp transport (no CUSE, no guest), against the
# floor of any device that lives in another process measured in the same
# run: the one-way latency of a Unix-socket ping-pong between two
# processes (bench/unix_pingpong), and memcpy for bandwidth. Prints:
#   - ib_send_lat and ib_write_lat typical latency, and each / the floor,
#   - ib_write_bw average bandwidth, and memcpy's (one core, 64 KiB blocks),
#   - ucmatose -c 20: connections per second.
# Medians of RUNS runs. Needs root. usage: bench/verbs_native.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-3}
ibemu=$build/tools/ibemu
pp=$build/bench/unix_pingpong
[ -x "$ibemu" ] && [ -x "$pp" ] || { echo "verbs_native: build first (meson compile -C $build)" >&2; exit 1; }
work=$(mktemp -d /tmp/ibemu-bench.XXXXXX)
export IBEMU_RUN_DIR=$work/run
inst=vbench-$$
cleanup() {
	"$ibemu" down --instance $inst >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
. "$here/bench/lib.sh"

"$ibemu" up --instance $inst --transport seccomp --sm >/dev/null
addr=$("$ibemu" status --instance $inst --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["ports"][0]["ipv4"])')
x() { timeout 120 "$ibemu" exec --instance $inst -- "$@"; }
perftest() { # TEST: one run's figure
	x "$1" -d ibemu0 >"$work/server" 2>&1 &
	local s=$!
	sleep 1
	x "$1" -d ibemu1 127.0.0.1 >"$work/client" 2>&1 || true
	wait $s || true
	perftest_figure "$1" "$work/client"
}
declare -A fig
floor=() memcpy=() cps=()
for _ in $(seq "$runs"); do
	floor+=("$("$pp" 20000 | cut -d' ' -f1)")
	for t in ib_send_lat ib_write_lat ib_write_bw; do
		fig[$t]+="$(perftest $t) "
	done
	memcpy+=("$(python3 -c '
import time
b = bytearray(64 << 10); n = 20000; t = time.perf_counter()
for _ in range(n): bytes(b)
print("%.0f" % (len(b) * n / (time.perf_counter() - t) / 1e6))')")
	x ucmatose -b "$addr" -c 20 >/dev/null 2>&1 &
	s=$!
	sleep 1
	t=$(now)
	x ucmatose -s "$addr" -c 20 >/dev/null 2>&1 || true
	cps+=("$(awk -v e="$(elapsed "$t")" 'BEGIN { printf "%.0f", 20 / e }')")
	wait $s || true
done
f=$(printf '%s\n' "${floor[@]}" | median)
printf '%-28s %10s %10s\n' measure value "/ floor"
printf '%-28s %10s\n' "unix ping-pong one-way (us)" "$f"
for t in ib_send_lat ib_write_lat; do
	v=$(tr ' ' '\n' <<<"${fig[$t]}" | grep . | median)
	printf '%-28s %10s %10s\n' "$t typical (us)" "$v" "$(ratio "$v" "$f")"
done
bw=$(tr ' ' '\n' <<<"${fig[ib_write_bw]}" | grep . | median)
mc=$(printf '%s\n' "${memcpy[@]}" | median)
printf '%-28s %10s %10s\n' "ib_write_bw (MB/s)" "$bw" "$(ratio "$bw" "$mc")"
printf '%-28s %10s\n' "memcpy 64 KiB (MB/s)" "$mc"
printf '%-28s %10s\n' "ucmatose -c 20 (conn/s)" "$(printf '%s\n' "${cps[@]}" | median)"
echo "(median of $runs runs; ib_write_bw / memcpy is a ratio, memcpy measured by Python's bytes() copy)"
