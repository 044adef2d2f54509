#!/usr/bin/env bash
# docs/tutorial.md, chapter by chapter, with the commands it prints and
# the outputs it shows, on a machine that ran OpenSM before: the script
# runs in a mount namespace of its own whose /var/cache/opensm holds
# another fabric's LIDs for these very port GUIDs, so a documented
# OpenSM command that took the machine's cache would get other LIDs
# (the tutorial's "independent of what ran on this machine before").
# Only the instance's name is this run's own (IBEMU_INSTANCE), so that
# parallel jobs never meet; every command is the tutorial's.
# usage: tutorial.sh IBEMU_BINARY
set -u
ibemu=$(realpath "$1")
if [ -z "${IBEMU_TUTORIAL_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "tutorial: needs root; skipped"; exit 77; }
	# a network namespace too: the pingpong's fixed TCP port (18515) is
	# this run's own, whatever else runs on the machine
	exec env IBEMU_TUTORIAL_NS=1 unshare --mount --net --propagation private \
		sh -c 'mount -t tmpfs -o mode=0755 tmpfs /var/cache && mkdir /var/cache/opensm &&
			ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
e2e_setup tutorial

# the stale cache: every port of the default fabric at a LID it does not
# get in the tutorial (guid2lid lines: port GUID, first LID, last LID)
for g in 0x0002c90300000101:0x0021 0x0002c90200000001:0x0022 0x0002c90300000201:0x0023 \
	0x0002c90300000301:0x0024 0x0002c90300000302:0x0025 0x0002c90200000002:0x0026 \
	0x0002c90300000401:0x0027 0x0002c90300000402:0x0028; do
	echo "${g%%:*} ${g##*:} ${g##*:}"
done >/var/cache/opensm/guid2lid
export IBEMU_INSTANCE=e2e-tut-$$
T=$IBEMU_INSTANCE
x() { timeout "$tool_timeout" "$ibemu" exec -- "$@" 2>&1; } # "ibemu exec -- CMD"
cd "$work" || exit 1

# --- the instance, and chapter 1: before the SM
out=$("$ibemu" up 2>&1)
expect_eq "ibemu up" 0 $?
expect_match "up names the fabric" "^ibemu instance \"$T\" is up \(pid [0-9]+, .* transport.*, fabric \(built-in default\): 2 switches, 4 CAs, 8 links\)$" "$out"
expect_match "ibemu0 is host1" '^  ibemu0  node GUID 0x0002c90300000100  "ibemu-host1 HCA-1"$' "$out"
expect_match "ibemu1 is host2" '^  ibemu1  node GUID 0x0002c90300000200  "ibemu-host2 HCA-1"$' "$out"
out=$(x ibstat ibemu0)
for l in 'State: Initializing' 'Physical state: LinkUp' 'Base lid: 0' 'SM lid: 0'; do
	expect_match "ch1: ibstat ibemu0: $l" "^[[:space:]]+$l$" "$out"
done
expect_eq "ch1: smpquery -D nodedesc 0,1" "Node Description:.......................ibemu-sw1" "$(x smpquery -D nodedesc 0,1)"
expect_eq "ch1: smpquery -D nodedesc 0,1,7" "Node Description:.......................ibemu-sw2" "$(x smpquery -D nodedesc 0,1,7)"

# --- chapter 2: the SM
"$ibemu" down >/dev/null 2>&1
out=$("$ibemu" up --sm -- -g 0x0002c90300000101 -s 0 2>&1)
expect_eq "ch2: ibemu up --sm -- -g ... -s 0" 0 $?
out=$(x ibstat ibemu0 1)
for l in 'State: Active' 'Base lid: 1' 'SM lid: 1'; do
	expect_match "ch2: ibstat ibemu0 1: $l" "^[[:space:]]*$l$" "$out"
done
expect_match "ch2: sminfo" '^sminfo: sm lid 1 sm guid 0x2c90300000101, activity count [0-9]+ priority 0 state 3 SMINFO_MASTER$' "$(x sminfo)"
out=$(x ibswitches)
expect_match "ch2: ibswitches: sw2 at LID 6" '^Switch	: 0x0002c90200000002 ports 8 "ibemu-sw2" base port 0 lid 6 lmc 0$' "$out"
expect_match "ch2: ibswitches: sw1 at LID 2" '^Switch	: 0x0002c90200000001 ports 8 "ibemu-sw1" base port 0 lid 2 lmc 0$' "$out"
out=$(x ibroute 2)
expect_match "ch2: ibroute 2: LID 1 by port 1" "^0x0001 001 : \(Channel Adapter portguid 0x0002c90300000101: 'ibemu-host1 HCA-1'\)$" "$out"
expect_match "ch2: ibroute 2: LID 3 by port 7" "^0x0003 007 : \(Channel Adapter portguid 0x0002c90300000201: 'ibemu-host2 HCA-1'\)$" "$out"
expect_match "ch2: ibroute 2: LID 6 by port 8" "^0x0006 008 : \(Switch portguid 0x0002c90200000002: 'ibemu-sw2'\)$" "$out"
expect_eq "ch2: ibtracert 1 3" 'From ca {0x0002c90300000100} portnum 1 lid 1-1 "ibemu-host1 HCA-1"
[1] -> switch port {0x0002c90200000001}[1] lid 2-2 "ibemu-sw1"
[7] -> switch port {0x0002c90200000002}[7] lid 6-6 "ibemu-sw2"
[1] -> ca port {0x0002c90300000201}[1] lid 3-3 "ibemu-host2 HCA-1"
To ca {0x0002c90300000200} portnum 1 lid 3-3 "ibemu-host2 HCA-1"' "$(x ibtracert 1 3)"
x ibnetdiscover >found.topo
expect_eq "ch2: ibemu topo diff - found.topo" "same: 6 nodes, 8 links" "$("$ibemu" topo diff - found.topo 2>&1)"
out=$(x perfquery 3 1)
expect_match "ch2: perfquery 3 1 counts packets" '^PortXmitPkts:\.+[1-9][0-9]*$' "$out"
out=$(x ibqueryerrors)
expect_eq "ch2: ibqueryerrors exits 0" 0 $?
expect_match "ch2: a clean fabric" '6 nodes checked, 0 bad nodes found' "$out"

# --- chapter 3: the first sweep, packet by packet
"$ibemu" down >/dev/null 2>&1
out=$("$ibemu" up --web 2>&1)
expect_match "ch3: up --web gives the page" '^  live view: http://127\.0\.0\.1:[0-9]+/$' "$out"
"$ibemu" topo show --instance "$T" --format svg -o before.svg
expect_match "ch3: before the sweep the cables are orange" "stroke=\"orange\"" "$(cat before.svg)"
"$ibemu" capture >sweep.txt 2>capture1.err &
c1=$!
"$ibemu" capture -w sweep.pcap 2>capture2.err &
c2=$!
for f in capture1.err capture2.err; do # both listen before OpenSM starts
	for _ in $(seq 100); do grep -q capturing "$f" && break; sleep 0.1; done
done
timeout "$tool_timeout" "$ibemu" exec -- opensm -g 0x0002c90300000101 -s 0 >opensm.out 2>&1 &
osm=$!
# the sweep is over when host2's port is Active and the captures stop growing
for _ in $(seq 300); do x ibstat ibemu1 1 | grep -q 'State: Active' && break; sleep 0.1; done
expect_match "ch3: OpenSM's sweep takes host2 to Active" 'State: Active' "$(x ibstat ibemu1 1)"
n=-1
for _ in $(seq 60); do
	[ "$n" = "$(wc -l <sweep.txt)" ] && break
	n=$(wc -l <sweep.txt)
	sleep 0.5
done
kill -INT $c1 $c2
wait $c1 $c2
expect_eq "ch3: the whole sweep is 376 packets" 376 "$(wc -l <sweep.txt)"
expect_match "ch3: it starts with sw1's NodeInfo" '^ +0\.000000 ibemu-host1 HCA-1:1 → ibemu-sw1:1  SubnGet\(NodeInfo\) DR 0,1 → "ibemu-sw1"$' "$(head -1 sweep.txt)"
expect_match "ch3: sw1 port 4 has no cable" 'SubnGetResp\(PortInfo\) DR 0,1 ← "ibemu-sw1" port 4: LID 0, state Down, Polling$' "$(cat sweep.txt)"
expect_match "ch3: host3 seen leaving and arriving" 'ibemu-host3 HCA-1:1 → ibemu-sw1:2  SubnGetResp\(NodeInfo\) DR 0,1,2 ← "ibemu-host3 HCA-1": CA with 2 ports, GUID 0x0002c90300000300, port 1$' "$(cat sweep.txt)"
expect_match "ch3: host2 gets LID 3" 'SubnSet\(PortInfo\) DR 0,1,7,1 → "ibemu-host2 HCA-1" port 1: LID 0 → 3, state Init → Down$' "$(cat sweep.txt)"
expect_match "ch3: sw1's forwarding table" 'SubnSet\(LinearForwardingTable\) DR 0,1 → "ibemu-sw1" block 0 \(LIDs 0-63\)$' "$(cat sweep.txt)"
if command -v tshark >/dev/null; then
	expect_eq "ch3: tshark reads the same 376" 376 "$(tshark -r sweep.pcap 2>/dev/null | wc -l)"
	out=$(tshark -r sweep.pcap -V -Y 'frame.number == 247' 2>/dev/null)
	expect_match "ch3: frame 247 is host2's PortInfo Set" 'SubnSet\(PortInfo\)' "$out"
	expect_match "ch3: with LID 3" 'LID: 0x0003' "$out"
	expect_match "ch3: and PortState Down" 'PortState: 0x1, Down' "$out"
fi
"$ibemu" topo show --instance "$T" --format svg -o after.svg
expect_eq "ch3: after the sweep the picture has no orange cable" 0 "$(grep -c 'stroke="orange"' after.svg)"

# --- chapter 4: a fault (OpenSM of chapter 3 still running)
x ibportstate 2 7 disable >/dev/null
for _ in $(seq 100); do x ibtracert 1 3 | grep -q '^\[8\] -> switch port {0x0002c90200000002}\[8\]' && break; sleep 0.2; done
out=$(x ibtracert 1 3)
expect_match "ch4: routed around sw1 port 7" '^\[8\] -> switch port \{0x0002c90200000002\}\[8\] lid 6-6 "ibemu-sw2"$' "$out"
x ibportstate 2 7 enable >/dev/null
kill $osm
wait $osm

# --- chapter 5: faults from outside
"$ibemu" down >/dev/null 2>&1
out=$("$ibemu" up --sm --web -- -s 0 2>&1)
expect_eq "ch5: up --sm --web -- -s 0" 0 $?
expect_eq "ch5: LID 3 leaves sw1 by port 7" "0x0003 007 : (Channel Adapter portguid 0x0002c90300000201: 'ibemu-host2 HCA-1')" "$(x ibroute 2 | grep ^0x0003)"
expect_eq "ch5: link down" 'pulled the cable "ibemu-sw1"[7] -- "ibemu-sw2"[7]' "$("$ibemu" link down ibemu-sw1 7 2>&1)"
for _ in $(seq 100); do x ibroute 2 | grep -q '^0x0003 008' && break; sleep 0.2; done
expect_eq "ch5: and by port 8 once OpenSM swept" "0x0003 008 : (Channel Adapter portguid 0x0002c90300000201: 'ibemu-host2 HCA-1')" "$(x ibroute 2 | grep ^0x0003)"
expect_eq "ch5: perfquery counts the lost link" "LinkDownedCounter:...............1" "$(x perfquery -G 0x0002c90200000002 7 | grep LinkDowned)"
expect_eq "ch5: link up" 'plugged the cable "ibemu-sw1"[7] -- "ibemu-sw2"[7] back in' "$("$ibemu" link up ibemu-sw1 7 2>&1)"
expect_eq "ch5: link flap" '"ibemu-sw1"[8] went down and up 3 times' "$("$ibemu" link flap ibemu-sw1 8 --count 3 --interval 200 2>&1)"
out=$("$ibemu" status 2>&1)
expect_match "ch5: status shows the flap's edges, in words" \
	'^    [0-9T:.-]+Z link\.down \(control\) flap 3, guid 0x0002c90200000001, node ibemu-sw1, peer "ibemu-sw2"\[8\], pid [0-9]+, port 8$' "$out"
# each edge of the flap sent OpenSM a trap and it swept again; a person
# types the next command after those sweeps, so the test waits for them
# too (a switch silenced mid-sweep is left half configured, its Sets
# timed out, and traffic through it stops): OpenSM's log has said SUBNET
# UP and not grown for two seconds (a sweep's MADs are milliseconds apart)
settle_sm() {
	local log=$IBEMU_RUN_DIR/$T/opensm/opensm.log n=-1 quiet=0
	for _ in $(seq 60); do
		if [ "$n" = "$(stat -c %s "$log")" ]; then quiet=$((quiet + 1)); else quiet=0; fi
		[ $quiet -ge 4 ] && tail -c 2000 "$log" | grep -q 'SUBNET UP' && break
		n=$(stat -c %s "$log")
		sleep 0.5
	done
}
settle_sm
expect_eq "ch5: node silence" '"ibemu-sw2": its SMA and PMA are silent' "$("$ibemu" node silence ibemu-sw2 2>&1)"
x smpquery -D nodedesc 0,1,7 >/dev/null
expect_eq "ch5: SMPs to it time out" 255 $?
timeout "$tool_timeout" "$ibemu" exec -- ibping -S -C ibemu1 >/dev/null 2>&1 &
ping=$!
for _ in $(seq 50); do x ibping -C ibemu0 -c 1 -L 3 >/dev/null && break; sleep 0.2; done
expect_match "ch5: traffic through it flows" '^3 packets transmitted, 3 received, 0% packet loss' "$(x ibping -C ibemu0 -c 3 -L 3)"
kill $ping
wait $ping 2>/dev/null
expect_eq "ch5: node restore" '"ibemu-sw2": its SMA and PMA answer again' "$("$ibemu" node restore ibemu-sw2 2>&1)"
"$ibemu" errors ibemu-sw1 7 --drop 0.1 --seed 1 >/dev/null
"$ibemu" errors ibemu-sw1 8 --drop 0.1 --seed 1 >/dev/null
x ibnetdiscover >/dev/null
expect_eq "ch5: ibnetdiscover through lossy links" 0 $?
expect_eq "ch5: errors --drop 0 mends them" '"ibemu-sw1": drop 0.0, corrupt 0.0, seed 0' "$("$ibemu" errors ibemu-sw1 --drop 0 2>&1)"
out=$(x ibqueryerrors)
expect_match "ch5: the receiving ports count the losses" '^   GUID 0x2c90200000002 port 7: \[SymbolErrorCounter == [1-9][0-9]*\].*\[PortRcvErrors == [1-9]' "$out"

# --- chapter 7: verbs
expect_match "ch7: ibv_devinfo -d ibemu0" '^hca_id:	ibemu0$' "$(x ibv_devinfo -d ibemu0)"
timeout "$tool_timeout" "$ibemu" exec -- ibv_rc_pingpong -d ibemu1 >pp.server 2>&1 &
srv=$!
for _ in $(seq 100); do x ibv_rc_pingpong -d ibemu0 127.0.0.1 >pp.client && break; sleep 0.2; done
wait $srv
expect_eq "ch7: the RC pingpong's server" 0 $?
expect_match "ch7: the RC pingpong" '^1000 iters in ' "$(cat pp.client)"

# --- chapter 8: done
expect_match "ch8: status names the SM" 'OpenSM: running' "$("$ibemu" status 2>&1)"
out=$("$ibemu" down --kill-clients --keep-logs 2>&1)
expect_eq "ch8: down --kill-clients" 0 $?
sanitizer_check "$T"
rm -rf "${IBEMU_RUN_DIR:?}/$T"

# and the machine's cache was never read or written
expect_eq "the machine's OpenSM cache is as it was" 8 "$(wc -l </var/cache/opensm/guid2lid)"
expect_eq "nothing else written there" guid2lid "$(ls /var/cache/opensm)"
e2e_done
