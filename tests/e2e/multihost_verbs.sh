#!/usr/bin/env bash
# Verbs across hosts, on the transport IBEMU_TRANSPORT names (lib.sh's
# verbs_transport: seccomp natively, CUSE in the VM suite): three "hosts" as
# network namespaces on a bridge, each with its own ibemud simulating its
# share of the built-in fabric, OpenSM in one; the pingpongs and perftest
# between an HCA of one daemon and an HCA of the other, their messages
# crossing between the daemons as packets; then rdma_cm programs between
# the two hosts' addresses.
# usage: multihost_verbs.sh IBEMU_BINARY DATA_DIR
set -u
ibemu=$1
data=$2
. "$(dirname "$0")/lib.sh"
e2e_setup multihost-verbs
verbs_transport
chmod 755 "$work"
ip link set lo up 2>/dev/null # the pingpongs meet over TCP on 127.0.0.1

. "$(dirname "$0")/netns.sh"
cleanup_all() {
	e2e_cleanup
	netns_cleanup
}
trap cleanup_all EXIT
netns_hosts "mv$$" a b c || { echo "multihost-verbs: no network namespaces; skipped"; exit 77; }

# the built-in fabric split over three hosts (tests/data/split3.topo):
# host1 in a, host2 in b, the dual-homed hosts in c
cp "$data/split3.topo" "$work/split.topo"
head -c 32 /dev/urandom | base64 >"$work/subnet.key"
chmod 600 "$work/subnet.key"

A=mv-a-$$ B=mv-b-$$ C=mv-c-$$
for h in a b c; do
	i=$A
	[ $h = b ] && i=$B
	[ $h = c ] && i=$C
	out=$(nsenter --net="/run/netns/${NS[$h]}" "$ibemu" up --instance "$i" --transport $transport \
		--topology "$work/split.topo" --host $h --subnet-key "$work/subnet.key" 2>&1)
	expect_eq "up host $h with $transport" 0 $?
	expect_exec_transport "$i"
done
start_opensm $A 0x0002c90300000101
wait_for $B 120 sh -c 'ibstat ibemu0 | grep -q "State: Active"'
expect_eq "OpenSM in a brings host2's port (in b) to Active" 0 $?
wait_for $A 120 sh -c 'ibstat ibemu0 | grep -q "State: Active"'
expect_eq "... and host1's (in a)" 0 $?

listening() { ss -ltnH "sport = :$1" | grep -q .; }
# pingpong name args...: server on host2 (daemon b), client on host1
# (daemon a); prints both exit statuses
pingpong() {
	local name=$1; shift
	local port=$((18515 + RANDOM % 1000))
	while listening $port; do port=$((port + 1)); done
	"$ibemu" exec --instance $B -- "$name" -d ibemu0 -p $port "$@" >"$work/$name.server" 2>&1 &
	local server=$! rc src end=$((SECONDS + tool_timeout))
	while ! listening $port && kill -0 $server 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	timeout "$tool_timeout" "$ibemu" exec --instance $A -- "$name" -d ibemu0 -p $port "$@" 127.0.0.1 \
		>"$work/$name.client" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && kill -0 $server 2>/dev/null; then
		src=hung
		kill $server
	fi
	end=$((SECONDS + tool_timeout))
	while kill -0 $server 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	kill -9 $server 2>/dev/null
	wait $server
	echo "$rc ${src:-$?}"
}
peer_b() { # PYTHON-EXPR over a's peer b as p
	"$ibemu" status --instance $A --json |
		python3 -c "import json,sys; p=[p for p in json.load(sys.stdin)['split']['peers'] if p['host'] == 'b'][0]; print($1)"
}
before=$(peer_b 'p["packets_out"] + p["packets_in"]')
for pp in ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong; do
	rcs=$(pingpong $pp -n 50)
	expect_eq "$pp across hosts: client and server exit 0" "0 0" "$rcs"
	expect_match "$pp across hosts: 50 iterations" '50 iters in' "$(cat "$work/$pp.server")"
done
rcs=$(pingpong ibv_rc_pingpong -n 20 -s 100000)
expect_eq "ibv_rc_pingpong, 100 kB messages (98 packets each) across hosts" "0 0" "$rcs"
after=$(peer_b 'p["packets_out"] + p["packets_in"]')
if [ $((after - before)) -gt 300 ]; then ok; else
	bad "the pingpongs' packets crossed between the daemons ($((after - before)) counted)"; fi
# (perftest_untimed: perftest's own clock out of the outcome)
for t in ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat; do
	size=65536
	[ $t = ib_atomic_bw ] && size=8
	[ $t = ib_send_lat ] && size=2
	rcs=$(pingpong $t -n 20 -s $size "$(perftest_untimed $t)")
	expect_eq "$t across hosts: client and server exit 0" "0 0" "$rcs"
	expect_match "$t: 20 iterations of $size bytes" "^ *$size +20 +[0-9.]+ +[0-9.]+" "$(cat "$work/$t.client")"
	echo "  $t: $(grep -E "^ *$size +20 " "$work/$t.client" | head -1)"
done

# rdma_cm between hosts: every daemon numbers every CA of the file alike
# (10.200.N.P, N the CA's position among the file's CAs), so a's
# rdma_resolve_addr() answers b's address; the route is a PathRecord from
# OpenSM in a, the CM's MADs and the data cross between the daemons.
addrs=""
for i in $A $B $C; do
	addrs="$addrs $("$ibemu" status --instance $i --json |
		python3 -c 'import json,sys; print(*(d["ports"][0]["ipv4"] for d in json.load(sys.stdin)["devices"]))')"
done
expect_eq "each daemon's HCAs have the subnet-wide addresses" " 10.200.0.1 10.200.1.1 10.200.2.1 10.200.3.1" "$addrs"
# cm NAME SERVER... -- CLIENT...: the server on host2 (b), the client on
# host1 (a) once the server listens (a few tries); both exit statuses
cm() {
	local name=$1 s=() c=() rc tries=0
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout "$tool_timeout" "$ibemu" exec --instance $B -- "${s[@]}" >"$work/$name.server" 2>&1 &
	local server=$!
	while :; do
		sleep 2
		timeout "$tool_timeout" "$ibemu" exec --instance $A -- "${c[@]}" >"$work/$name.client" 2>&1
		rc=$?
		tries=$((tries + 1))
		[ $rc -eq 0 ] || ! kill -0 $server 2>/dev/null || [ $tries -ge 3 ] && break
	done
	wait $server
	echo "$rc $?"
}
rcs=$(cm rping rping -s -a 10.200.1.1 -C 20 -v -- rping -c -a 10.200.1.1 -C 20 -v)
expect_eq "rping across hosts (no source address): client and server exit 0" "0 0" "$rcs"
expect_eq "rping: 20 pings" 20 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
rcs=$(cm ucmatose ucmatose -b 10.200.1.1 -c 2 -C 5 -- ucmatose -s 10.200.1.1 -b 10.200.0.1 -c 2 -C 5)
expect_eq "ucmatose across hosts, 2 connections: client and server exit 0" "0 0" "$rcs"
rcs=$(cm send_lat_R ib_send_lat -R -d ibemu0 -n 20 -- ib_send_lat -R -d ibemu0 -n 20 10.200.1.1)
expect_eq "ib_send_lat -R across hosts: client and server exit 0" "0 0" "$rcs"
# multicast: the receiver on b joins (an SA join to OpenSM in a, which
# programs every daemon's MFTs), the sender on a sends to the group; the
# datagrams follow the MFTs across the daemons. UD is unreliable and the
# SM takes a moment after a join: the sender runs again while the
# receiver is short of its 10.
timeout "$tool_timeout" "$ibemu" exec --instance $B -- mckey -m 239.1.2.3 -b 10.200.1.1 -C 10 \
	>"$work/mckey.server" 2>&1 &
server=$!
sleep 2
for _ in 1 2 3; do
	timeout "$tool_timeout" "$ibemu" exec --instance $A -- mckey -m 239.1.2.3 -b 10.200.0.1 -s -C 10 \
		>"$work/mckey.client" 2>&1
	rc=$?
	for _ in $(seq 20); do kill -0 $server 2>/dev/null || break; sleep 0.5; done
	kill -0 $server 2>/dev/null || break
done
kill $server 2>/dev/null
wait $server
expect_eq "mckey across hosts: sender and receiver exit 0" "0 0" "$rc $?"
expect_match "mckey: the receiver on b got its 10" 'data transfers complete' "$(cat "$work/mckey.server")"
cm noserver true -- rping -c -a 10.200.1.1 -p 9999 -C 1 >/dev/null
expect_match "no listener on the other host: REJ, invalid service ID" \
	'cma event RDMA_CM_EVENT_REJECTED, error 8' "$(cat "$work/noserver.client")"

out=$(peer_b 'p["bad_messages"], p["packets_dropped"]')
expect_eq "no bad or dropped messages between the daemons" "0 0" "$out"

stop_opensm $A
e2e_done
