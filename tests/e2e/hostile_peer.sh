#!/usr/bin/env bash
# Hostile users of the peer port of a split subnet (issue 38): two hosts'
# daemons on loopback addresses of a network namespace of this run; a
# stranger that keeps the listening daemon's handshake table full (from
# one address, then from many with forged hellos) while the other daemon
# restarts does not keep it out: it gets in and its cables come up. A
# subnet key another user owns is refused, naming the fix; a daemon
# listens on its host's addr= only, and a name for it that resolves to a
# loopback address is refused.
# usage: hostile_peer.sh IBEMU_BINARY DATA_DIR
set -u
ibemu=$1
data=$2
here=$(dirname "$0")
. "$here/lib.sh"
e2e_setup hostile-peer

for tool in ip nsenter ss python3; do
	command -v $tool >/dev/null || { echo "hostile-peer: needs $tool; skipped"; exit 77; }
done
ns=ibemu-hp$$
stranger=
cleanup_all() {
	[ -n "$stranger" ] && kill "$stranger" 2>/dev/null
	e2e_cleanup
	ip netns del $ns 2>/dev/null
}
trap cleanup_all EXIT
ip netns add $ns && ip -n $ns link set lo up || { echo "hostile-peer: no network namespaces; skipped"; exit 77; }
in_ns() { nsenter --net=/run/netns/$ns "$@"; }

# the built-in fabric split over two hosts: a (sw1, host1) dials b (sw2,
# host2 and the dual-homed hosts); four cables cross
sed -e 's/^host="a" addr=.*/host="a" addr="127.0.0.1:7700"/' \
	-e 's/^host="b" addr=.*/host="b" addr="127.0.0.2:7700"/' \
	-e 's/^host="c" addr=.*/host="b"/' "$data/split3.topo" >"$work/split.topo"
head -c 32 /dev/urandom | base64 >"$work/subnet.key"
chmod 600 "$work/subnet.key"
chmod 755 "$work"

I=e2e-hp-$$
up_host() { # HOST [KEYFILE [TOPOLOGY]]
	in_ns "$ibemu" up --instance "$I-$1" --topology "${3:-$work/split.topo}" --host "$1" \
		--subnet-key "${2:-$work/subnet.key}" 2>&1
}
status_of() { # HOST PYTHON-EXPR over the status JSON as s
	"$ibemu" status --instance "$I-$1" --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}
# HOST: its peer's state and its cables up, "up 4" when all is well
link_of() { status_of "$1" '"%s %d" % (s["split"]["peers"][0]["state"], s["split"]["peers"][0]["cables_up"])'; }
wait_link() { # HOST: until "up 4" (or no daemon), at most 60 s (a guard, not a measure)
	local end=$((SECONDS + 60)) l
	while l=$(link_of "$1" 2>/dev/null) && [ "$l" != "up 4" ] && [ $SECONDS -lt $end ]; do sleep 0.2; done
	echo "$l"
}
refused_of() { status_of "$1" 's["split"]["refused_handshakes"]'; }
blog() { cat "$IBEMU_RUN_DIR/$I-b/ibemud.log" 2>/dev/null; }

# --- a key another user owns is refused, naming the owner and the fix
cp "$work/subnet.key" "$work/other.key"
chown nobody "$work/other.key"
out=$(up_host a "$work/other.key")
rc=$?
expect_eq "a key owned by nobody (mode 600) is refused" 1 $rc
expect_match "naming the file, its owner and the fix" \
	"other\\.key: owned by nobody \\(uid [0-9]+\\), who could change the key: root must own it \\(chown root $work/other\\.key\\)" "$out"
[ $rc = 0 ] && down_inst "$I-a"

# --- a name for this host that resolves to a loopback address is refused
sed 's/^host="a" addr=.*/host="a" addr="localhost:7700"/' "$work/split.topo" >"$work/name.topo"
out=$(up_host a "$work/subnet.key" "$work/name.topo")
rc=$?
expect_eq "an addr= name that resolves here to a loopback address is refused" 1 $rc
expect_match "saying why and what to do" \
	'addr= "localhost:7700" resolves here to [0-9a-f:.]+, a loopback address no other host reaches: .*--listen' "$out"
[ $rc = 0 ] && down_inst "$I-a"

# --- each daemon listens on its addr=, not on every address
for h in b a; do
	out=$(up_host $h)
	expect_eq "up host $h" 0 $?
done
expect_eq "a's cables to b came up" "up 4" "$(wait_link a)"
expect_eq "... and b's to a" "up 4" "$(wait_link b)"
out=$(in_ns ss -ltnH 'sport = :7700' | awk '{print $4}' | sort | xargs)
expect_eq "the peer ports are the hosts' addr=" "127.0.0.1:7700 127.0.0.2:7700" "$out"
expect_eq "status says where b listens" 127.0.0.2:7700 "$(status_of b 's["split"]["listen"]')"

# restart_a_under STRANGER-ARGS...: a stranger keeps b's handshake table
# busy while a's daemon restarts; prints a's and b's link
restart_a_under() {
	local before
	before=$(refused_of b)
	nsenter --net=/run/netns/$ns python3 "$here/peer_stranger.py" 127.0.0.2 7700 a "$@" &
	stranger=$! # nsenter execs python3: its pid
	local end=$((SECONDS + 30))
	while [ "$(refused_of b)" -lt $((before + 100)) ] && [ $SECONDS -lt $end ]; do sleep 0.2; done
	expect_eq "the stranger has b closing its connections" 1 $(($(refused_of b) >= before + 100))
	"$ibemu" down --instance "$I-a" >/dev/null 2>&1
	rm -rf "${IBEMU_RUN_DIR:?}/$I-a"
	out=$(up_host a)
	expect_eq "a restarted" 0 $?
	link_a=$(wait_link a)
	link_b=$(wait_link b)
	expect_eq "the stranger kept at it all along" 0 "$(kill -0 $stranger 2>&1; echo $?)"
	kill $stranger
	wait $stranger 2>/dev/null
	stranger=
}

# --- one address holds as many connections as it likes, reopening each
# as it is closed: it gets 4 of the 32 handshakes, a gets in
restart_a_under 127.0.0.10:40
expect_eq "under a stranger at one address, a's cables to b came up" "up 4" "$link_a"
expect_eq "... and b's to a" "up 4" "$link_b"
expect_match "b displaced the stranger's older connections by its newer ones" \
	'displaced by a newer connection from 127\.0\.0\.10 \(4 handshakes from one address at most\)' "$(blog)"

# --- sixteen addresses fill the table, half of them with hellos naming
# a (forged: they never authenticate): a's connection displaces one
sources=()
for i in $(seq 20 35); do sources+=("127.0.0.$i:4:forge"); done
restart_a_under "${sources[@]}"
expect_eq "under strangers at 16 addresses, a's cables to b came up" "up 4" "$link_a"
expect_eq "... and b's to a" "up 4" "$link_b"
expect_match "b displaced the strangers when its table was full" \
	'displaced by a newer connection \(32 handshakes at most\)' "$(blog)"

expect_eq "a and b up at the end" "up 4 up 4" "$(link_of a) $(link_of b)"
e2e_done
