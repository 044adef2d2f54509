#!/usr/bin/env bash
# Packet capture of a running instance, read by stock tools: OpenSM's first
# sweep captured from the start as a pcap (ERF records) that tshark decodes
# and as the text trace; `-w -` piped live into tshark; filters, counts and
# ports; a capture changes nothing the tools see; bad requests are refused;
# the picture of the running fabric follows its port states.
# usage: observe.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup observe
if ! command -v tshark >/dev/null; then
	echo "observe: needs tshark (tools/install-deps.sh test); skipped"
	exit 77
fi

I=e2e-observe-$$
H1=0x0002c90300000101
# tshark's Info column only, one line per packet
tshark_info() { command tshark -r "$1" -T fields -e _ws.col.Info 2>/dev/null; }
# capture_ready ERRFILE: wait until the capture writing its stderr to
# ERRFILE is registered with the daemon (it says "capturing at"), so the
# traffic that follows is seen whatever the load on the host
capture_ready() {
	local end=$((SECONDS + 60))
	until grep -q 'capturing at' "$1" 2>/dev/null; do
		[ $SECONDS -ge $end ] && { bad "a capture started (${1##*/}: $(cat "$1" 2>/dev/null))"; return 1; }
		sleep 0.1
	done
}
# every capture runs under timeout(1), which passes ^C on: one that counts
# packets ends by itself, and one that waits longer than this has missed
# packets (or hung), and fails instead of hanging the suite
cap_timeout=180

out=$("$ibemu" up --instance $I 2>&1)
expect_eq "up without an SM" 0 $?

# --- a capture with no instance behind it, and bad requests
out=$("$ibemu" capture --instance e2e-observe-none-$$ -c 1 2>&1)
expect_eq "no such instance: exit 3" 3 $?
expect_match "says so" 'instance "e2e-observe-none-[0-9]+" is not running' "$out"
out=$("$ibemu" capture --instance $I --port nosuch:1 -c 1 2>&1)
expect_eq "an unknown node: exit 1" 1 $?
expect_match "names it" 'capture: no node "nosuch" in the fabric' "$out"
out=$("$ibemu" capture --instance $I --port ibemu-sw1:9 -c 1 2>&1)
expect_match "a port the node lacks" 'ibemu-sw1:9": ibemu-sw1 has ports 1-8' "$out"
out=$("$ibemu" capture --instance $I --filter smtp -c 1 2>&1)
expect_match "an unknown kind" 'unknown kind "smtp"' "$out"
out=$("$ibemu" capture --instance $I --text -w - -c 1 2>&1)
expect_eq "text and pcap both on stdout: exit 2" 2 $?
# the libraries ibemu opens only when a command needs them: missing (a
# bind mount over the file, in a mount namespace of its own), a clear error
without() { # LIBRARY CMD...: CMD with LIBRARY's file made empty
	local file
	file=$(realpath "$(ldconfig -p | awk -v l="$1" 'index($1, l ".so.") == 1 {print $NF; exit}')")
	shift
	unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$file" "$@"
}
out=$(without libpcap "$ibemu" capture --instance $I -w /dev/null -c 1 2>&1)
expect_eq "no libpcap: capture -w exits 1" 1 $?
expect_match "... and says what it needs" '^ibemu capture: libpcap is needed to write a capture file: .*libpcap' "$out"
out=$(without libgvc "$ibemu" topo show --instance $I --format svg 2>&1)
expect_eq "no Graphviz: topo show --format svg exits 1" 1 $?
expect_match "... and says what it needs" "^ibemu topo show: Graphviz's library is needed to draw: .*libgvc" "$out"

# --- OpenSM's first sweep, from the first packet
timeout -k 10 $cap_timeout "$ibemu" capture --instance $I -w "$work/sweep.pcap" >"$work/pcap.out" 2>&1 &
pcap_pid=$!
timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --text >"$work/sweep.txt" 2>"$work/text.err" &
text_pid=$!
timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --all-ports --filter smp -w "$work/all.pcap" >/dev/null 2>"$work/all.err" &
all_pid=$!
capture_ready "$work/pcap.out"
capture_ready "$work/text.err"
capture_ready "$work/all.err"
start_opensm $I $H1
wait_for $I 120 sh -c 'sminfo | grep -q SMINFO_MASTER' || bad "OpenSM became master"
wait_for $I 120 sh -c 'ibstat | grep -q "State: Active"' || bad "ports Active"
sleep 2
kill -INT $pcap_pid $text_pid $all_pid
wait $pcap_pid
expect_eq "^C ends a capture with status 0" 0 $?
wait $text_pid $all_pid
out=$(cat "$work/pcap.out")
expect_match "it counts what it captured" 'capture: [0-9]+ packets captured, 0 lost' "$out"

# tshark decodes the capture: the sweep's SMPs by name
out=$(tshark_info "$work/sweep.pcap")
expect_match "tshark: the DR NodeInfo discovery" '^UD Send Only QP=0x000000 SubnGet\(NodeInfo\)$' "$out"
expect_match "tshark: the answers" '^UD Send Only QP=0x000000 SubnGetResp\(PortInfo\)$' "$out"
expect_match "tshark: LIDs and states set" '^UD Send Only QP=0x000000 SubnSet\(PortInfo\)$' "$out"
expect_match "tshark: forwarding tables" '^UD Send Only QP=0x000000 SubnSet\(LinearForwardingTable\)$' "$out"
expect_match "tshark: the P_Key tables read" 'SubnGetResp\(P_KeyTable\)$' "$out"
n=$(grep -c . <<<"$out")
bad_n=$(grep -c -i 'malformed' <<<"$out")
expect_eq "no packet malformed (of $n)" 0 "$bad_n"
out=$(command tshark -r "$work/sweep.pcap" -T fields -e erf.types.type -e erf.flags.cap -e infiniband.lrh.pktlen | sort -u)
expect_match "ERF type 21, sent (interface 0)" $'^21\t0\t72$' "$out"
expect_match "and received (interface 1)" $'^21\t1\t72$' "$out"
# the default captures at CA ports; --all-ports at switch ports too
out=$(tshark_info "$work/all.pcap" | wc -l)
[ "$out" -gt "$n" ] && ok || bad "--all-ports sees more packets ($out) than the CA ports ($n)"

# the text trace: a student follows the sweep
out=$(cat "$work/sweep.txt")
expect_match "text: discovery by directed route" 'ibemu-host1 HCA-1:1 → ibemu-sw1:1  SubnGet\(NodeInfo\) DR 0,1 → "ibemu-sw1"$' "$out"
expect_match "text: the answer, decoded" 'SubnGetResp\(NodeInfo\) DR 0,1 ← "ibemu-sw1": switch with 8 ports, GUID 0x0002c90200000001' "$out"
expect_match "text: two hops out" 'SubnGet\(NodeInfo\) DR 0,1,7 → "ibemu-sw2"' "$out"
expect_match "text: a LID given" 'SubnSet\(PortInfo\) DR [0-9,]+ → "ibemu-sw2" port 0: LID 0 → [0-9]+' "$out"
expect_match "text: a port armed" 'SubnSet\(PortInfo\) .* port [0-9]+: LID [0-9]+, state (Init|Down) → Armed' "$out"
expect_match "text: and made active" 'state Armed → Active' "$out"
expect_match "text: forwarding table blocks" 'SubnSet\(LinearForwardingTable\) .* block 0 \(LIDs 0-63\)' "$out"
expect_match "text: at host2's port too" '^ +[0-9.]+ ibemu-host2 HCA-1:1 ← ibemu-sw2:1  SubnGet' "$out"

# --- -w - into tshark, live; counts, filters and ports
# (a query of host2's counters from host1: out and in at both CA ports; a
# port's own LID loops back inside its HCA, never on a cable)
H2=0x0002c90300000201
# perfquery asks ClassPortInfo first, then PortCounters: 8 packets
(timeout -k 10 $cap_timeout "$ibemu" capture --instance $I -c 8 --filter pma -w - 2>"$work/live.err" |
	command tshark -i - -T fields -e _ws.col.Info 2>/dev/null >"$work/live.txt") &
live=$!
capture_ready "$work/live.err"
inst $I perfquery -G $H2 1 >/dev/null
wait $live
out=$(cat "$work/live.txt")
expect_match "tshark -i - decodes the stream" '^PERF \(PortCounters\)' "$out"
expect_match "the ClassPortInfo before" '^PERF \(ClassPortInfo\)' "$out"
expect_eq "-c 8: eight packets" 8 "$(grep -c . <<<"$out")"

timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --port ibemu-host2:1 --filter pma,sa -c 4 --text \
	>"$work/h2.txt" 2>"$work/h2.err" &
cap=$!
capture_ready "$work/h2.err"
inst $I perfquery -G $H2 1 >/dev/null
wait $cap
expect_eq "-c 4 ends by itself" 0 $?
out=$(cat "$work/h2.txt")
expect_match "at host2 only: the query arrives" 'ibemu-host2 HCA-1:1 ← ibemu-sw2:1  PerfGet\(PortCounters\) LID [0-9]+→[0-9]+ \("ibemu-host1 HCA-1" → "ibemu-host2 HCA-1"\)' "$out"
expect_match "and its answer leaves" 'ibemu-host2 HCA-1:1 → ibemu-sw2:1  PerfGetResp\(PortCounters\)' "$out"
expect_eq "nothing else" 4 "$(grep -c . <<<"$out")"

# --- a capture changes nothing the tools see
plain=$(inst $I ibnetdiscover | grep -v 'generated on')
timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --all-ports -w "$work/disc.pcap" 2>"$work/disc.err" &
cap=$!
capture_ready "$work/disc.err"
captured=$(inst $I ibnetdiscover | grep -v 'generated on')
kill -INT $cap
wait $cap
expect_eq "ibnetdiscover with and without a capture" "$plain" "$captured"
out=$(tshark_info "$work/disc.pcap" | grep -c 'SubnGet(NodeInfo)')
[ "$out" -gt 0 ] && ok || bad "the capture saw ibnetdiscover's NodeInfo Gets"

# a reader that goes away ends the capture, even when no packet follows
# (the fabric is quiet after perfquery: OpenSM runs with -s 0), and the
# daemon goes on
# (the readers start reading only once perfquery is over, so every packet
# is already written when they go)
late_reader() { # HEAD_ARGS...
	local n=0
	until [ -e "$work/perfquery.done" ] || [ $((n += 1)) -gt 1800 ]; do sleep 0.1; done
	sleep 1 # the capture's last packets into the pipe, before the reader goes
	head "$@" >/dev/null
}
(set -o pipefail; timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --all-ports -w - 2>"$work/gone.err" | late_reader -c 100) &
gone=$!
(set -o pipefail; timeout -k 10 $cap_timeout "$ibemu" capture --instance $I --text 2>"$work/gone-text.err" | late_reader -n 1) &
gone_text=$!
capture_ready "$work/gone.err"
capture_ready "$work/gone-text.err"
inst $I perfquery -G $H2 1 >/dev/null
touch "$work/perfquery.done"
wait $gone
expect_eq "a capture whose reader went away ends by itself" 0 $?
expect_match "the reader went away" 'the reader went away' "$(cat "$work/gone.err")"
wait $gone_text
expect_eq "a text trace whose reader went away ends by itself" 0 $?
expect_match "and from a text trace too" 'the reader went away' "$(cat "$work/gone-text.err")"
out=$(inst $I ibstat)
expect_match "the instance goes on" 'State: Active' "$out"
out=$("$ibemu" control --instance $I '{"op":"capture","count":"x"}' 2>&1)
expect_match "the control socket refuses a bad capture" 'count.. must be a number of packets' "$out"

# --- the running fabric in words, as `topo show FILE` describes a file
out=$("$ibemu" topo show --instance $I)
expect_match "live summary: its counts" "^Fabric of instance \"$I\": 2 switches, 4 CAs, 0 routers, 8 links$" "$out"
expect_match "live summary: Active cables" '^  port 7    -> "ibemu-sw2" port 7  4xEDR ACTIVE/LinkUp$' "$out"
# --- the picture of the running fabric: LIDs, states, a cable pulled
out=$("$ibemu" topo show --instance $I --format dot)
expect_match "live: host1's LID" 'label="ibemu-host1 HCA-1\\nLID [0-9]+"' "$out"
expect_match "live: an Active cable is green" 'id="l0p7".*color="forestgreen"' "$out"
"$ibemu" link down --instance $I ibemu-sw1 7 >/dev/null
out=$("$ibemu" topo show --instance $I --format dot)
expect_match "live: the pulled cable is red" 'id="l0p7", taillabel="7", headlabel="7", label="pulled", color="red", style=dashed' "$out"
"$ibemu" link up --instance $I ibemu-sw1 7 >/dev/null
"$ibemu" topo show --instance $I --format png -o "$work/live.png"
expect_eq "live: a PNG" "PNG image data" "$(file -b "$work/live.png" | cut -d, -f1)"

e2e_done
