#!/usr/bin/env bash
# The ibemu demo: the built-in default fabric (2 switches, 4 hosts), two of
# its CAs made local, OpenSM bringing the subnet up, and stock tools at work.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh build -Dwerror=true
ibemu=$PWD/build/tools/ibemu
instance=demo-$$
work=$(mktemp -d /tmp/ibemu-demo.XXXXXX)
export IBEMU_RUN_DIR=$work/run
cleanup() {
	[ -n "${sm:-}" ] && kill "$sm" 2>/dev/null
	"$ibemu" down --instance $instance >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$ibemu" exec --instance $instance -- "$@"; }

step "the built-in default fabric"
"$ibemu" topo show | head -8
step "ibemu up: two of its CAs become local HCAs"
"$ibemu" up --instance $instance
step "ibstat before a subnet manager runs"
run ibstat ibemu0 1
step "OpenSM as the master SM on ibemu0"
OSM_CACHE_DIR=$work "$ibemu" exec --instance $instance -- opensm -g 0x0002c90300000101 -f "$work/opensm.log" -s 0 \
	>"$work/opensm.out" 2>&1 &
sm=$!
for _ in $(seq 150); do
	"$ibemu" exec --instance $instance -- ibstat ibemu0 1 2>/dev/null | grep -q 'State: Active' && break
	sleep 0.2
done
run sminfo
step "ibstat after SUBNET UP"
run ibstat ibemu0 1
step "ibnetdiscover"
run ibnetdiscover
step "perfquery on the local port"
run perfquery
step "ibping from ibemu0 to ibemu1, across both switches"
"$ibemu" exec --instance $instance -- ibping -S -C ibemu1 >/dev/null 2>&1 &
server=$!
sleep 0.5
run ibping -C ibemu0 -c 3 3
kill $server 2>/dev/null || true
step "ibemu down"
"$ibemu" down --instance $instance
