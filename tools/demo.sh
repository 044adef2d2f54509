#!/usr/bin/env bash
# The ibemu demo: the built-in default fabric (2 switches, 4 hosts), two of
# its CAs made local, OpenSM (run by the instance: `up --sm`) bringing the
# subnet up, and stock tools at work. Needs root: it installs packages and
# mounts a FUSE filesystem in a private mount namespace.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: must run as root (it installs Debian packages, and ibemu mounts a FUSE filesystem): sudo $0" >&2
	exit 1
fi

# colour on a terminal only, and never with NO_COLOR set
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	bold=$'\033[1m' plain=$'\033[0m'
else
	bold='' plain=''
fi
say() { printf '%s\n' "$*" >&2; }

say "demo: checking the Debian packages it needs (the build, OpenSM, infiniband-diags)"
tools/install-deps.sh demo
if [ ! -x build/tools/ibemu ]; then
	say "demo: building ibemu in build/ (the first build takes about 10 minutes on 2 cores; ccache makes the next ones quick)"
fi
# its progress every tenth of the way; meson's log only when it fails
tools/build.sh build -Dwerror=true
ibemu=$PWD/build/tools/ibemu
say "demo: ibemu is built: $ibemu (installed: meson install -C build)"

instance=demo-$$
work=$(mktemp -d /tmp/ibemu-demo.XXXXXX)
export IBEMU_RUN_DIR=$work/run
cleanup() {
	# down stops OpenSM first, then the devices
	"$ibemu" down --instance $instance --kill-clients >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '$ %s\n' "$*"; "$ibemu" exec --instance $instance -- "$@"; }

step "the built-in default fabric"
"$ibemu" topo show | head -8
step "ibemu up: two of its CAs become local HCAs"
"$ibemu" up --instance $instance
step "ibstat before a subnet manager runs"
run ibstat ibemu0 1
"$ibemu" down --instance $instance >/dev/null
step "ibemu up --sm: the same, with OpenSM run by the instance; up returns once the subnet is up"
"$ibemu" up --instance $instance --sm
run sminfo
step "ibstat after SUBNET UP"
run ibstat ibemu0 1
step "ibnetdiscover"
run ibnetdiscover
step "perfquery on the local port"
run perfquery
step "ibping from ibemu0 to ibemu1, across both switches"
lid=$("$ibemu" exec --instance $instance -- cat /sys/class/infiniband/ibemu1/ports/1/lid)
"$ibemu" exec --instance $instance -- ibping -S -C ibemu1 >/dev/null 2>&1 &
for _ in $(seq 50); do # until the server answers
	"$ibemu" exec --instance $instance -- ibping -C ibemu0 -c 1 $((lid)) >/dev/null 2>&1 && break
	sleep 0.2
done
run ibping -C ibemu0 -c 3 $((lid))
step "ibemu down --kill-clients: the ibping server, then OpenSM, then the devices"
"$ibemu" down --instance $instance --kill-clients
