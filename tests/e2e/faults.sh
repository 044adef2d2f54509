#!/usr/bin/env bash
# Faults and live changes under a running OpenSM, seen by stock tools: a
# pulled switch-to-switch cable (ibnetdiscover, ibroute before/after), a
# silent switch (smpquery times out, ibping through it works), a lossy
# link (perfquery, ibqueryerrors, MADs retried), counters set, a degraded
# link (iblinkinfo), a hot-plugged leaf switch with hosts, scenarios played
# twice with one seed, ibsim scripts, and bad input that changes nothing.
# usage: faults.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup faults

I=e2e-faults-$$
SW1=0x0002c90200000001
SW2=0x0002c90200000002

# the built-in fabric, plus a leaf switch with two hosts that no cable
# joins to it yet
cat >"$work/f.topo" <<'EOF'
Switch	8 "S-0002c90200000001"		# "ibemu-sw1"
[1]	"H-0002c90300000100"[1]
[2]	"H-0002c90300000300"[1]
[7]	"S-0002c90200000002"[7]
[8]	"S-0002c90200000002"[8]

Switch	8 "S-0002c90200000002"		# "ibemu-sw2"
[1]	"H-0002c90300000200"[1]
[2]	"H-0002c90300000300"[2]
[7]	"S-0002c90200000001"[7]
[8]	"S-0002c90200000001"[8]

Switch	8 "S-0002c90200000003"		# "ibemu-leaf3"
[1]	"H-0002c90300000500"[1]
[2]	"H-0002c90300000600"[1]

Ca	1 "H-0002c90300000100"		# "ibemu-host1 HCA-1"
[1](2c90300000101) 	"S-0002c90200000001"[1]
Ca	1 "H-0002c90300000200"		# "ibemu-host2 HCA-1"
[1](2c90300000201) 	"S-0002c90200000002"[1]
Ca	2 "H-0002c90300000300"		# "ibemu-host3 HCA-1"
[1](2c90300000301) 	"S-0002c90200000001"[2]
[2](2c90300000302) 	"S-0002c90200000002"[2]
Ca	1 "H-0002c90300000500"		# "ibemu-host5 HCA-1"
[1](2c90300000501) 	"S-0002c90200000003"[1]
Ca	1 "H-0002c90300000600"		# "ibemu-host6 HCA-1"
[1](2c90300000601) 	"S-0002c90200000003"[2]

# ibsim console commands, run once the fabric is built
do PerformanceSet "H-0002c90300000300"[1] PortCounters.SymbolErrorCounter=12
EOF

# --- a topology whose do line cannot be carried out is refused
sed 's/SymbolErrorCounter=12/NoSuchCounter=1/' "$work/f.topo" >"$work/bad-do.topo"
out=$("$ibemu" up --instance $I --topology "$work/bad-do.topo" 2>&1)
expect_eq "up with a bad do line fails" 1 $?
expect_match "naming the line" 'bad-do.topo:[0-9]+: do PerformanceSet .*no counter "NoSuchCounter"' "$out"

# --- a scenario with an error is refused before anything starts
cat >"$work/bad.toml" <<'EOF'
seed = 1
[[event]]
at = "1s"
op = "link.down"
node = "ibemu-sw1"
port = 9
EOF
out=$("$ibemu" up --instance $I --topology "$work/f.topo" --scenario "$work/bad.toml" 2>&1)
expect_eq "up with a bad scenario fails" 1 $?
expect_match "the scenario's error names file and line" 'bad.toml:2: "ibemu-sw1" has ports 1-8; there is no port 9' "$out"

# OpenSM sweeps only when a trap or a change asks it to (-s 0), so what
# it does follows from what we do
out=$("$ibemu" up --instance $I --topology "$work/f.topo" --sm -- -s 0 2>&1)
expect_eq "up with OpenSM" 0 $?
state() { "$ibemu" control --instance $I '{"op":"state"}'; }
out=$(inst $I perfquery -G 0x0002c90300000301 1)
expect_match "the topology's do line ran" 'SymbolErrorCounter:\.+12$' "$out"
before=$(state)

# LID of host2, and which of sw1's cables to sw2 carries it
h2lid=$(inst $I smpquery -G portinfo 0x0002c90300000201 1 | sed -n 's/^Lid:\.*//p')
route() { inst $I ibroute -G $SW1 | awk -v l="$(printf '0x%04x' "$h2lid")" '$1 == l { print $2 + 0 }'; }
port=$(route)
other=$((port == 7 ? 8 : 7))
expect_match "sw1 routes host2 by an inter-switch cable" '^(7|8)$' "$port"

# --- pull the cable: ibnetdiscover loses it, the SM moves the LFT entry
out=$("$ibemu" link down --instance $I ibemu-sw1 "$port")
expect_match "link down" "pulled the cable \"ibemu-sw1\"\\[$port\\] -- \"ibemu-sw2\"\\[$port\\]" "$out"
out=$(inst $I smpquery -G portinfo $SW1 "$port")
expect_match "both ends Down/Polling" 'PhysLinkState:\.+Polling' "$out"
out=$(inst $I perfquery -G $SW2 "$port")
expect_match "LinkDownedCounter moved" 'LinkDownedCounter:\.+1$' "$out"
end=$((SECONDS + 60))
while [ "$(route)" != "$other" ] && [ $SECONDS -lt $end ]; do sleep 0.3; done
expect_eq "OpenSM re-routed host2's LID to the other cable (Trap 128)" "$other" "$(route)"
out=$(inst $I ibnetdiscover)
if grep -Eq "^\[$port\][[:space:]]+\"S-0002c90200000002\"\[$port\]" <<<"$out"; then
	bad "ibnetdiscover still shows the pulled cable"
else ok; fi
expect_match "ibnetdiscover keeps the other cable" "^\[$other\][[:space:]]+\"S-0002c90200000002\"\[$other\]" "$out"
out=$("$ibemu" link down --instance $I ibemu-sw1 "$port" 2>&1)
expect_eq "a pulled cable cannot be pulled again" 1 $?
expect_match "and says so" 'has no cable \(it was pulled' "$out"
"$ibemu" link up --instance $I ibemu-sw2 "$port" >/dev/null
wait_for $I 60 sh -c "ibnetdiscover | grep -Eq '^\[$port\][[:space:]]+\"S-0002c90200000002\"\[$port\]'"
expect_eq "link up: ibnetdiscover finds the cable again" 0 $?

# --- a silent switch: its SMA does not answer, it still switches
"$ibemu" exec --instance $I -- ibping -S -C ibemu1 >/dev/null 2>&1 & # exec becomes ibping
pinger=$!
sleep 1
"$ibemu" node silence --instance $I ibemu-sw2 >/dev/null
out=$(inst $I ibping -C ibemu0 -c 3 -L "$h2lid")
expect_match "ibping through the silent switch" '3 packets transmitted, 3 received' "$out"
out=$(inst $I smpquery -D nodedesc 0,1,"$other")
expect_match "smpquery to the silent switch times out" 'timed out|failed' "$out"
out=$(inst $I perfquery -G $SW2 1)
expect_match "its PMA is silent too" 'timed out|failed' "$out"
"$ibemu" node restore --instance $I ibemu-sw2 >/dev/null
out=$(inst $I smpquery -D nodedesc 0,1,"$other")
expect_match "restored: it answers again" 'Node Description:\.+ibemu-sw2' "$out"
kill "$pinger" 2>/dev/null
wait "$pinger" 2>/dev/null

# --- a lossy link: the receiver counts, the kernel's MAD retries hide it
"$ibemu" counters set --instance $I ibemu-sw2 7 all 0 >/dev/null
"$ibemu" counters set --instance $I ibemu-sw2 8 all 0 >/dev/null
nodes=$(inst $I ibnetdiscover | grep -cE '^(Switch|Ca)')
for p in 7 8; do "$ibemu" errors --instance $I ibemu-sw1 $p --drop 0.1 --seed 11 >/dev/null; done
lost() { state | python3 -c 'import json,sys; print(sum(p["dropped"] for p in json.load(sys.stdin)["faults"]["lossy_ports"]))'; }
expect_eq "nothing lost yet" 0 "$(lost)"
# ibnetdiscover gives umad_send retries (libibnetdisc: 3), so the MADs
# the link loses are sent again by the MAD layer
found=$(inst $I ibnetdiscover | grep -cE '^(Switch|Ca)')
n=$(lost)
if [ "$n" -gt 0 ] && [ "$found" = "$nodes" ]; then ok; else
	bad "a 10% lossy link: $n packets lost; ibnetdiscover found $found of $nodes nodes"; fi
# the PMA's answers would cross the lossy cable too: mend it first
for p in 7 8; do "$ibemu" errors --instance $I ibemu-sw1 $p --drop 0 >/dev/null; done
out=$(inst $I perfquery -G $SW2 7; inst $I perfquery -G $SW2 8)
expect_match "perfquery: SymbolErrorCounter moved" 'SymbolErrorCounter:\.+[1-9]' "$out"
expect_match "perfquery: PortRcvErrors moved" 'PortRcvErrors:\.+[1-9]' "$out"
out=$(inst $I ibqueryerrors)
expect_match "ibqueryerrors names the lossy port" 'port [78]: .*\[SymbolErrorCounter == [1-9]' "$out"

# --- counters set, as ibsim's PerformanceSet
out=$("$ibemu" counters set --instance $I ibemu-sw2 2 PortXmitDiscards 4242)
expect_match "counters set" 'PortXmitDiscards = 4242' "$out"
out=$(inst $I perfquery -G $SW2 2)
expect_match "perfquery sees it" 'PortXmitDiscards:\.+4242' "$out"

# --- a degraded link: 4X trains to 1X SDR, the SM and iblinkinfo see it
"$ibemu" link degrade --instance $I ibemu-sw1 "$port" --width 1x --speed SDR >/dev/null
wait_for $I 60 sh -c "smpquery -G portinfo $SW1 $port | grep -q 'LinkState:\.*Active'"
expect_eq "the degraded link is Active again" 0 $?
out=$(inst $I iblinkinfo -G $SW1)
expect_match "iblinkinfo: 1X SDR, could be 4X" "^ +[0-9]+ +$port\[.*1X +2\.5 Gbps Active.*Could be 4X" "$out"
"$ibemu" link degrade --instance $I ibemu-sw1 "$port" >/dev/null
wait_for $I 60 sh -c "iblinkinfo -G $SW1 | grep -Eq '^ +[0-9]+ +$port\[.*4X .*Active'"
expect_eq "restored: 4X again" 0 $?

# --- hot plug: a leaf switch with two hosts, cabled to sw1 port 6
out=$(inst $I ibnetdiscover)
if grep -q ibemu-leaf3 <<<"$out"; then bad "the island leaf is seen before it is cabled"; else ok; fi
"$ibemu" link connect --instance $I ibemu-sw1 6 ibemu-leaf3 8 >/dev/null
wait_for $I 60 sh -c 'ibnetdiscover | grep -q "ibemu-host6 HCA-1.*lid [1-9]"'
expect_eq "the SM and ibnetdiscover find the hot-plugged leaf and its hosts" 0 $?
out=$(inst $I ibnetdiscover)
expect_match "the leaf is there" '^Switch.*"ibemu-leaf3"' "$out"
expect_match "its host has a LID" 'ibemu-host5 HCA-1.* lid [1-9]' "$out"

# --- hot plug of new nodes: a fragment naming where it is cabled
cat >"$work/leaf4.topo" <<'EOF'
Switch	4 "S-0002c90200000004"		# "ibemu-leaf4"
[1]	"H-0002c90300000700"[1]
[4]	"S-0002c90200000002"[5]
Ca	1 "H-0002c90300000700"		# "ibemu-host7 HCA-1"
[1](2c90300000701) 	"S-0002c90200000004"[1]
EOF
out=$("$ibemu" node add --instance $I --topology "$work/leaf4.topo")
expect_match "node add --topology" 'added \["ibemu-leaf4","ibemu-host7 HCA-1"\]' "$out"
wait_for $I 60 sh -c 'ibnetdiscover | grep -q "ibemu-host7 HCA-1.*lid [1-9]"'
expect_eq "the SM and ibnetdiscover find the new leaf and host" 0 $?
out=$("$ibemu" node add --instance $I --topology "$work/leaf4.topo" 2>&1)
expect_eq "adding them twice is refused" 1 $?
expect_match "with the line" 'leaf4.topo:1: node GUID 0x2c90200000004 of "S-0002c90200000004" is in the running fabric already' "$out"

# --- flapping, and the event log
out=$("$ibemu" link flap --instance $I ibemu-sw1 "$other" --count 2 --interval 100)
expect_match "link flap" 'went down and up 2 times' "$out"
flaps=$(grep -c '"flap":' "$IBEMU_RUN_DIR/$I/events.jsonl")
expect_eq "each edge of the flap is an event" 4 "$flaps"

# --- the same scenario and seed twice: the same events
cat >"$work/s.toml" <<'EOF'
seed = 3
[[event]]
every = "20ms"
count = 25
probability = 0.4
op = "counters.set"
node = "ibemu-host3"
port = 2
counter = "SymbolErrorCounter"
value = 1

[[event]]
after = "sm-master"
at = "100ms"
every = "30ms"
count = 10
probability = 0.5
op = "errors"
node = "ibemu-leaf3"
port = 1
drop = 0.01
EOF
play() {
	local log=$IBEMU_RUN_DIR/$I/events.jsonl n
	n=$(wc -l <"$log")
	"$ibemu" scenario run --instance $I "$work/s.toml" >/dev/null || return 1
	local end=$((SECONDS + 60))
	while state | grep -q '"running":true' && [ $SECONDS -lt $end ]; do sleep 0.2; done
	tail -n +$((n + 1)) "$log" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    for k in ("time", "seq"):
        e.pop(k)
    print(json.dumps(e))'
}
first=$(play)
second=$(play)
expect_eq "the same scenario and seed give the same event log" "$first" "$second"
n=$(grep -c . <<<"$first")
if [ "$n" -ge 5 ]; then ok; else bad "the scenario logged only $n events"; fi
other_seed=$("$ibemu" scenario run --instance $I --seed 4 "$work/s.toml")
expect_match "another seed" 'seed 4' "$other_seed"
"$ibemu" scenario stop --instance $I >/dev/null

# --- ibsim scripts
cat >"$work/ibsim.cmds" <<'EOF'
# pull and replug a cable, set a counter, as ibsim does
Unlink "S-0002c90200000003"[8]
ReLink "S-0002c90200000003"[8]
PerformanceSet "H-0002c90300000500"[1] PortCounters.PortRcvErrors=77
Dump
EOF
out=$("$ibemu" ibsim --instance $I "$work/ibsim.cmds" 2>&1)
expect_eq "ibemu ibsim runs the script" 0 $?
expect_match "Unlink" 'ibsim.cmds:2: pulled the cable "ibemu-leaf3"\[8\]' "$out"
expect_match "Dump is skipped with a note" 'ibsim.cmds:5: Dump shows ibsim' "$out"
# the replugged cable is Active again once OpenSM has swept after its trap;
# until then the SA has no path to host5 (perfquery -G asks for one)
wait_for $I 60 sh -c 'perfquery -G 0x0002c90300000501 1 | grep -q PortRcvErrors'
out=$(inst $I perfquery -G 0x0002c90300000501 1)
expect_match "PerformanceSet reached the PMA" 'PortRcvErrors:\.+77' "$out"
printf 'Unlink "S-0002c90200000003"[8]\nUnlink "NoSuchNode"[1]\n' >"$work/bad.cmds"
out=$("$ibemu" ibsim --instance $I "$work/bad.cmds" 2>&1)
expect_eq "a bad ibsim script fails" 1 $?
expect_match "naming the line" 'bad.cmds:2: no node "NoSuchNode"' "$out"
out=$(inst $I ibnetdiscover)
expect_match "and nothing ran: the leaf's cable is still in" '"ibemu-leaf3"' "$out"

# --- bad input: a clear error, the fabric unchanged
snap=$(state | python3 -c 'import json,sys; f=json.load(sys.stdin)["faults"]; f.pop("recent_events"); print(json.dumps(f))')
out=$("$ibemu" errors --instance $I ibemu-sw1 7 --drop 1.5 2>&1)
expect_match "a rate outside [0,1]" 'drop must be a probability in \[0, 1\]' "$out"
out=$("$ibemu" link down --instance $I nosuchnode 1 2>&1)
expect_match "an unknown node" 'no node "nosuchnode"' "$out"
out=$("$ibemu" control --instance $I '{"op":"link.down","node":"ibemu-sw1"}' 2>&1)
expect_match "a missing port" '"ok":false.*has ports 1-8; give one' "$out"
out=$("$ibemu" control --instance $I 'not json' 2>&1)
expect_match "not JSON" 'not JSON' "$out"
# a client that goes away in the middle of a request
python3 - "$IBEMU_RUN_DIR/$I/control.sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"link.down","node":"ibemu-sw1","po')
s.close()
EOF
out=$(python3 -c 'print("{\"op\":" + "[" * 100000 + "]" * 100000 + "}")' | "$ibemu" control --instance $I 2>&1)
expect_match "a request nested absurdly deep" 'nests deeper than' "$out"
after=$(state | python3 -c 'import json,sys; f=json.load(sys.stdin)["faults"]; f.pop("recent_events"); print(json.dumps(f))')
expect_eq "the fabric is unchanged" "$snap" "$after"
out=$(su nobody -s /bin/sh -c "$ibemu control --instance $I '{\"op\":\"state\"}'" 2>&1)
expect_match "only root talks to the control socket" 'permission denied' "$out"
out=$("$ibemu" status --instance $I)
expect_match "status shows the recent events" 'events: .*events.jsonl' "$out"

e2e_done
