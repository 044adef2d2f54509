#!/usr/bin/env bash
# Stock libibverbs programs over ibemu's uverbs devices, on the transport
# IBEMU_TRANSPORT names (lib.sh's verbs_transport: seccomp natively, CUSE in
# the VM suite): ibv_devices, ibv_devinfo -v, the four pingpongs between the two local
# CAs (across both switches of the default fabric), with ibemu's provider
# the pingpongs with completion channels (-e) and perftest with its default
# flags, the stock provider as the fallback, a clean failure when a link
# on the path is down, the kernel's answers to a process that uses
# another's handles or pins past its RLIMIT_MEMLOCK, and, in the VM suite,
# with rdma_rxe loaded, ibemu's devices (and only them) under `ibemu exec`
# and the same probes' answers from rxe.
# usage: verbs_tools.sh IBEMU_BINARY UVERBS_PROBE VERBS_REUSE VERBS_QUEUES VERBS_MW VERBS_XRC
set -u
ibemu=$1
probe=$2
reuse=$3
queues=$4
mw=$5
xrc=$6
. "$(dirname "$0")/lib.sh"
e2e_setup verbs
verbs_transport
chmod 755 "$work" # unprivileged users reach uverbsN through the run directory
ip link set lo up 2>/dev/null # the pingpongs meet over TCP on 127.0.0.1

V=verbs-$$
"$ibemu" up --instance $V >/dev/null 2>&1
expect_eq "up" 0 $?
expect_exec_transport $V
# (a CUSE node, or under seccomp the FUSE file whose attributes are the
# kernel's: a character device with uverbs' numbers)
out=$(inst $V stat -L -c '%F %a' /dev/infiniband/uverbs0)
expect_eq "uverbs0 is a character device, mode 0666" "character special file 666" "$out"
dev=$(inst $V stat -L -c '%t %T' /dev/infiniband/uverbs0 | { read -r a b; echo "$((16#$a)):$((16#$b))"; })
expect_eq "sysfs dev = the node's numbers" "$dev" "$(inst $V cat /sys/class/infiniband_verbs/uverbs0/dev)"
expect_eq "infiniband_verbs abi_version" 6 "$(inst $V cat /sys/class/infiniband_verbs/abi_version)"

out=$(inst $V ibv_devices)
expect_match "ibv_devices lists ibemu0" '^\s+ibemu0\s+0002c90300000100$' "$out"
expect_match "ibv_devices lists ibemu1" '^\s+ibemu1\s+0002c90300000200$' "$out"

start_opensm $V 0x0002c90300000101
wait_for $V 120 sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu1 | grep -q "State: Active"'
expect_eq "OpenSM brings both ports up" 0 $?

out=$(inst $V ibv_devinfo -v -d ibemu0)
lid=$(inst $V cat /sys/class/infiniband/ibemu0/ports/1/lid)
expect_match "devinfo: node GUID from the fabric" 'node_guid:\s+0002:c903:0000:0100' "$out"
expect_match "devinfo: port active" 'state:\s+PORT_ACTIVE \(4\)' "$out"
expect_match "devinfo: LID as OpenSM set it" "port_lid:\s+$((lid))\$" "$out"
expect_match "devinfo: SM LID" 'sm_lid:\s+[1-9]' "$out"
expect_match "devinfo: GID from the port GUID" 'GID\[  0\]:\s+fe80(:0000){3}:0002:c903:0000:0101' "$out"
expect_match "devinfo: link layer" 'link_layer:\s+InfiniBand' "$out"

# listening PORT: a TCP listener on PORT (the pingpong servers meet there)
listening() { ss -ltnH "sport = :$1" | grep -q .; }

# pingpong name args...: server on ibemu1, client on ibemu0; prints both
# exit statuses, or "hung" for a server still waiting once the client ended
# (pp_prefix: a command that runs the program, e.g. env)
pp_prefix=
pingpong() {
	local name=$1; shift
	local port=$((18515 + RANDOM % 1000))
	while listening $port; do port=$((port + 1)); done
	# shellcheck disable=SC2086 # pp_prefix: words before the program
	"$ibemu" exec --instance $V -- $pp_prefix "$name" -d ibemu1 -p $port "$@" >"$work/$name.server" 2>&1 &
	local server=$! rc src end=$((SECONDS + tool_timeout))
	while ! listening $port && kill -0 $server 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	# shellcheck disable=SC2086
	timeout "$tool_timeout" "$ibemu" exec --instance $V -- $pp_prefix "$name" -d ibemu0 -p $port "$@" 127.0.0.1 \
		>"$work/$name.client" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && kill -0 $server 2>/dev/null; then
		src=hung # it waits for completions that never come
		kill $server
	fi
	end=$((SECONDS + tool_timeout))
	while kill -0 $server 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	kill -9 $server 2>/dev/null
	wait $server
	echo "$rc ${src:-$?}"
}
# perftest name args...: pingpong, with perftest's own clock out of the
# outcome (lib.sh's perftest_untimed)
perftest() { pingpong "$@" "$(perftest_untimed "$1")"; }
for pp in ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
	rcs=$(pingpong $pp -n 50)
	expect_eq "$pp: client and server exit 0" "0 0" "$rcs"
	expect_match "$pp: 50 iterations" 'bytes in .* seconds = .*Mbit/sec' "$(cat "$work/$pp.client")"
	expect_match "$pp: the server's iterations" '50 iters in' "$(cat "$work/$pp.server")"
done
# --- the pingpong's packets in a capture, as tshark reads them: at host1's
# port, the client's SENDs out and the server's in, and the ACKs
if command -v tshark >/dev/null; then
	# (bounded: a capture that misses its packets fails a check, not the suite)
	timeout -k 10 "$tool_timeout" "$ibemu" capture --instance $V --port ibemu-host1:1 --filter data -c 8 \
		-w "$work/rc.pcap" >"$work/capture.out" 2>&1 &
	cap=$!
	end=$((SECONDS + 30))
	until grep -q 'capturing at' "$work/capture.out" || [ $SECONDS -ge $end ]; do sleep 0.1; done
	rcs=$(pingpong ibv_rc_pingpong -n 5 -s 512) # below the MTU: SEND Only
	expect_eq "rc_pingpong under a capture" "0 0" "$rcs"
	wait $cap
	expect_eq "the capture ends after its 8 packets" 0 $?
	out=$(tshark -r "$work/rc.pcap" -T fields -e erf.flags.cap -e _ws.col.Info 2>/dev/null)
	expect_match "tshark: the client's SEND leaves host1" $'^0\tRC Send Only QP=0x[0-9a-f]{6} $' "$out"
	expect_match "tshark: the server's SEND arrives" $'^1\tRC Send Only QP=0x[0-9a-f]{6} $' "$out"
	expect_match "tshark: and the ACKs" $'^[01]\tRC Acknowledge QP=0x[0-9a-f]{6} $' "$out"
	expect_eq "eight packets, none malformed" "8 0" "$(grep -c . <<<"$out") $(grep -c -i malformed <<<"$out")"
	out=$(tshark -r "$work/rc.pcap" -T fields -e infiniband.bth.psn -Y 'erf.flags.cap == 0 && infiniband.bth.opcode == 4' 2>/dev/null | head -2)
	expect_eq "consecutive PSNs" 1 "$(awk 'NR == 1 { a = $1 } NR == 2 { print $1 - a }' <<<"$out")"
fi

# --- with ibemu's provider (what `ibemu exec` loads): completion channels
# and perftest's default flags (the ibv_wr API, ibv_create_cq_ex)
expect_eq "exec names ibemu's provider in RDMAV_DRIVERS" "$(dirname "$ibemu")/provider/libibemu" \
	"$(inst $V sh -c 'echo "$RDMAV_DRIVERS"')"
for pp in ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
	rcs=$(pingpong $pp -n 20 -e)
	expect_eq "$pp -e (completion channel): client and server exit 0" "0 0" "$rcs"
	expect_match "$pp -e: 20 iterations" '20 iters in' "$(cat "$work/$pp.server")"
done
# perftest: its output file is per program, so -e runs go last
for t in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
	size=65536
	[ $t = ib_atomic_bw ] && size=8
	rcs=$(perftest $t -n 20 -s $size)
	expect_eq "$t (default flags): client and server exit 0" "0 0" "$rcs"
	expect_match "$t: the ibv_wr API" 'ibv_wr\* API\s+: ON' "$(cat "$work/$t.client")"
	expect_match "$t: 20 iterations of $size bytes" "^ *$size +20 +[0-9.]+ +[0-9.]+" "$(cat "$work/$t.client")"
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
	rcs=$(perftest $t -n 50)
	expect_eq "$t (default flags): client and server exit 0" "0 0" "$rcs"
	expect_match "$t: 50 iterations" '^ *2 +50 +[0-9.]+ +[0-9.]+' "$(cat "$work/$t.client")"
done
# (200: the send queue of 128 wraps, and the client sleeps on two events)
rcs=$(perftest ib_send_bw -n 200 -e)
expect_eq "ib_send_bw -e (events): client and server exit 0" "0 0" "$rcs"
expect_match "ib_send_bw -e: 200 iterations" '^ *65536 +200 +[0-9.]+ +[0-9.]+' "$(cat "$work/ib_send_bw.client")"
# ... and while its sends wait on RNR NAKs: the server's one receive at a
# time, each posted after an event, wakes the waiting requester (natively:
# the VM's verbs go the same way, a run slower)
if [ "$transport" = seccomp ]; then
	xmit=/sys/class/infiniband/ibemu0/ports/1/counters/port_xmit_packets
	before=$(inst $V cat $xmit)
	rcs=$(perftest ib_send_bw -n 1000 -s 64 -r 1 -e)
	expect_eq "ib_send_bw -e -r 1 (events, RNR): client and server exit 0" "0 0" "$rcs"
	expect_match "ib_send_bw -e -r 1: 1000 iterations" '^ *64 +1000 +[0-9.]+ +[0-9.]+' \
		"$(cat "$work/ib_send_bw.client")"
	sent=$(($(inst $V cat $xmit) - before))
	expect_eq "ib_send_bw -e -r 1: RNR NAKs made ibemu0 send again ($sent packets for 1000 messages)" 1 \
		$((sent > 1000))
fi
# the stock provider (ipathverbs, by the device's modalias) still serves
# programs that do without ibemu's; completion channels it has where the
# transport makes the channel's descriptor in the caller, as the kernel
# does (seccomp), not on CUSE
pp_prefix="env -u RDMAV_DRIVERS"
rcs=$(pingpong ibv_rc_pingpong -n 10)
expect_eq "without ibemu's provider: rc_pingpong still works" "0 0" "$rcs"
rcs=$(pingpong ibv_rc_pingpong -n 10 -e)
pp_prefix=
if [ $transport = cuse ]; then
	expect_eq "without ibemu's provider: rc_pingpong -e fails" "1 1" "$rcs"
	expect_match "without ibemu's provider: a clear error" "Couldn't create completion channel" \
		"$(cat "$work/ibv_rc_pingpong.server")"
else
	expect_eq "without ibemu's provider: rc_pingpong -e works (the daemon made its channel)" "0 0" "$rcs"
	expect_match "without ibemu's provider: rc_pingpong -e's 10 iterations" '10 iters in' \
		"$(cat "$work/ibv_rc_pingpong.server")"
fi

out=$(inst $V perfquery -x)
expect_match "perfquery counts the verbs traffic" '^PortXmitData:\.+[0-9]{5,}' "$out"

# --- registered memory is bound to the address space that registered it:
# after an exec, or an exit and a new process with the same PID, an RDMA
# WRITE to it completes as on hardware (the MR's pinned pages take it, for
# nobody) and the newcomer's memory is untouched
out=$(inst $V "$reuse" exec ibemu0 ibemu1)
expect_eq "exec: RDMA WRITE into the old address space goes nowhere" 0 $?
expect_eq "exec: the steps" "$(printf '%s\n' 'control RDMA WRITE: success' 'victim: the control write arrived' \
	'RDMA WRITE after the exec: success')" "$(grep -v '^sentinel' <<<"$out")"
expect_match "exec: the new image's memory is untouched" '^sentinel pid [0-9]+: its memory is untouched$' "$out"
out=$(inst $V "$reuse" reuse ibemu0 ibemu1)
expect_eq "PID reuse: RDMA WRITE into the old address space goes nowhere" 0 $?
expect_match "PID reuse: a new process really has the PID" '^a new process has the victim.s PID: yes$' "$out"
expect_match "PID reuse: the write completes" '^RDMA WRITE after the exit and PID reuse: success$' "$out"
expect_match "PID reuse: the newcomer's memory is untouched" '^sentinel pid [0-9]+: its memory is untouched$' "$out"

# a thread that leads no process opens a device and makes queues: the
# daemon takes its descriptors all the same
out=$(inst $V "$reuse" thread ibemu0 2>&1)
expect_eq "a second thread: its descriptors are taken" 0 $?
expect_eq "a second thread: device, CQ and QP" "a second thread opened ibemu0 and made a CQ and a QP" "$(head -1 <<<"$out")"
# the provider's rings, in the one area per context the daemon mapped
expect_eq "rings in the context's area" "rings: 1 area mapping, 0 memfds of their own" "$(sed -n 2p <<<"$out")"

# queue sizes as rxe rounds them, ibv_resize_cq with completions pending,
# every ibv_create_qp_ex path and SRQs of zeroed attributes
# (tests/tools/verbs_queues.cpp; the VM suite compares its lines with rxe's)
inst $V "$queues" ibemu0 >"$work/queues.out" 2>&1
expect_eq "create_qp_ex, resize_cq, query_qp and SRQs as rxe answers them" 0 $?
out=$(cat "$work/queues.out")
expect_match "resize grows and shrinks with 12 pending, all polled in order" \
	'^polled after the resizes: 1,2,3,4,5,6,7,8,9,10,11,12 \(all flushed\)$' "$out"
expect_match "resize below the pending: EINVAL" '^resize_cq 11 with 12 pending: EINVAL, cqe 15$' "$out"
expect_match "a create flag: EOPNOTSUPP" '^create_qp_ex UD block_self_mcast_lb: EOPNOTSUPP$' "$out"
expect_match "an SRQ of zeroed attributes: EINVAL" '^create_srq max_wr 0 max_sge 0 limit 0: EINVAL$' "$out"
# ipathverbs over the write() ABI (no ring, no create_qp_ex): the same
# resizes and completions
out=$(inst $V env -u RDMAV_DRIVERS "$queues" ibemu0 2>/dev/null | grep -E '^(create_cq|resize_cq|polled)')
expect_eq "resize_cq through ipathverbs" "$(grep -E '^(create_cq|resize_cq|polled)' "$work/queues.out")" "$out"

# memory windows: binds of both types, RDMA through their rkeys, LOCAL_INV,
# SEND_WITH_INV, and the errors rxe gives (tests/tools/verbs_mw.cpp)
inst $V "$mw" ibemu0 ibemu1 >"$work/mw.out" 2>&1
expect_eq "memory windows as rxe answers them" 0 $?
out=$(cat "$work/mw.out")
expect_match "a type 1 window carries an RDMA WRITE" \
	'^RDMA WRITE through a type 1 window: success, bytes arrived$' "$out"
expect_match "a type 2 window bound through ibv_wr_bind_mw carries one" \
	'^RDMA WRITE through a window of ibv_wr_bind_mw: success, bytes arrived$' "$out"
expect_match "an MR without MW_BIND: MW_BIND_ERR" \
	'^bind_mw type 1 MR without MW_BIND: memory management operation error, opcode -$' "$out"
expect_match "after LOCAL_INV: REM_ACCESS_ERR" '^RDMA WRITE after LOCAL_INV: remote access error$' "$out"
expect_match "after dealloc_mw: REM_ACCESS_ERR" '^RDMA WRITE after dealloc_mw: remote access error$' "$out"
expect_match "SEND_WITH_INV: the receive has WITH_INV and the rkey" \
	'^SEND_WITH_INV: send success, receive success, WITH_INV of the window.s rkey$' "$out"
expect_match "after SEND_WITH_INV: REM_ACCESS_ERR" '^RDMA WRITE after SEND_WITH_INV: remote access error$' "$out"

# XRC: domains shared by file, XRC SRQs, an initiator on ibemu0 sending to
# a target on ibemu1, each SEND landing in the SRQ it names
# (tests/tools/verbs_xrc.cpp)
out=$(inst $V "$xrc" ibemu0 ibemu1 2>&1)
expect_eq "XRC as the kernel and IBA answer" 0 $?
expect_match "ibv_query_device: IBV_DEVICE_XRC" '^query_device: IBV_DEVICE_XRC set$' "$out"
expect_match "two opens of one file share a domain" \
	'^open_xrcd of the same file through another descriptor and context: ok$' "$out"
expect_match "open_xrcd O_EXCL of a file with a domain: EINVAL" \
	'^open_xrcd O_CREAT\|O_EXCL of a file that has one: EINVAL$' "$out"
expect_match "open_xrcd of an O_PATH descriptor: EBADF" '^open_xrcd of an O_PATH descriptor: Bad file descriptor$' "$out"
expect_match "a domain keeps its file: a new file does not inherit it" \
	"^open_xrcd without O_CREAT of a new file after another's domain: Resource temporarily unavailable$" "$out"
expect_match "close_xrcd with an XRC SRQ: EBUSY" '^close_xrcd with an XRC SRQ: Device or resource busy$' "$out"
expect_match "an XRC SEND lands in the SRQ it names" \
	"^XRC SEND to the second SRQ: receive success, its SRQ's buffer, wr_id and CQ$" "$out"
expect_match "an XRC RDMA WRITE takes the named SRQ's PD" \
	"^XRC RDMA WRITE with an rkey of the SRQ's PD: success, bytes arrived$" "$out"
expect_match "an SRQ of another domain: REM_INV_REQ_ERR" \
	'^XRC SEND to an XRC SRQ of another domain: remote invalid request error$' "$out"

# --- another process's handles, pinning, the ioctl fallback
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
out=$(inst $V "$probe" handles /dev/infiniband/uverbs0)
expect_eq "handles of another process: ENOENT / EINVAL" 0 $?
echo "$out" >"$work/probe.handles"
expect_match "other process destroy: ENOENT" 'other process destroy_cq\(its cq\): No such file or directory$' "$out"
expect_match "other process req_notify: ENOENT" 'other process req_notify_cq\(its cq\): No such file or directory$' "$out"
inst $V "${nobody[@]}" "$probe" abi /dev/infiniband/uverbs0 >"$work/probe.abi"
expect_eq "ABI errnos (ENOSPC, EINVAL, EOPNOTSUPP)" 0 $?
inst $V "$probe" ioctl /dev/infiniband/uverbs0 >/dev/null
expect_eq "every ioctl is ENOTTY" 0 $?
# descriptors that are not what the driver data says, one of them a file
# of ibemud's own FUSE sysfs (an fstat or close of it on the daemon's
# thread would wait for that thread): refused, and the daemon answers on
out=$(inst $V "${nobody[@]}" "$probe" descriptors /dev/infiniband/uverbs0 /sys/class/infiniband/ibemu0/node_guid)
expect_eq "foreign descriptors in driver data: refused" 0 $?
echo "$out" >"$work/probe.descriptors"
expect_match "and the daemon still answers" '^the daemon still answers: ok$' "$out"
# pinning as an unprivileged user (root has CAP_IPC_LOCK); the probe holds
# its pages until it reads a line, while we look at `ibemu status`
mkfifo "$work/go"
exec 7<>"$work/go"
"$ibemu" exec --instance $V -- "${nobody[@]}" env PROBE_HOLD=1 "$probe" pin /dev/infiniband/uverbs0 \
	<"$work/go" >"$work/pin.out" 2>&1 &
pinner=$!
end=$((SECONDS + tool_timeout))
until grep -q '^holding 8 pages' "$work/pin.out" || ! kill -0 $pinner 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.1; done
st=$("$ibemu" status --instance $V)
echo go >&7
wait $pinner
expect_eq "pinning: RLIMIT_MEMLOCK, EFAULT, EPERM" 0 $?
exec 7>&-
expect_match "pinning: the 9th page is ENOMEM" '^reg 1 more \(9 > 8\): Cannot allocate memory$' "$(cat "$work/pin.out")"
expect_match "ibemu status shows the pinned pages" 'pid [0-9]+: 8 pages \(32 KiB\)' "$st"
# the file's release reaches the daemon after the process is gone
end=$((SECONDS + tool_timeout))
while st=$("$ibemu" status --instance $V) && grep -q 'pages (' <<<"$st" && [ $SECONDS -lt $end ]; do sleep 0.1; done
expect_eq "and forgets them when the process exits" "" "$(grep 'pages (' <<<"$st")"

# --- a link on the path goes down: the RC pingpong fails cleanly
sw_port=$(inst $V ibnetdiscover -p | awk "/^SW/ && /'ibemu-host2 HCA-1'/ {print \$2, \$3; exit}")
read -r sw_lid sw_pnum <<<"$sw_port"
verbs_open() { "$ibemu" status --instance $V --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][1]["verbs_open_files"])'; }
opened=$(verbs_open)
"$ibemu" exec --instance $V -- ibv_asyncwatch -d ibemu1 >"$work/asyncwatch" 2>&1 &
watcher=$!
end=$((SECONDS + tool_timeout)) # until it has ibemu1 open
while [ "$(verbs_open)" -le "$opened" ] && kill -0 $watcher 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
inst $V ibportstate "$sw_lid" "$sw_pnum" disable >/dev/null
rcs=$(pingpong ibv_rc_pingpong -n 5)
expect_eq "rc_pingpong with the link down: client fails, server waits forever" "1 hung" "$rcs"
expect_match "retry exceeded" 'Failed status transport retry counter exceeded \(12\)' "$(cat "$work/ibv_rc_pingpong.client")"
inst $V ibportstate "$sw_lid" "$sw_pnum" enable >/dev/null
wait_for $V 120 sh -c 'ibstat ibemu1 | grep -q "State: Active"'
end=$((SECONDS + tool_timeout)) # until the watcher has printed the event
until grep -q 'IBV_EVENT_PORT_ACTIVE' "$work/asyncwatch" || [ $SECONDS -ge $end ]; do sleep 0.1; done
kill $watcher 2>/dev/null
wait $watcher 2>/dev/null
out=$(cat "$work/asyncwatch")
expect_match "ibv_asyncwatch: the port went down" 'event_type IBV_EVENT_PORT_ERR \(10\), port 1' "$out"
expect_match "ibv_asyncwatch: and came back" 'event_type IBV_EVENT_PORT_ACTIVE \(9\), port 1' "$out"

# --- rdma_rxe on a dummy netdev (rdma_rxe needs crc32_generic loaded
# first, or `rdma link add` fails with ENOENT): the real kernel, loaded
# next to the instance. In the VM suite's guest only (the CUSE transport):
# a native run leaves the host's modules and links alone.
rxe=0
if [ $transport != cuse ]; then
	echo "note: the rdma_rxe comparison is skipped: it runs in the VM suite's guest (vm-cuse-verbs)"
else
	rm -f /etc/modprobe.d/ibemu-no-ib-core.conf
	if modprobe crc32_generic 2>/dev/null && modprobe rdma_rxe 2>/dev/null && modprobe ib_uverbs &&
		modprobe dummy && ip link add rxed0 type dummy && ip link set rxed0 up &&
		rdma link add rxe0 type rxe netdev rxed0; then
		rxe=1
	else
		bad "rdma_rxe reference device: could not be set up"
	fi
fi

# with ib_core loaded, libibverbs asks netlink, which knows only rxe0;
# `ibemu exec` keeps its programs off NETLINK_RDMA, so they read the
# instance's sysfs and see ibemu's devices, and only them
if [ $rxe = 1 ]; then
	expect_match "the host's own list has rxe0" 'rxe0' "$(ibv_devices 2>&1)"
	out=$(inst $V ibv_devices)
	expect_match "exec with rxe loaded: ibemu0 listed" '^\s+ibemu0\s' "$out"
	expect_match "exec with rxe loaded: ibemu1 listed" '^\s+ibemu1\s' "$out"
	expect_eq "exec with rxe loaded: rxe0 not listed" "" "$(grep rxe0 <<<"$out")"
	rcs=$(pingpong ibv_rc_pingpong -n 20 -e)
	expect_eq "rc_pingpong -e with rxe loaded" "0 0" "$rcs"
	rcs=$(perftest ib_write_bw -n 20 -s 65536)
	expect_eq "ib_write_bw with rxe loaded" "0 0" "$rcs"
fi

down_inst $V
expect_eq "down removes uverbs0" "" "$(ls /dev/infiniband/ibemu-$V 2>/dev/null)"

# --- the same probes against the real kernel, outside any instance
if [ $rxe = 1 ]; then
	rdev=/dev/infiniband/$(basename "$(ls -d /sys/class/infiniband/rxe0/device/infiniband_verbs/uverbs* 2>/dev/null ||
		grep -l rxe0 /sys/class/infiniband_verbs/uverbs*/ibdev | xargs dirname)")
	"$probe" handles "$rdev" >"$work/rxe.handles"
	"${nobody[@]}" "$probe" abi "$rdev" >"$work/rxe.abi"
	"${nobody[@]}" "$probe" pin "$rdev" >"$work/rxe.pin" 2>&1
	"$queues" rxe0 >"$work/rxe.queues" 2>"$work/rxe.queues.err" # its lines, not its checks
	expect_eq "rxe answers another process's handles as ibemu does" "$(cat "$work/probe.handles")" "$(cat "$work/rxe.handles")"
	expect_eq "rxe's header errnos are ibemu's" "$(cat "$work/probe.abi")" "$(cat "$work/rxe.abi")"
	expect_eq "rxe's pinning accounting of MRs is ibemu's (rxe charges no CQ)" "$(cat "$work/pin.out")" "$(cat "$work/rxe.pin")"
	expect_eq "rxe's queue sizes, resize and create_qp_ex answers are ibemu's" \
		"$(cat "$work/queues.out")" "$(cat "$work/rxe.queues")"
	# memory windows: rxe0 is both sides (it has no LIDs: a GRH to itself)
	"$mw" rxe0 rxe0 >"$work/rxe.mw" 2>&1
	expect_eq "rxe's memory window statuses and errnos are ibemu's" "$(cat "$work/mw.out")" "$(cat "$work/rxe.mw")"
	rdma link delete rxe0
fi
e2e_done
