#!/usr/bin/env bash
# ib0 with OpenSM (ibemud --ipoib, docs/ipoib.md): each local HCA's
# namespace has ib0 on the port's address, both ports are members of the
# IPoIB broadcast group OpenSM made, an ICMP echo crosses the fabric to
# host2's stack and back, a pulled cable cuts it, and a cable plugged
# back in (a new join) brings it back.
# usage: ipoib.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup ipoib
for t in nsenter ip python3; do
	if ! command -v $t >/dev/null; then
		echo "ipoib: needs $t; skipped"
		exit 77
	fi
done
echo_py=$(dirname "$0")/icmp_echo.py

I=e2e-ipoib-$$
out=$("$ibemu" up --instance $I --sm --ipoib 2>&1)
expect_eq "up --sm --ipoib" 0 $?
log=$IBEMU_RUN_DIR/$I/ibemud.log
ns0=$(sed -n 's|.*ibemu0 port 1: ib0 10.200.0.1/16 .* in the network namespace \(/proc/[0-9]*/fd/[0-9]*\)$|\1|p' "$log")
ns1=$(sed -n 's|.*ibemu1 port 1: ib0 10.200.1.1/16 .* in the network namespace \(/proc/[0-9]*/fd/[0-9]*\)$|\1|p' "$log")
expect_match "the log names ibemu0's namespace" '^/proc/' "$ns0"
expect_match "... and ibemu1's" '^/proc/' "$ns1"

out=$(nsenter --net="$ns0" ip -o addr show ib0 2>&1)
expect_match "ib0 has 10.200.0.1/16" 'inet 10\.200\.0\.1/16' "$out"
out=$(nsenter --net="$ns0" ip -o link show ib0 2>&1)
expect_match "ib0 is up, MTU 2044, a TUN's link type" 'mtu 2044 .*link/none' "$out"
expect_match "... up" '<[^>]*UP[^>]*>' "$out"

# the joins reach OpenSM (which shows port GIDs to a query with its SM_Key)
wait_for $I 30 sh -c 'saquery -m --smkey 1 | grep -q fe80::2:c903:0:201'
out=$(inst $I saquery -m --smkey 1)
expect_match "OpenSM has the broadcast group" 'MGID\.+ff12:401b:ffff::ffff:ffff' "$out"
expect_match "host1's port is a member" 'PortGid\.+fe80::2:c903:0:101' "$out"
expect_match "host2's port is a member" 'PortGid\.+fe80::2:c903:0:201' "$out"

# host2's stack counts the echo it answered (Icmp InEchos in its
# namespace's /proc/net/snmp): only the echo moves it, exactly once
inechos() { nsenter --net="$ns1" awk '/^Icmp:/ { if (h) print $10; h = 1 }' /proc/net/snmp; }
before=$(inechos)
out=$(timeout 30 nsenter --net="$ns0" python3 "$echo_py" 10.200.1.1 2>&1)
expect_eq "an echo from ibemu0's namespace to 10.200.1.1 is answered (its id, sequence and payload)" reply "$out"
after=$(inechos)
expect_eq "host2's stack answered one echo (InEchos $before -> $after)" $(( ${before:-0} + 1 )) "${after:-0}"

out=$("$ibemu" link down --instance $I "ibemu-host2 HCA-1" 1 2>&1)
expect_eq "link down" 0 $?
out=$(timeout 30 nsenter --net="$ns0" python3 "$echo_py" 10.200.1.1 1 2>&1)
expect_eq "a pulled cable: no answer" "no reply" "$out"
out=$("$ibemu" link up --instance $I "ibemu-host2 HCA-1" 1 2>&1)
expect_eq "link up" 0 $?
answered=no
for _ in $(seq 1 60); do
	out=$(timeout 30 nsenter --net="$ns0" python3 "$echo_py" 10.200.1.1 1 2>&1)
	[ "$out" = reply ] && answered=yes && break
done
expect_eq "plugged back in: answered again" yes "$answered"

down_inst $I
e2e_done
