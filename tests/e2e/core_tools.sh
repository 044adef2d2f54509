#!/usr/bin/env bash
# The core stock tools against ibemu on the CUSE transport (real character
# devices), for the VM suite: ibstat, smpquery, opensm, ibnetdiscover,
# saquery, perfquery and ibping; then a --global instance, whose devices
# plain programs (no ibemu exec) use, rping with ibemu's provider among
# them. Kept short: the VM is slow.
# usage: core_tools.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup cuse-core-tools
[ -w /dev/cuse ] || { echo "cuse-core-tools: no /dev/cuse; skipped"; exit 77; }

A=vm-$$
out=$("$ibemu" up --instance $A 2>&1)
expect_eq "up" 0 $?
expect_match "up chose CUSE" 'cuse transport' "$out"
out=$(inst $A stat -L -c '%F %a' /dev/infiniband/umad0 /dev/infiniband/issm0)
expect_eq "real character devices, mode 0600" "$(printf 'character special file 600\ncharacter special file 600')" "$out"
dev=$(inst $A stat -L -c '%t %T' /dev/infiniband/umad0 | { read -r a b; echo "$((16#$a)):$((16#$b))"; })
expect_eq "sysfs dev = the node's numbers" "$dev" "$(inst $A cat /sys/class/infiniband_mad/umad0/dev)"

out=$(inst $A ibstat ibemu0 1)
expect_match "ibstat" 'Port GUID: 0x0002c90300000101' "$out"
out=$(inst $A smpquery -D nodedesc 0,1,7)
expect_match "smpquery DR" 'Node Description:\.+ibemu-sw2' "$out"

start_opensm $A 0x0002c90300000101
wait_for $A 120 sh -c 'sminfo | grep -q SMINFO_MASTER && ibstat ibemu0 | grep -q "State: Active"'
expect_eq "OpenSM master" 0 $?

inst $A ibnetdiscover >"$work/a.topo"
expect_eq "ibnetdiscover = topology" "same: 6 nodes, 8 links" "$("$ibemu" topo diff - "$work/a.topo")"
out=$(inst $A saquery)
expect_eq "saquery (RMPP)" 8 "$(grep -c 'NodeRecord dump' <<<"$out")"
out=$(inst $A perfquery -x)
expect_match "perfquery -x" '^PortXmitPkts:\.+[1-9]' "$out"
"$ibemu" exec --instance $A -- ibping -S -C ibemu1 >/dev/null 2>&1 &
server=$!
wait_for $A 120 ibping -C ibemu0 -c 1 3 # until the server has its agent
out=$(inst $A ibping -C ibemu0 -c 2 3)
expect_match "ibping" '2 packets transmitted, 2 received, 0% packet loss' "$out"
# the daemon knows who holds its devices, on this transport too
out=$("$ibemu" status --instance $A)
expect_match "status names the ibping server" "pid [0-9]+ \(ibping\): 1 file" "$out"
stop_opensm $A
out=$("$ibemu" down --instance $A --kill-clients --keep-logs 2>&1)
expect_eq "down --kill-clients" 0 $?
expect_match "ends it first" "ending 1 process holding the devices" "$out"
wait $server 2>/dev/null
expect_eq "the server is gone" 1 "$(kill -0 $server 2>/dev/null; echo $?)"
sanitizer_check $A
rm -rf "${IBEMU_RUN_DIR:?}/$A"
expect_eq "down removes the nodes" "" "$(ls /dev/infiniband/ibemu-$A 2>/dev/null)"

# --- --global: plain tools see the devices, no ibemu exec
G=global-$$
# a file a killed global daemon left (the guest's /etc is a throwaway
# overlay): the next one replaces it
drivers=/etc/libibverbs.d/ibemu.driver
[ -e $drivers ] || printf '# written by ibemud for the --global instance "gone"\ndriver /nowhere/libibemu\n' >$drivers
out=$("$ibemu" up --instance $G --global --sm 2>&1)
expect_eq "up --global" 0 $?
out=$(ibstat -l 2>&1)
expect_eq "plain ibstat -l sees the HCAs" "$(printf 'ibemu0\nibemu1')" "$out"
expect_eq "standard device names" "character special file" "$(stat -c %F /dev/infiniband/umad0)"
out=$(smpquery -D nodeinfo 0 2>&1)
expect_match "plain smpquery" '^Guid:\.+0x0002c90300000100' "$out"

# plain verbs programs get ibemu's provider: the daemon lists it in the
# host's /etc/libibverbs.d, and the devices carry no PCI id for ipathverbs
# to claim them by. rping needs completion channels, which ipathverbs
# lacks ("ibv_create_comp_channel failed"). The kernel's RDMA netlink does
# not answer here, or libibverbs would list only the kernel's devices:
# ib_core is not loaded, and cannot load on demand (the guest kernel's
# module helper runs in the initramfs, which has no modprobe), so this
# guest is a host without RDMA in its kernel until the test loads it.
expect_eq "up --global lists ibemu's provider" "driver $(dirname "$ibemu")/provider/libibemu" \
	"$(grep '^driver' $drivers)"
out=$("$ibemu" status --instance $G)
expect_match "status: every program gets ibemu's provider" \
	'verbs and rdma_cm: every program on this host, .*, ibemu provider$' "$out"
expect_eq "status: nothing in the way" "" "$(grep '^    but ' <<<"$out")"
expect_eq "no modalias for ipathverbs" "" "$(ls /sys/class/infiniband/ibemu0/device/)"
timeout "$tool_timeout" rping -s -a 10.200.1.1 -C 10 -v >"$work/rping.server" 2>&1 &
server=$!
for _ in 1 2 3 4 5; do # a client before the server listens is rejected
	sleep 2
	timeout "$tool_timeout" rping -c -a 10.200.1.1 -I 10.200.0.1 -C 10 -v >"$work/rping.client" 2>&1
	rc=$?
	if [ $rc -eq 0 ] || ! kill -0 $server 2>/dev/null ||
		! grep -qE 'REJECTED|Unexpected CM event' "$work/rping.client"; then
		break
	fi
done
[ $rc -ne 0 ] && kill $server 2>/dev/null
wait $server
expect_eq "plain rping: client and server exit 0" "0 0" "$rc $?"
expect_eq "plain rping: 10 pings" 10 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
[ $rc -ne 0 ] && sed 's/^/    /' "$work/rping.client" | head -5

# with ib_core loaded, netlink answers first: status says so
if modprobe ib_core; then
	out=$("$ibemu" status --instance $G)
	expect_match "status with ib_core: netlink named" "^    but the kernel's RDMA netlink answers" "$out"
	expect_eq "with ib_core: plain programs list no ibemu device" "" "$(ibv_devices 2>&1 | grep ibemu)"
	modprobe -r ib_core
else
	bad "modprobe ib_core"
fi

out=$("$ibemu" up --instance g2-$$ --global 2>&1)
expect_match "one global instance at a time" 'already has InfiniBand devices' "$out"
expect_eq "the refused one leaves the provider listed" 1 "$(grep -c '^driver' $drivers)"
down_inst $G
expect_eq "down --global removes sysfs" "" "$(ls /sys/class/infiniband 2>/dev/null)"
expect_eq "down --global removes the nodes" "" "$(ls /dev/infiniband/umad0 2>/dev/null)"
expect_eq "down --global removes the provider's file" "" "$(ls $drivers 2>/dev/null)"

# without ibemu's provider (ibemu and ibemud copied where none is next to
# them, and none installed), plain programs keep the stock one, and up says so
mkdir "$work/bare" && cp "$ibemu" "$(dirname "$ibemu")/ibemud" "$work/bare/"
out=$("$work/bare/ibemu" up --instance $G --global 2>&1)
expect_eq "up --global without the provider" 0 $?
expect_match "up --global without the provider: stock" 'every program on this host, .*, stock provider$' "$out"
expect_match "up --global without the provider says why" \
	"^    but ibemu's libibverbs provider .* is not installed; programs get the stock provider" "$out"
expect_eq "without the provider: nothing listed" "" "$(ls $drivers 2>/dev/null)"
expect_eq "without the provider: the modalias for ipathverbs" modalias "$(ls /sys/class/infiniband/ibemu0/device/)"
down_inst $G
e2e_done
