#!/usr/bin/env bash
# Stock librdmacm programs over ibemu's rdma_cm device, on the transport
# IBEMU_TRANSPORT names (lib.sh's verbs_transport: seccomp natively, CUSE in
# the VM suite): the device and its sysfs entry, then rping, ucmatose, rdma_server /
# rdma_client, rdma_xserver / rdma_xclient (RC and XRC), udaddy (UD, SIDR), mckey
# (multicast through the SA and the MFTs), perftest's -R mode, and two
# middlewares (UCX's verbs transports, libfabric's verbs provider) between
# the two local CAs (addresses 10.200.N.1, routes from OpenSM, the IB CM on
# the wire), a connection whose client is killed, a link that goes down
# mid-connection, a route given with RDMA_OPTION_IB_PATH (as librdmacm
# does with ibacm's routes: tests/tools/ucma_probe.cpp), and, in the VM
# suite, the error cases next to rdma_rxe, which must give the same events.
# usage: rdma_cm_tools.sh IBEMU_BINARY UCMA_PROBE
set -u
ibemu=$1
probe=$2
. "$(dirname "$0")/lib.sh"
e2e_setup rdma-cm
verbs_transport
chmod 755 "$work"
ip link set lo up 2>/dev/null

V=cm-$$
"$ibemu" up --instance $V >/dev/null 2>&1
expect_eq "up" 0 $?
expect_exec_transport $V
# (a CUSE node, or under seccomp the FUSE file whose attributes are the
# kernel's: a character device, misc 10:59)
out=$(inst $V stat -L -c '%F %a' /dev/infiniband/rdma_cm)
expect_eq "rdma_cm is a character device, mode 0666" "character special file 666" "$out"
dev=$(inst $V stat -L -c '%t %T' /dev/infiniband/rdma_cm | { read -r a b; echo "$((16#$a)):$((16#$b))"; })
expect_eq "sysfs dev = the node's numbers" "$dev" "$(inst $V cat /sys/class/misc/rdma_cm/dev)"
expect_eq "rdma_cm abi_version" 4 "$(inst $V cat /sys/class/misc/rdma_cm/abi_version)"
expect_eq "the host's misc devices stay" "$(readlink /sys/class/misc/fuse)" "$(inst $V readlink /sys/class/misc/fuse)"
out=$("$ibemu" status --instance $V --json |
	python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["rdma_cm"], *(d["ports"][0]["ipv4"] for d in j["devices"]))')
expect_eq "status --json: rdma_cm and each port's IPv4" "/dev/infiniband/rdma_cm 10.200.0.1 10.200.1.1" "$out"

start_opensm $V 0x0002c90300000101
wait_for $V 120 sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu1 | grep -q "State: Active"'
expect_eq "OpenSM brings both ports up" 0 $?

# pair NAME SERVER... -- CLIENT...: the server in the background, the
# client once the server has had time to listen; prints both exit statuses
# (cm_prefix: a command that runs them, `ibemu exec` by default). A server
# says nothing when it listens, and a client that comes before is rejected
# (no listener) or refused (the middleware's TCP side) as on any host: in
# a TCG guest with an ASan daemon a perftest server has been seen to take
# longer than 5 s to reach rdma_listen(). Such a client, and only such a
# one, runs again while its server waits, 3 s apart, five runs at most;
# each earlier run's output stays in NAME.client.N, and the log says so.
cm_prefix=("$ibemu" exec --instance "$V" --)
too_early='REJECTED|[Cc]onnection refused|Unexpected CM event .* 8$'
pair() {
	local name=$1 s=() c=()
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	timeout "$tool_timeout" "${cm_prefix[@]}" "${s[@]}" >"$work/$name.server" 2>&1 &
	local server=$!
	sleep 2
	timeout "$tool_timeout" "${cm_prefix[@]}" "${c[@]}" >"$work/$name.client" 2>&1
	local rc=$? runs=1
	while [ $rc -ne 0 ] && [ $runs -lt 5 ] && kill -0 $server 2>/dev/null &&
		grep -qE "$too_early" "$work/$name.client"; do
		mv "$work/$name.client" "$work/$name.client.$runs"
		echo "note: $name's client run $runs came before its server listened:" \
			"$(grep -m1 -E "$too_early" "$work/$name.client.$runs")" >&2
		sleep 3
		timeout "$tool_timeout" "${cm_prefix[@]}" "${c[@]}" >"$work/$name.client" 2>&1
		rc=$?
		runs=$((runs + 1))
	done
	wait $server
	echo "$rc $?"
}

rcs=$(pair rping rping -s -a 10.200.1.1 -C 100 -v -- rping -c -a 10.200.1.1 -I 10.200.0.1 -C 100 -v)
expect_eq "rping ibemu0 -> ibemu1: client and server exit 0" "0 0" "$rcs"
expect_eq "rping: 100 pings" 100 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
expect_eq "rping: the server's 100" 100 "$(grep -c '^server ping data: rdma-ping-' "$work/rping.server")"

rcs=$(pair ucmatose ucmatose -b 10.200.1.1 -c 2 -C 10 -- ucmatose -s 10.200.1.1 -b 10.200.0.1 -c 2 -C 10)
expect_eq "ucmatose, 2 connections: client and server exit 0" "0 0" "$rcs"
expect_match "ucmatose: data transfers" 'data transfers complete' "$(cat "$work/ucmatose.client")"

rcs=$(pair rdma_server rdma_server -s 10.200.1.1 -- rdma_client -s 10.200.1.1)
expect_eq "rdma_server / rdma_client (sync ids, MIGRATE_ID): exit 0" "0 0" "$rcs"
expect_match "rdma_client: end 0" 'rdma_client: end 0' "$(cat "$work/rdma_server.client")"

rcs=$(pair rdma_xserver rdma_xserver -c r -- rdma_xclient -c r -s 10.200.1.1)
expect_eq "rdma_xserver / rdma_xclient (RC, inline send): exit 0" "0 0" "$rcs"

# XRC: the server's XRC SRQ (in a domain of no file) and receive QP, the
# client's send QP with one work request in its ring, the SRQ's number in
# the REP's private data, an inline SEND that names it
rcs=$(pair rdma_xserver_x rdma_xserver -c x -p 7472 -- rdma_xclient -c x -s 10.200.1.1 -p 7472)
expect_eq "rdma_xserver / rdma_xclient -c x (XRC): exit 0" "0 0" "$rcs"
expect_match "rdma_xserver -c x: its receive completed" 'rdma_xserver: end 0' "$(cat "$work/rdma_xserver_x.server")"

rcs=$(pair udaddy udaddy -b 10.200.1.1 -- udaddy -s 10.200.1.1 -b 10.200.0.1)
expect_eq "udaddy (UD, SIDR): client and server exit 0" "0 0" "$rcs"
expect_match "udaddy: its messages went through" 'test complete' "$(cat "$work/udaddy.client")"

# multicast: both join 239.1.2.3 through the SA (OpenSM answers and
# programs the switches' MFTs), and the sender's UD datagrams to the group
# reach the receiver across both switches. UD is unreliable and the SM
# takes a moment to program the MFTs after a join (mckey sleeps 3 s for
# that): if the receiver is still short of its 10, the sender runs again.
mc_rcv() { inst $V perfquery -x -C ibemu1 -P 1 | sed -n 's/^PortMulticastRcvPkts:\.*//p'; }
mc_before=$(mc_rcv)
timeout "$tool_timeout" "${cm_prefix[@]}" mckey -m 239.1.2.3 -b 10.200.1.1 -C 10 >"$work/mckey.server" 2>&1 &
server=$!
sleep 2
for _ in 1 2 3; do
	timeout "$tool_timeout" "${cm_prefix[@]}" mckey -m 239.1.2.3 -b 10.200.0.1 -s -C 10 >"$work/mckey.client" 2>&1
	rc=$?
	for _ in $(seq 20); do kill -0 $server 2>/dev/null || break; sleep 0.5; done
	kill -0 $server 2>/dev/null || break
done
wait $server
expect_eq "mckey: sender and receiver exit 0" "0 0" "$rc $?"
expect_match "mckey: joined the group OpenSM made for it" 'joined dgid: ff12:4001:ffff::f01:203 mlid 0xc0' \
	"$(cat "$work/mckey.server")"
expect_match "mckey: the receiver got its 10" 'data transfers complete' "$(cat "$work/mckey.server")"
mc_after=$(mc_rcv)
expect_eq "mckey: ibemu1's PMA counted multicast packets in" 1 "$(((mc_after - mc_before) >= 10))"

# middleware on the same devices: UCX's verbs transports (its wire-up
# over UD, then RC; the out-of-band exchange is a TCP socket) and
# libfabric's verbs provider (datagrams, and its RDM endpoint built on
# them). Neither leaves the emulated fabric: ibemu0's PMA counts the
# traffic.
xmit0() { inst $V perfquery -x -C ibemu0 -P 1 | sed -n 's/^PortUnicastXmitPkts:\.*//p'; }
x_before=$(xmit0)
ucx_env=(env UCX_TLS=rc_verbs,ud_verbs)
rcs=$(pair ucx "${ucx_env[@]}" UCX_NET_DEVICES=ibemu1:1 ucx_perftest -t tag_lat -n 1000 -- \
	"${ucx_env[@]}" UCX_NET_DEVICES=ibemu0:1 ucx_perftest 127.0.0.1 -t tag_lat -n 1000)
expect_eq "ucx_perftest tag_lat over rc_verbs/ud_verbs: client and server exit 0" "0 0" "$rcs"
expect_match "ucx_perftest: 1000 iterations" '^Final: +1000 ' "$(cat "$work/ucx.client")"
x_after=$(xmit0)
expect_eq "ucx_perftest: its 1000 messages crossed ibemu0's port" 1 "$(((x_after - x_before) >= 1000))"
# (-e rdm names ofi_rxd, libfabric's reliable datagrams over the verbs
# datagram endpoints: these programs run on no host, with no IPoIB
# interface, where libfabric 1.17's ofi_rxm, which it would take first,
# has only AF_IB addresses and fails in fi_domain() (its verbs provider
# calls rdma_resolve_addr() without a destination, EINVAL from librdmacm
# itself, on any kernel; ofiwg/libfabric#10472 reports it for later
# releases too). ofi_rxm runs
# between two hosts' ib0 in e2e-mpi-ofi.)
for e in dgram rdm; do
	d=() p=verbs
	[ $e = dgram ] && d=(-d ibemu1-dgram)
	[ $e = rdm ] && p='verbs;ofi_rxd'
	rcs=$(pair fi_$e fi_pingpong -p "$p" -e $e "${d[@]}" -I 100 -S 64 -- \
		fi_pingpong -p "$p" -e $e "${d[@]/ibemu1/ibemu0}" -I 100 -S 64 127.0.0.1)
	expect_eq "fi_pingpong -p $p -e $e: client and server exit 0" "0 0" "$rcs"
	expect_match "fi_pingpong -e $e: 100 messages of 64 bytes" '^64 +100 +=100 ' "$(cat "$work/fi_$e.client")"
done

# (perftest_untimed: perftest's own clock out of the outcome)
for t in ib_send_lat ib_write_bw; do
	f=$(perftest_untimed $t)
	rcs=$(pair $t $t -R -d ibemu1 -n 50 "$f" -- $t -R -d ibemu0 -n 50 "$f" 10.200.1.1)
	expect_eq "$t -R: client and server exit 0" "0 0" "$rcs"
	expect_match "$t -R: 50 iterations" '^ *[0-9]+ +50 +[0-9.]+ +[0-9.]+' "$(cat "$work/$t.client")"
done

# a client killed mid-connection: its file closes, the IB CM sends DREQ,
# the server sees the disconnect and ends
# (stderr, where rping reports CM events, in a file of its own: written
# unbuffered while stdout's buffer goes out at exit, the two interleaved
# in one file lost the event line now and then)
timeout "$tool_timeout" "$ibemu" exec --instance $V -- rping -s -a 10.200.1.1 -v >"$work/killed.server" \
	2>"$work/killed.server.err" &
server=$!
sleep 2
"$ibemu" exec --instance $V -- rping -c -a 10.200.1.1 -I 10.200.0.1 -v >"$work/killed.client" 2>&1 &
client=$!
end=$((SECONDS + tool_timeout)) # until the connection carries data
until grep -q 'ping data' "$work/killed.client" || [ $SECONDS -ge $end ]; do sleep 0.2; done
kill -9 $client
wait $client 2>/dev/null
wait $server
expect_match "killed client: the server saw the disconnect" 'DISCONNECT EVENT' "$(cat "$work/killed.server.err")"

# a link on the path goes down mid-connection (the switch port facing
# ibemu1, disabled by an SMP as an SM or an admin would): the side whose
# RC work request was in flight (the client's SEND or the server's RDMA
# READ or WRITE, depending on where rping was) fails after the QP's
# timeout and retries (IBV_WC_RETRY_EXC_ERR); its DREQ is lost on the dead
# link, so the other side, which only waits for its peer's next message,
# keeps waiting, as it would on hardware, also once the link is back
sw_port=$(inst $V ibnetdiscover -p | awk "/^SW/ && /'ibemu-host2 HCA-1'/ {print \$2, \$3; exit}")
read -r sw_lid sw_pnum <<<"$sw_port"
"$ibemu" exec --instance $V -- rping -s -a 10.200.1.1 -v -C 100000 >"$work/linkdown.server" 2>&1 &
server=$!
sleep 2
"$ibemu" exec --instance $V -- rping -c -a 10.200.1.1 -I 10.200.0.1 -v -C 100000 >"$work/linkdown.client" 2>&1 &
client=$!
end=$((SECONDS + tool_timeout)) # until the connection carries data
until grep -q 'ping data' "$work/linkdown.client" || [ $SECONDS -ge $end ]; do sleep 0.2; done
inst $V ibportstate "$sw_lid" "$sw_pnum" disable >/dev/null
end=$((SECONDS + tool_timeout)) # until one side gives up
while kill -0 $server 2>/dev/null && kill -0 $client 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
failed=none waiting=
if ! kill -0 $server 2>/dev/null; then failed=server waiting=$client; fi
if ! kill -0 $client 2>/dev/null; then failed=$([ $failed = none ] && echo client || echo both) waiting=$server; fi
expect_match "link down: one side fails" '^(server|client)$' "$failed"
if [ "$failed" = server ] || [ "$failed" = client ]; then
	expect_match "link down: retry exceeded on the $failed's RC QP" 'cq completion failed status 12' \
		"$(cat "$work/linkdown.$failed")"
fi
inst $V ibportstate "$sw_lid" "$sw_pnum" enable >/dev/null
wait_for $V 120 sh -c 'ibstat ibemu1 | grep -q "State: Active"'
expect_eq "link down: the port comes back" 0 $?
sleep 2
[ -n "$waiting" ] && kill -0 "$waiting" 2>/dev/null
expect_eq "link down: the other side still waits for its peer" 0 $?
kill $server $client 2>/dev/null
wait $server $client 2>/dev/null

# error cases: the event rping reports ("cma event ..., error N")
cmevent() { grep -m1 -o 'cma event RDMA_CM_EVENT_[A-Z_]*, error -\?[0-9]*' "$1"; }
pair noserver true -- rping -c -a 10.200.1.1 -I 10.200.0.1 -p 9999 -C 1 >/dev/null
ibemu_rej=$(cmevent "$work/noserver.client")
expect_eq "no listener: REJ, invalid service ID" "cma event RDMA_CM_EVENT_REJECTED, error 8" "$ibemu_rej"
pair offnet true -- rping -c -a 192.0.2.1 -C 1 >/dev/null
ibemu_unreach=$(grep -m1 'rdma_resolve_addr' "$work/offnet.client")
expect_eq "an address off every subnet: rdma_resolve_addr fails, ENETUNREACH" \
	"rdma_resolve_addr: Network is unreachable" "$ibemu_unreach"

# a route the program brings (SET_OPTION IB_PATH), checked byte by byte
# with the kernel's errnos; the same run on rxe below must print the same
inst $V "$probe" ib-path 10.200.0.1 10.200.1.1 >"$work/ib_path.ibemu"
rc=$?
expect_eq "IB_PATH: the probe's checks pass" 0 $rc
[ $rc -eq 0 ] || sed 's/^/    /' "$work/ib_path.ibemu"

# the SM goes: a route query nobody answers ends in ROUTE_ERROR
stop_opensm $V
pair nosm true -- rping -c -a 10.200.1.1 -I 10.200.0.1 -C 1 >/dev/null
expect_match "no SM: ROUTE_ERROR" 'RDMA_CM_EVENT_ROUTE_ERROR' "$(cat "$work/nosm.client")"
down_inst $V

# --- the same error cases against the real kernel's rdma_cm on rdma_rxe,
# in the VM suite's guest only (the CUSE transport): a native run leaves
# the host's modules and links alone
if [ $transport != cuse ]; then
	echo "note: the rdma_rxe comparison is skipped: it runs in the VM suite's guest (vm-rdma-cm)"
else
	rm -f /etc/modprobe.d/ibemu-no-ib-core.conf
	if modprobe crc32_generic 2>/dev/null && modprobe rdma_rxe 2>/dev/null && modprobe rdma_ucm && modprobe dummy &&
		ip link add cmd0 type dummy && ip addr add 10.55.0.1/24 dev cmd0 && ip link set cmd0 up &&
		rdma link add rxe0 type rxe netdev cmd0; then
		cm_prefix=(env)
		rcs=$(pair rxe_rping rping -s -a 10.55.0.1 -C 3 -v -- rping -c -a 10.55.0.1 -C 3 -v)
		expect_eq "rxe: rping exits 0 (the reference works)" "0 0" "$rcs"
		pair rxe_noserver true -- rping -c -a 10.55.0.1 -p 9999 -C 1 >/dev/null
		expect_eq "rxe: no listener gives the event ibemu gives" "$ibemu_rej" "$(cmevent "$work/rxe_noserver.client")"
		pair rxe_offnet true -- rping -c -a 192.0.2.1 -C 1 >/dev/null
		expect_eq "rxe: an unroutable address gives the error ibemu gives" "$ibemu_unreach" \
			"$(grep -m1 'rdma_resolve_addr' "$work/rxe_offnet.client")"
		"$probe" ib-path 10.55.0.1 10.55.0.1 >"$work/ib_path.rxe"
		expect_eq "rxe: the IB_PATH probe prints what it printed on ibemu" "$(cat "$work/ib_path.ibemu")" \
			"$(cat "$work/ib_path.rxe")"
		rdma link delete rxe0
	else
		bad "rdma_rxe reference device: could not be set up"
	fi
fi
e2e_done
