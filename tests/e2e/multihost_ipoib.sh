#!/usr/bin/env bash
# IPoIB across the daemons of a split subnet (docs/multihost.md, "Hosts
# across daemons"): hosts a and b of tests/data/split3.topo as network
# namespaces on a bridge, each with its ibemud and `--ipoib`, OpenSM in
# a (c's daemon does not run). ibemu-host2, served by b, gets its ib0 and a
# carrier through OpenSM's SA across the peer link; a ping from
# ibemu-host1 (a) to host2's ib0 is answered, its ARP going over the
# broadcast group and the echoes as unicast across the cables between the
# daemons, whose PMA counters move at both ends; pulling those cables stops
# it and plugging them back brings it back; rping by ib0 address crosses.
# `ibemu hosts` on a lists b's and c's hosts, marked with their daemons,
# and `exec --host` of one of them goes on in b's instance (c's, not
# running here, is named with where it is served).
# usage: multihost_ipoib.sh IBEMU_BINARY DATA_DIR
set -u
ibemu=$1
data=$2
. "$(dirname "$0")/lib.sh"
e2e_setup multihost-ipoib
verbs_transport
need_tools ip ping rping python3
chmod 755 "$work"

. "$(dirname "$0")/netns.sh"
cleanup_all() {
	e2e_cleanup
	netns_cleanup
}
trap cleanup_all EXIT
netns_hosts "mi$$" a b || { echo "multihost-ipoib: no network namespaces; skipped"; exit 77; }
cp "$data/split3.topo" "$work/split.topo"
head -c 32 /dev/urandom | base64 >"$work/subnet.key"
chmod 600 "$work/subnet.key"

A=mi-a-$$ B=mi-b-$$
for h in a b; do
	i=$A
	[ $h = b ] && i=$B
	out=$(nsenter --net="/run/netns/${NS[$h]}" "$ibemu" up --instance "$i" --transport $transport --ipoib \
		--topology "$work/split.topo" --host $h --subnet-key "$work/subnet.key" 2>&1)
	expect_eq "up --ipoib, host $h" 0 $?
done
start_opensm $A 0x0002c90300000101
h1=ibemu-host1 h2=ibemu-host2
# on I HOST CMD...: a tool on a cluster host of instance I
on() { local i=$1 h=$2; shift 2; timeout "$tool_timeout" "$ibemu" exec --instance "$i" --host "$h" -- "$@" 2>&1; }

# the carrier comes with the join, host2's through OpenSM's SA in a
for ih in "$A $h1" "$B $h2"; do
	set -- $ih
	for _ in $(seq 1 300); do
		on $1 $2 ip -o link show ib0 | grep -q LOWER_UP && break
		sleep 0.1
	done
	expect_match "$2's ib0 has its carrier" '<[^>]*LOWER_UP[^>]*> mtu 2044 ' "$(on $1 $2 ip -o link show ib0)"
done
out=$(inst $A saquery -m --smkey 1)
expect_match "host2's port (daemon b) is a member of OpenSM's broadcast group" 'PortGid\.+fe80::2:c903:0:201' "$out"

# the ports of the two cables between the daemons: sw1's (simulated by
# a) and sw2's (by b); an echo crosses one of them each way
pkts() { # GUID COUNTER: the sum over ports 7 and 8
	local s=0 p v
	for p in 7 8; do
		v=$(inst $A perfquery -x -G "$1" $p | sed -n "s/^$2:\.*//p")
		s=$((s + ${v:-0}))
	done
	echo $s
}
sw1=0x0002c90200000001 sw2=0x0002c90200000002
x1=$(pkts $sw1 PortXmitPkts) r2=$(pkts $sw2 PortRcvPkts)
out=$(on $A $h1 ping -c 3 -i 0.2 -W 5 10.200.1.1)
expect_match "ping from host1 (daemon a) to host2's ib0 (daemon b): three answered" \
	'3 packets transmitted, 3 received' "$out"
x1b=$(pkts $sw1 PortXmitPkts) r2b=$(pkts $sw2 PortRcvPkts)
expect_eq "the echoes left sw1 (a) for sw2 ($x1 -> $x1b)" yes "$([ $((x1b - x1)) -ge 3 ] && echo yes)"
expect_eq "... and came in on sw2 (b) ($r2 -> $r2b)" yes "$([ $((r2b - r2)) -ge 3 ] && echo yes)"
out=$(on $B $h2 ping -c 2 -i 0.2 -W 5 10.200.0.1)
expect_match "ping back from host2 to host1's ib0" '2 packets transmitted, 2 received' "$out"

for p in 7 8; do "$ibemu" link down --instance $A ibemu-sw1 $p >/dev/null; done
out=$(on $A $h1 ping -c 1 -W 1 10.200.1.1)
expect_match "the cables between the daemons pulled: no answer" '1 packets transmitted, 0 received' "$out"
for p in 7 8; do "$ibemu" link up --instance $A ibemu-sw1 $p >/dev/null; done
answered=no
for _ in $(seq 1 60); do
	on $A $h1 ping -c 1 -W 1 10.200.1.1 >/dev/null && answered=yes && break
done
expect_eq "plugged back in: answered again" yes "$answered"

# rdma_cm by ib0 address, host1 (a) to host2 (b)
timeout "$tool_timeout" "$ibemu" exec --instance $B --host $h2 -- rping -s -a 10.200.1.1 -C 3 -v \
	>"$work/rping.server" 2>&1 &
server=$!
for _ in $(seq 1 50); do
	on $A $h1 rping -c -a 10.200.1.1 -C 3 -v >"$work/rping.client" && break
	sleep 0.1
done
expect_eq "rping from host1 (a) to host2's ib0 address (b)" 3 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
wait $server
expect_eq "... the server on host2 exits 0" 0 $?

# the whole cluster seen from a: its host, then b's and c's
expect_eq "ibemu hosts on a: b's and c's hosts too, marked" "ibemu-host1
  ibemu0   0x0002c90300000100  \"ibemu-host1 HCA-1\"
  ib0      10.200.0.1/16      ibemu0 port 1
ibemu-host2  (served by host= b, 192.0.2.2:7700)
  -        0x0002c90300000200  \"ibemu-host2 HCA-1\"
  -        10.200.1.1/16      0x0002c90300000200 port 1
ibemu-host3  (served by host= c, 192.0.2.3:7700)
  -        0x0002c90300000300  \"ibemu-host3 HCA-1\"
  -        10.200.2.1/16      0x0002c90300000300 port 1
  -        10.200.2.2/16      0x0002c90300000300 port 2
ibemu-host4  (served by host= c, 192.0.2.3:7700)
  -        0x0002c90300000400  \"ibemu-host4 HCA-1\"
  -        10.200.3.1/16      0x0002c90300000400 port 1
  -        10.200.3.2/16      0x0002c90300000400 port 2" "$("$ibemu" hosts --instance $A)"
out=$("$ibemu" hosts --instance $B --json |
	python3 -c 'import json,sys; print(*("%s@%s" % (h["name"], h["served_by"]["host"] if "served_by" in h else "here") for h in json.load(sys.stdin)["hosts"]))')
expect_eq "ibemu hosts --json on b: \"served_by\"" "ibemu-host2@here ibemu-host1@a ibemu-host3@c ibemu-host4@c" "$out"
# a host another daemon serves, that daemon an instance of this machine:
# exec --host goes on there, also from a program of a's host (the
# launcher's remote shell, through a's launch door)
out=$("$ibemu" exec --instance $A --host $h2 -- sh -c 'hostname; cat /sys/class/infiniband/*/node_desc' 2>&1)
expect_eq "exec --host of a host b serves, b running here: on that host, with its HCA" "$h2
$h2 HCA-1" "$out"
out=$(on $A $h1 "$(dirname "$ibemu")/ibemu-rsh" $h2 'hostname; cat /sys/class/infiniband/*/node_desc')
expect_eq "... also through ibemu-rsh from a program of host1 (a)" "$h2
$h2 HCA-1" "$out"
out=$("$ibemu" exec --instance $A --host ibemu-host3 -- true 2>&1)
expect_eq "exec --host of a host c serves, c not running here: exit 2" 2 $?
expect_eq "... saying where it is served" "ibemu exec: host \"ibemu-host3\" is served by the daemon of host= \"c\" (192.0.2.3:7700), not by instance \"$A\": run \`ibemu exec --host ibemu-host3\` on that daemon's machine" "$out"

out=$("$ibemu" status --instance $A --json |
	python3 -c 'import json,sys; p=[p for p in json.load(sys.stdin)["split"]["peers"] if p["host"] == "b"][0]; print(p["bad_messages"], p["packets_dropped"])')
expect_eq "no bad or dropped messages between the daemons" "0 0" "$out"
down_inst $A
down_inst $B
e2e_done
