#!/usr/bin/env bash
# One subnet across hosts: three "hosts" as network namespaces on a bridge,
# each with its own ibemud simulating its share of one topology file and
# talking to the others over TCP. OpenSM in one brings the whole subnet up;
# ibnetdiscover from another sees all of it; a daemon with the wrong key
# is refused; a daemon killed is a cable pulled (the SM re-routes, the
# others keep working) and comes back; bad input is refused with its line.
# usage: multihost.sh IBEMU_BINARY DATA_DIR
set -u
ibemu=$1
data=$2
. "$(dirname "$0")/lib.sh"
e2e_setup multihost

if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
	echo "multihost: needs ip (iproute2) and nsenter; skipped"
	exit 77
fi

# network namespaces of this run only: a bridge "switch" and three hosts
. "$(dirname "$0")/netns.sh"
hosts=(a b c)
cleanup_all() {
	e2e_cleanup
	netns_cleanup
}
trap cleanup_all EXIT
tag=mh$$
netns_hosts "$tag" "${hosts[@]}" || {
	echo "multihost: cannot make network namespaces with a bridge; skipped"
	exit 77
}

# the built-in fabric split three ways (tests/data/split3.topo)
cp "$data/split3.topo" "$work/split.topo"
head -c 32 /dev/urandom | base64 >"$work/subnet.key"
chmod 600 "$work/subnet.key"

I=e2e-mh-$tag
up_host() { # HOST [KEYFILE]: that host's daemon, in its namespace
	nsenter --net="/run/netns/${NS[$1]}" "$ibemu" up --instance "$I-$1" --topology "$work/split.topo" \
		--host "$1" --subnet-key "${2:-$work/subnet.key}" 2>&1
}
status_of() { # INSTANCE PYTHON-EXPR over the status JSON as s
	"$ibemu" status --instance "$1" --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}
peers_up() { # INSTANCE: how many of its peers are up
	status_of "$1" 'sum(p["state"] == "up" for p in s["split"]["peers"])'
}
wait_peers() { # INSTANCE N
	local end=$((SECONDS + 60))
	while [ "$(peers_up "$1")" != "$2" ] && [ $SECONDS -lt $end ]; do sleep 0.2; done
	expect_eq "$1 has $2 peers up" "$2" "$(peers_up "$1")"
}

# --- bad input is refused before anything starts
out=$(nsenter --net="/run/netns/${NS[a]}" "$ibemu" up --instance "$I-x" --topology "$work/split.topo" \
	--host nosuch --subnet-key "$work/subnet.key" 2>&1)
expect_eq "a host the file does not name is refused" 1 $?
expect_match "naming the hosts it has" 'this is host "nosuch", which the topology does not name \(its hosts: a, b, c\)' "$out"
out=$(nsenter --net="/run/netns/${NS[a]}" "$ibemu" up --instance "$I-x" --topology "$work/split.topo" --host a 2>&1)
expect_eq "no subnet key is refused" 1 $?
expect_match "saying what is missing" 'needs --subnet-key FILE' "$out"
cp "$work/subnet.key" "$work/open.key"
chmod 644 "$work/open.key"
out=$(up_host a "$work/open.key")
expect_eq "a key others may read is refused" 1 $?
expect_match "saying why" 'others than its owner may read it' "$out"
sed 's/^host="c" addr=.*/host="c"/' "$work/split.topo" >"$work/noaddr.topo"
out=$("$ibemu" topo check "$work/noaddr.topo" 2>&1)
expect_eq "a host without an address is refused" 1 $?
expect_match "with its line" 'noaddr.topo:25: the first host="c" line needs addr=' "$out"
sed '/^host="a"/d' "$work/split.topo" >"$work/nohost.topo"
out=$("$ibemu" topo check "$work/nohost.topo" 2>&1)
expect_eq "a node before any host= is refused" 1 $?
expect_match "with its line" 'nohost.topo:5: "S-0002c90200000001" comes before any host= line' "$out"
out=$("$ibemu" topo check "$work/split.topo")
expect_match "topo check counts the hosts" '"hosts":3' "$out"

# --- three daemons, OpenSM in a
for h in a b c; do
	out=$(up_host $h)
	expect_eq "up host $h" 0 $?
done
for h in a b c; do wait_peers "$I-$h" 2; done
out=$(status_of "$I-a" 'sum(p["cables_up"] for p in s["split"]["peers"])')
expect_eq "host a's four crossing cables trained" 4 "$out"
start_opensm "$I-a" 0x0002c90300000101
active() { # INSTANCE: Active ports of its HCAs
	inst "$1" ibstat | grep -c 'State: Active'
}
for h in b c; do
	want=$([ $h = c ] && echo 4 || echo 1)
	end=$((SECONDS + 90))
	while [ "$(active "$I-$h")" != "$want" ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
	expect_eq "OpenSM in a brought host $h's ports to Active" "$want" "$(active "$I-$h")"
done
out=$(inst "$I-c" ibnetdiscover)
expect_eq "ibnetdiscover in c sees both switches" 2 "$(grep -c '^Switch' <<<"$out")"
expect_eq "... and the four CAs" 4 "$(grep -c '^Ca' <<<"$out")"
expect_match "... and the cables between a and b" '^\[7\][[:space:]]+"S-0002c90200000002"\[7\]' "$out"
# a's picture: its own nodes with LIDs, b's and c's as stand-ins it does
# not know the state of; the cables from a to b green by a's Active ends
out=$("$ibemu" topo show --instance "$I-a" --format dot)
expect_match "a's picture: sw1 is a's, with its LID" 'label="ibemu-sw1\\nhost a\\nLID [0-9]+", shape=box\]' "$out"
expect_match "... sw2 is b's, drawn as not known here" 'label="ibemu-sw2\\nhost b", shape=box, style=dashed' "$out"
expect_match "... the cables from a to b green" 'taillabel="7", headlabel="7", label="[^"]*", color="forestgreen"' "$out"
out=$(inst "$I-b" sminfo)
expect_match "b sees the master SM (in a)" 'sm lid [0-9]+ sm guid 0x2c90300000101.*state 3 SMINFO_MASTER' "$out"
h1lid=$(inst "$I-a" smpquery -G portinfo 0x0002c90300000101 1 | sed -n 's/^Lid:\.*//p')
out=$(inst "$I-b" perfquery "$h1lid" 1)
expect_match "b reads host1's counters through the PMA, across hosts" 'PortXmitPkts:\.+[1-9]' "$out"
out=$(inst "$I-b" ibping -c 2 -G 0x0002c90300000101 2>&1)
expect_match "ibping from b finds no server in a (none runs) and times out cleanly" 'transmitted|timed out|failed' "$out"
out=$(status_of "$I-a" 'sum(p["bad_messages"] for p in s["split"]["peers"]) + s["split"]["refused_handshakes"]')
expect_eq "no bad or refused messages so far" 0 "$out"

# --- faults on a cable between hosts act on both ends
out=$("$ibemu" link down --instance "$I-a" ibemu-sw2 7 2>&1)
expect_eq "a cannot pull a cable out of b's switch" 1 $?
expect_match "and says where to do it" '"ibemu-sw2" is simulated by another host.s daemon: change it there' "$out"
out=$("$ibemu" link down --instance "$I-a" ibemu-sw1 7 2>&1)
expect_eq "a pulls its end of the cable to b" 0 $?
out=$(inst "$I-b" smpquery -G portinfo 0x0002c90200000002 7)
expect_match "b's end went down too" 'PhysLinkState:\.+Polling' "$out"
"$ibemu" link up --instance "$I-a" ibemu-sw1 7 >/dev/null
end=$((SECONDS + 30))
until inst "$I-b" smpquery -G portinfo 0x0002c90200000002 7 | grep -Eq 'PhysLinkState:\.+LinkUp' || [ $SECONDS -ge $end ]; do sleep 0.2; done
out=$(inst "$I-b" smpquery -G portinfo 0x0002c90200000002 7)
expect_match "plugged back in: b's end trains" 'PhysLinkState:\.+LinkUp' "$out"

# --- a stranger: garbage at a's port is refused, nothing else moves
python3 - "${NS[c]}" "${ADDR[a]}" <<'EOF'
import socket, sys, subprocess
# from c's namespace: the namespace's address is the only route
subprocess.run(["ip", "netns", "exec", sys.argv[1], "python3", "-c", f"""
import socket
for payload in (b"\\x00\\x00\\x00\\x05hello", b"\\xff\\xff\\xff\\xff", b"\\x00\\x00\\x00\\x2aIBEMUSN1" + b"x" * 34):
    s = socket.create_connection(("{sys.argv[2]}", 7700), timeout=5)
    s.sendall(payload)
    try: s.recv(100); s.recv(100)
    except Exception: pass
    s.close()
"""], check=True)
EOF
end=$((SECONDS + 10))
while [ "$(status_of "$I-a" 's["split"]["refused_handshakes"]')" -lt 3 ] && [ $SECONDS -lt $end ]; do sleep 0.2; done
expect_eq "a refused the three strangers" 3 "$(status_of "$I-a" 's["split"]["refused_handshakes"]')"
expect_eq "its peers stayed up" 2 "$(peers_up "$I-a")"
# 34 connections from one address that say nothing: each past the 4th
# displaces the oldest, the last 4 wait out their 1 s for a hello
ip netns exec "${NS[c]}" python3 -c "
import socket
socks = [socket.create_connection(('${ADDR[a]}', 7700), timeout=5) for _ in range(34)]
for s in socks:
    while s.recv(100): pass
"
expect_eq "a closed all 34 silent ones" 37 "$(status_of "$I-a" 's["split"]["refused_handshakes"]')"
expect_eq "... its peers up meanwhile" 2 "$(peers_up "$I-a")"

# --- host c's daemon with the wrong key is refused by a and b
stop_opensm "$I-a"
down_inst "$I-c"
head -c 32 /dev/urandom | base64 >"$work/wrong.key"
chmod 600 "$work/wrong.key"
out=$(up_host c "$work/wrong.key")
expect_eq "c comes up with a wrong key" 0 $?
# a redials c with its backoff (up to 2 s between tries): wait for a try
alog() { cat "$IBEMU_RUN_DIR/$I-a/ibemud.log" 2>/dev/null || true; }
end=$((SECONDS + 20))
while ! alog | grep -q 'authentication failed' && [ $SECONDS -lt $end ]; do sleep 0.2; done
expect_eq "a does not let it in" 1 "$(peers_up "$I-a")"
expect_eq "c has no peer up" 0 "$(peers_up "$I-c")"
expect_match "a logs why" 'authentication failed' "$(alog)"
down_inst "$I-c"
out=$(up_host c)
expect_eq "c back with the right key" 0 $?
wait_peers "$I-c" 2

# --- b's daemon dies: its cables are pulled, the SM re-routes, a and c go on
start_opensm "$I-a" 0x0002c90300000101
end=$((SECONDS + 90))
while [ "$(active "$I-c")" != 4 ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
expect_eq "c Active again under the restarted SM" 4 "$(active "$I-c")"
bpid=$(cat "$IBEMU_RUN_DIR/$I-b/pid")
kill -9 "$bpid"
wait_peers "$I-a" 1
out=$(inst "$I-a" smpquery -G portinfo 0x0002c90200000001 7)
expect_match "sw1's cable to sw2 is down in a" 'PhysLinkState:\.+Polling' "$out"
end=$((SECONDS + 90))
while inst "$I-a" ibnetdiscover | grep -q '^Switch.*ibemu-sw2' && [ $SECONDS -lt $end ]; do sleep 0.5; done
out=$(inst "$I-a" ibnetdiscover)
expect_eq "ibnetdiscover in a: sw2 is gone" 1 "$(grep -c '^Switch' <<<"$out")"
expect_eq "... the CAs of a and c remain" 3 "$(grep -c '^Ca' <<<"$out")"
h3lid=$(inst "$I-c" smpquery -G portinfo 0x0002c90300000301 1 | sed -n 's/^Lid:\.*//p')
out=$(inst "$I-a" smpquery nodedesc "$h3lid")
expect_match "a still reaches host3 in c" 'Node Description:\.+ibemu-host3 HCA-1' "$out"
out=$(inst "$I-c" smpquery nodedesc "$h1lid")
expect_match "c still reaches host1 in a" 'Node Description:\.+ibemu-host1 HCA-1' "$out"

# b comes back: its cables train and the SM brings them up again
"$ibemu" down --instance "$I-b" >/dev/null 2>&1
rm -rf "${IBEMU_RUN_DIR:?}/$I-b"
out=$(up_host b)
expect_eq "b back up" 0 $?
wait_peers "$I-b" 2
end=$((SECONDS + 90))
while [ "$(active "$I-b")" != 1 ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
expect_eq "host2 Active again" 1 "$(active "$I-b")"
out=$(inst "$I-c" ibnetdiscover)
expect_eq "ibnetdiscover in c: both switches again" 2 "$(grep -c '^Switch' <<<"$out")"

# --- a node added in a split subnet is the adding host's
ca9='Ca	1 "H-0002c90300000900"		# "ibemu-host9 HCA-1"'
printf '%s\n[1](2c90300000901)\t"S-0002c90200000002"[4]\n' "$ca9" >"$work/frag-b.topo"
out=$("$ibemu" node add --instance "$I-a" --topology "$work/frag-b.topo" 2>&1)
expect_eq "a cannot cable a new node to b's switch" 1 $?
expect_match "... and says why, with the line" \
	'frag-b.topo:2: "S-0002c90200000002" is simulated by another host.s daemon: a fragment attaches to this host.s nodes only' "$out"
printf 'host="a" addr="192.0.2.1:7700"\n%s\n[1](2c90300000901)\t"S-0002c90200000001"[4]\n' "$ca9" >"$work/frag-host.topo"
out=$("$ibemu" node add --instance "$I-a" --topology "$work/frag-host.topo" 2>&1)
expect_eq "a fragment with a host= line is refused" 1 $?
expect_match "... with its line" 'frag-host.topo:1: host= lines are not for a fragment' "$out"
printf '%s\n[1](2c90300000901)\t"S-0002c90200000001"[4]\n' "$ca9" >"$work/frag-a.topo"
out=$("$ibemu" node add --instance "$I-a" --topology "$work/frag-a.topo" 2>&1)
expect_eq "a cables a new CA to its own switch" 0 $?
end=$((SECONDS + 90))
while ! inst "$I-c" ibnetdiscover | grep -q '^Ca.*ibemu-host9' && [ $SECONDS -lt $end ]; do sleep 0.5; done
out=$(inst "$I-c" ibnetdiscover)
expect_match "ibnetdiscover in c finds it (the SM swept on sw1's trap)" '^Ca.*"ibemu-host9 HCA-1"' "$out"
out=$(inst "$I-b" smpquery -G portinfo 0x0002c90300000901 1)
expect_match "b reaches it, and the SM in a made it Active" 'LinkState:\.+Active' "$out"

out=$(status_of "$I-a" 'sum(p["bad_messages"] for p in s["split"]["peers"])')
expect_eq "no bad messages between the daemons" 0 "$out"

stop_opensm "$I-a"
e2e_done
