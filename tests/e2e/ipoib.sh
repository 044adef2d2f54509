#!/usr/bin/env bash
# IPoIB on the cluster hosts (docs/cluster.md, "IPoIB"; docs/ipoib.md):
# the default fabric's ibemu-host1 and ibemu-host2, each with its own HCA
# and network namespace, run under `ibemu exec --host`. Each sees only its
# own HCA and its ib0 on the port's rdma_cm address (`ip addr`, `ibemu
# hosts`); both ports join OpenSM's broadcast group; a ping from host1 to
# host2's ib0 is answered and its packets move the switches' PMA counters;
# a pulled cable stops it and the plugged one brings it back; rping
# between the hosts by ib0 address works, an address of the subnet nobody
# has gets ADDR_ERROR (ETIMEDOUT) and one off the subnet ENETUNREACH.
# usage: ipoib.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup ipoib
verbs_transport
need_tools ip ping rping python3
chmod 755 "$work"

I=e2e-ipoib-$$
out=$("$ibemu" up --instance $I --ipoib --sm 2>&1)
expect_eq "up --sm" 0 $?
expect_exec_transport $I
h1=ibemu-host1
h2=ibemu-host2
# on_host HOST CMD...: a tool run on one of the instance's hosts
on_host() { local h=$1; shift; timeout "$tool_timeout" "$ibemu" exec --instance $I --host "$h" -- "$@" 2>&1; }

expect_eq "ibemu hosts: each host's HCA and ib0" "ibemu-host1
  ibemu0   0x0002c90300000100  \"ibemu-host1 HCA-1\"
  ib0      10.200.0.1/16      ibemu0 port 1
ibemu-host2
  ibemu1   0x0002c90300000200  \"ibemu-host2 HCA-1\"
  ib0      10.200.1.1/16      ibemu1 port 1" "$("$ibemu" hosts --instance $I)"
out=$("$ibemu" hosts --instance $I --json |
	python3 -c 'import json,sys; print(*("%s=%s" % (h["name"], ",".join("%s/%s/%s/%d" % (i["name"], i["address"], i["hca"], i["port"]) for i in h["ib"])) for h in json.load(sys.stdin)["hosts"]))')
expect_eq "ibemu hosts --json: \"ib\"" "ibemu-host1=ib0/10.200.0.1/16/ibemu0/1 ibemu-host2=ib0/10.200.1.1/16/ibemu1/1" "$out"

expect_eq "host1 sees only its HCA" ibemu0 "$(on_host $h1 ibstat -l | xargs)"
expect_eq "host2 sees only its HCA" ibemu1 "$(on_host $h2 ibstat -l | xargs)"
expect_eq "host1's interfaces: lo and ib0" "lo ib0" "$(on_host $h1 ip -o link | awk -F': ' '{print $2}' | xargs)"
out=$(on_host $h1 ip -o addr show ib0)
expect_match "ip addr on host1: ib0 has 10.200.0.1/16" 'inet 10\.200\.0\.1/16 brd 10\.200\.255\.255' "$out"
expect_match "ip addr on host2: ib0 has 10.200.1.1/16" 'inet 10\.200\.1\.1/16' "$(on_host $h2 ip -o addr show ib0)"
expect_eq "the namespace of plain exec has no ib0" "" "$(inst $I ip -o link | awk -F': ' '$2 ~ /^ib[0-9]/')"

# the joins reach OpenSM (which shows port GIDs to a query with its SM_Key)
wait_for $I 30 sh -c 'saquery -m --smkey 1 | grep -q fe80::2:c903:0:201'
out=$(inst $I saquery -m --smkey 1)
expect_match "OpenSM has the broadcast group" 'MGID\.+ff12:401b:ffff::ffff:ffff' "$out"
expect_match "host1's port is a member" 'PortGid\.+fe80::2:c903:0:101' "$out"
expect_match "host2's port is a member" 'PortGid\.+fe80::2:c903:0:201' "$out"
# the carrier comes with each port's join (its answer follows OpenSM's record)
for h in $h1 $h2; do
	for _ in $(seq 1 100); do
		on_host $h ip -o link show ib0 | grep -q LOWER_UP && break
		sleep 0.1
	done
	expect_match "with the join, $h's ib0 has its carrier and the group's MTU" '<[^>]*LOWER_UP[^>]*> mtu 2044 ' \
		"$(on_host $h ip -o link show ib0)"
done

# host2's switch port (ibemu-sw2 port 1) passes only what goes to and
# from host2: the echoes and their answers, and no perfquery
xmit() { inst $I perfquery -x -G 0x0002c90200000002 1 | sed -n 's/^PortXmitPkts:\.*//p'; }
rcv() { inst $I perfquery -x -G 0x0002c90200000002 1 | sed -n 's/^PortRcvPkts:\.*//p'; }
x0=$(xmit) r0=$(rcv)
out=$(on_host $h1 ping -c 3 -i 0.2 -W 5 10.200.1.1)
expect_match "ping from host1 to host2's ib0: three answered" '3 packets transmitted, 3 received' "$out"
x1=$(xmit) r1=$(rcv)
expect_eq "the echoes went out of ibemu-sw2 port 1 ($x0 -> $x1)" yes "$([ $((x1 - x0)) -ge 3 ] && echo yes)"
expect_eq "the answers came in on it ($r0 -> $r1)" yes "$([ $((r1 - r0)) -ge 3 ] && echo yes)"

out=$("$ibemu" link down --instance $I "ibemu-host2 HCA-1" 1 2>&1)
expect_eq "link down" 0 $?
out=$(on_host $h1 ping -c 1 -W 1 10.200.1.1)
expect_match "a pulled cable: no answer" '1 packets transmitted, 0 received' "$out"
out=$("$ibemu" link up --instance $I "ibemu-host2 HCA-1" 1 2>&1)
expect_eq "link up" 0 $?
answered=no
for _ in $(seq 1 60); do
	on_host $h1 ping -c 1 -W 1 10.200.1.1 >/dev/null && answered=yes && break
done
expect_eq "plugged back in: answered again" yes "$answered"

# rdma_cm by ib0 address, from one host to the other
timeout "$tool_timeout" "$ibemu" exec --instance $I --host $h2 -- rping -s -a 10.200.1.1 -C 3 -v >"$work/rping.server" 2>&1 &
server=$!
for _ in $(seq 1 50); do
	on_host $h1 rping -c -a 10.200.1.1 -C 3 -v >"$work/rping.client" && break
	sleep 0.1
done
expect_eq "rping from host1 to host2's ib0 address" 3 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
wait $server
expect_eq "... the server on host2 exits 0" 0 $?
out=$(on_host $h1 rping -c -a 10.200.9.1 -C 1 -v)
expect_match "an address of the subnet nobody has: ADDR_ERROR, ETIMEDOUT" 'RDMA_CM_EVENT_ADDR_ERROR, error -110' "$out"
out=$(on_host $h1 rping -c -a 192.0.2.1 -C 1 -v)
expect_match "an address off the subnet: ENETUNREACH" 'rdma_resolve_addr: Network is unreachable' "$out"

down_inst $I
e2e_done
