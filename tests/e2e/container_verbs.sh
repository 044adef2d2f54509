#!/usr/bin/env bash
# Verbs and rdma_cm in a container with only what the MAD plane needs
# (docs/ci.md, "Containers"): an image of this build (tools/image.sh, with
# the stock tools added) run with exactly `--device /dev/fuse --cap-add
# SYS_ADMIN`, and inside it `ibemu up --sm` and, under `ibemu exec` (the
# seccomp transport: no CUSE, no device node), ibv_rc_pingpong with and
# without completion channels between ibemu0 and ibemu1, ib_send_lat with
# perftest's default flags, rping between the ports' IPv4 addresses, the
# pingpong again as a user other than root (setpriv inside exec), then
# `ibemu down`. Twice:
#
# - podman as root (the capabilities are the container's share of root's);
# - rootless podman, as a host user with no privilege at all: SYS_ADMIN is
#   then the container's user namespace's own, over its own mounts. This
#   machine has no /etc/subuid ranges (nor newuidmap), so that namespace
#   maps the one user: no other user inside, and image files that belong
#   to other users are stored as that user's (vfs, ignore_chown_errors).
#
# What the containers get besides the two flags is this machine's, not a
# privilege: root's container the limits it may have (root here may not
# raise one above its hard limit, and podman's defaults are above), the
# rootless one no network but its loopback (no slirp4netns here; the
# programs meet on 127.0.0.1), and no AppArmor option (this kernel has no
# AppArmor; docs/ci.md says where one is needed). PID 1 is `sleep
# infinity`, which reaps nothing, as many a CI container's is.
#
# IBEMU_CONTAINER_IMAGE=TAG runs an image built before (tools/image.sh
# --include with the packages below) as root instead of building one, and
# skips the rootless run (which loads the image from an archive).
# usage: container_verbs.sh IBEMU_BINARY
set -u
ibemu=$1
build=$(cd "$(dirname "$ibemu")/.." && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
e2e_setup container-verbs
for tool in podman mmdebstrap setpriv; do
	command -v $tool >/dev/null || {
		echo "container-verbs: needs $tool (tools/install-deps.sh test)"
		exit 1
	}
done

tag=ctr$$
image=${IBEMU_CONTAINER_IMAGE:-localhost/ibemu-e2e-$tag:latest}
ctr=ibemu-e2e-$tag
# the rootless podman's user: one no account has, and its own storage
ruid=$((40000 + $$ % 20000))
while getent passwd $ruid >/dev/null || getent group $ruid >/dev/null; do ruid=$((ruid + 1)); done
rootless=$work/rootless
rootless_podman=(setpriv --reuid=$ruid --regid=$ruid --clear-groups
	env HOME=$rootless XDG_RUNTIME_DIR=$rootless/run podman --storage-driver vfs
	--storage-opt vfs.ignore_chown_errors=true)
cleanup_all() {
	podman rm -f -t 0 "$ctr" >/dev/null 2>&1
	[ -n "${IBEMU_CONTAINER_IMAGE:-}" ] || podman rmi -f "$image" >/dev/null 2>&1
	if [ -d "$rootless/run" ]; then
		"${rootless_podman[@]}" rm -f -t 0 "$ctr" >/dev/null 2>&1
		# the user namespace's keeper, which rootless podman leaves behind
		pause=$(cat "$rootless/run/libpod/tmp/pause.pid" 2>/dev/null)
		[ -n "$pause" ] && kill "$pause" 2>/dev/null
	fi
	e2e_cleanup
}
trap cleanup_all EXIT

if [ -z "${IBEMU_CONTAINER_IMAGE:-}" ]; then
	out=$("$src/tools/image.sh" "$build" --tag "$image" --archive "$work/image.tar" \
		--include ibverbs-utils,perftest,rdmacm-utils,opensm,infiniband-diags 2>&1)
	expect_eq "tools/image.sh builds the image, with the stock tools" 0 $?
	[ $fail -eq 0 ] || { printf '%s\n' "$out"; exit 1; }
fi

# the pair helper, in the container: pair INSTANCE TIMEOUT NAME PORT
# SERVER... -- CLIENT...: the server in the background and the client once
# the server listens (TCP PORT, or 2 s for rdma_cm; a client of rdma_cm
# that came too early runs again, as in rdma_cm_tools.sh), both under
# `ibemu exec`; leaves /tmp/NAME.server and NAME.client and prints both
# exit statuses ("hung": a server still waiting once its client failed)
pair_helper=$(cat <<'EOF'
#!/bin/sh
inst=$1 t=$2 name=$3 port=$4
shift 4
s=
while [ "$1" != -- ]; do s="$s $1"; shift; done
shift
ibemu exec --instance "$inst" -- $s >"/tmp/$name.server" 2>&1 &
server=$!
listening() { cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q "^ *[0-9]*: [0-9A-F]*:$(printf %04X "$port") 0*:0000 0A "; }
if [ "$port" = - ]; then
	sleep 2
else
	n=0
	while ! listening && kill -0 $server 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
fi
runs=0
while :; do
	timeout "$t" ibemu exec --instance "$inst" -- "$@" >"/tmp/$name.client" 2>&1
	rc=$? runs=$((runs + 1))
	[ $rc -ne 0 ] && [ $runs -lt 5 ] && kill -0 $server 2>/dev/null &&
		grep -qE 'REJECTED|Connection refused|Unexpected CM event .* 8$' "/tmp/$name.client" || break
	sleep 3
done
src=
if [ $rc -ne 0 ] && kill -0 $server 2>/dev/null; then
	src=hung
	kill $server
fi
n=0
while kill -0 $server 2>/dev/null && [ $n -lt $((t * 10)) ]; do sleep 0.1; n=$((n + 1)); done
kill -9 $server 2>/dev/null
wait $server
echo "$rc ${src:-$?}"
EOF
)

in_ctr() { timeout "$tool_timeout" "${pm[@]}" exec "$ctr" "$@" 2>&1; }
pair() { # NAME PORT SERVER... -- CLIENT...: prints both exit statuses
	local name=$1 rcs
	rcs=$(in_ctr e2e-pair "$I" "$tool_timeout" "$@")
	"${pm[@]}" exec "$ctr" cat "/tmp/$name.server" >"$work/$name.server" 2>&1
	"${pm[@]}" exec "$ctr" cat "/tmp/$name.client" >"$work/$name.client" 2>&1
	echo "$rcs"
}
port=$((18515 + RANDOM % 1000))
pingpong() { # NAME PREFIX... -- ARGS...: server on ibemu1, client on ibemu0
	local name=$1 p=()
	shift
	while [ "$1" != -- ]; do p+=("$1"); shift; done
	shift
	port=$((port + 1))
	pair "$name" $port "${p[@]}" "$name" -d ibemu1 -p $port "$@" -- "${p[@]}" "$name" -d ibemu0 -p $port "$@" 127.0.0.1
}

# leg WHO OTHER_USER PODMAN_RUN_OPTION...: the container (podman: pm),
# started with the options and the two flags, and everything in it;
# OTHER_USER yes when the container has a user besides root
leg() {
	local who=$1 other=$2 out status rcs ip0 ip1
	shift 2
	"${pm[@]}" run --detach --name "$ctr" "$@" --device /dev/fuse --cap-add SYS_ADMIN \
		"$image" sleep infinity >/dev/null
	expect_eq "$who: the container starts with --device /dev/fuse --cap-add SYS_ADMIN" 0 $?
	# CAP_SYS_ADMIN (21) but not CAP_SYS_PTRACE (19), which the daemon
	# would otherwise use to reach the memory of another user's programs
	expect_eq "$who: ... so it has CAP_SYS_ADMIN, not CAP_SYS_PTRACE" "1 0" \
		"$(in_ctr sh -c 'c=0x$(sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status); echo $((c >> 21 & 1)) $((c >> 19 & 1))')"
	out=$(printf '%s\n' "$pair_helper" | "${pm[@]}" exec -i "$ctr" sh -c \
		'cat >/usr/local/bin/e2e-pair && chmod 755 /usr/local/bin/e2e-pair' 2>&1)
	expect_eq "$who: the pair helper is in the container" 0 $?

	I=e2e-ctr-$$
	out=$(in_ctr ibemu up --instance $I --sm)
	expect_eq "$who: ibemu up --sm in the container" 0 $?
	expect_match "$who: ... OpenSM running" 'OpenSM: running' "$out"
	status=$(in_ctr ibemu status --instance $I --json)
	out=$(python3 -c 'import json,sys; s=json.load(sys.stdin)
print(s["transport"], s["exec_transport"], *(p["state"] for d in s["devices"] for p in d["ports"]))' <<<"$status")
	expect_eq "$who: status: FUSE files (no CUSE), exec through seccomp, both ports ACTIVE" \
		"fuse seccomp ACTIVE ACTIVE" "$out"
	read -r ip0 ip1 < <(python3 -c 'import json,sys; s=json.load(sys.stdin)
print(*(d["ports"][0]["ipv4"] for d in s["devices"]))' <<<"$status")
	expect_match "$who: status: each port's IPv4" '^10\.[0-9.]+ 10\.[0-9.]+$' "$ip0 $ip1"

	out=$(in_ctr ibemu exec --instance $I -- ibv_devices)
	expect_match "$who: ibv_devices lists ibemu0" '^\s+ibemu0\s+0002c90300000100$' "$out"
	expect_match "$who: ibv_devices lists ibemu1" '^\s+ibemu1\s+0002c90300000200$' "$out"

	rcs=$(pingpong ibv_rc_pingpong -- -n 50)
	expect_eq "$who: ibv_rc_pingpong ibemu0 -> ibemu1: client and server exit 0" "0 0" "$rcs"
	expect_match "$who: ibv_rc_pingpong: bytes in" '^409600 bytes in [0-9.]+ seconds' \
		"$(cat "$work/ibv_rc_pingpong.client")"
	expect_match "$who: ibv_rc_pingpong: the server's 50 iterations" '^50 iters in' \
		"$(cat "$work/ibv_rc_pingpong.server")"

	rcs=$(pingpong ibv_rc_pingpong -- -n 50 -e)
	expect_eq "$who: ibv_rc_pingpong -e (completion channel): client and server exit 0" "0 0" "$rcs"
	expect_match "$who: ibv_rc_pingpong -e: bytes in" '^409600 bytes in [0-9.]+ seconds' \
		"$(cat "$work/ibv_rc_pingpong.client")"
	expect_match "$who: ibv_rc_pingpong -e: the server's 50 iterations" '^50 iters in' \
		"$(cat "$work/ibv_rc_pingpong.server")"

	rcs=$(pingpong ib_send_lat -- -n 50 "$(perftest_untimed ib_send_lat)")
	expect_eq "$who: ib_send_lat (default flags): client and server exit 0" "0 0" "$rcs"
	expect_match "$who: ib_send_lat: the ibv_wr API" 'ibv_wr\* API\s+: ON' "$(cat "$work/ib_send_lat.client")"
	expect_match "$who: ib_send_lat: 50 iterations of 2 bytes in its table" '^ *2 +50 +[0-9.]+ +[0-9.]+' \
		"$(cat "$work/ib_send_lat.client")"

	rcs=$(pair rping - rping -s -a "$ip1" -C 20 -v -- rping -c -a "$ip1" -I "$ip0" -C 20 -v)
	expect_eq "$who: rping $ip0 -> $ip1: client and server exit 0" "0 0" "$rcs"
	expect_eq "$who: rping: the client's 20 pings" 20 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
	expect_eq "$who: rping: the server's 20" 20 "$(grep -c '^server ping data: rdma-ping-' "$work/rping.server")"

	# another user: exec joins the namespace as root, then drops to nobody
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	out=$(in_ctr ibemu exec --instance $I -- "${nobody[@]}" sh -c 'id -u; grep ^CapEff: /proc/self/status')
	if [ "$other" = yes ]; then
		expect_eq "$who: under exec, setpriv gives uid 65534 with no capabilities" \
			"65534 CapEff:	0000000000000000" "$(paste -sd' ' <<<"$out")"
		rcs=$(pingpong ibv_rc_pingpong "${nobody[@]}" -- -n 50 -e)
		expect_eq "$who: ibv_rc_pingpong -e as uid 65534: client and server exit 0" "0 0" "$rcs"
		expect_match "$who: ... bytes in" '^409600 bytes in [0-9.]+ seconds' "$(cat "$work/ibv_rc_pingpong.client")"
		expect_match "$who: ... the server's 50 iterations" '^50 iters in' "$(cat "$work/ibv_rc_pingpong.server")"
		# reaching that user's programs made the daemon take its
		# filesystem ids for a moment (cuse_dev/caller_ids.h): it must
		# have been left dumpable, or a root without CAP_SYS_PTRACE
		# could not open its /proc/PID/ns/mnt
		out=$(in_ctr ibemu exec --instance $I -- ibv_devices)
		expect_match "$who: exec as root still joins the instance afterwards" \
			'^\s+ibemu1\s+0002c90300000200$' "$out"
	else
		expect_match "$who: one user mapped: setpriv has no other to be" 'setresuid failed' "$out"
	fi

	out=$(in_ctr ibemu down --instance $I --keep-logs)
	expect_eq "$who: ibemu down in the container exits 0" 0 $?
	expect_match "$who: ... and says the instance is down" 'is down' "$out"
	"${pm[@]}" exec "$ctr" cat "/run/ibemu/$I/ibemud.out" >"$work/ibemud.out" 2>&1
	no_sanitizer_report "$who: the container's ibemud" "$work/ibemud.out"
	"${pm[@]}" rm -f -t 0 "$ctr" >/dev/null
	expect_eq "$who: the container goes" 0 $?
}

pm=(podman)
leg root yes --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096

if [ -n "${IBEMU_CONTAINER_IMAGE:-}" ]; then
	echo "container-verbs: IBEMU_CONTAINER_IMAGE given: no rootless run (it loads the image from an archive)"
elif [ ! -c /dev/fuse ] || [ "$(stat -c %a /dev/fuse)" != 666 ]; then
	echo "container-verbs: /dev/fuse is not 0666: no rootless run"
else
	chmod 711 "$work"
	mkdir -p "$rootless/run"
	chmod 700 "$rootless/run"
	chmod 644 "$work/image.tar"
	chown -R $ruid:$ruid "$rootless"
	pm=("${rootless_podman[@]}")
	out=$("${pm[@]}" load --quiet -i "$work/image.tar" 2>&1)
	rc=$?
	expect_eq "rootless (uid $ruid): podman loads the image" 0 $rc
	[ $rc -eq 0 ] || printf '%s\n' "$out"
	leg rootless no --network none
fi

finished=1
echo "container-verbs: $pass checks passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
