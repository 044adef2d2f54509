#!/usr/bin/env bash
# Hostile (or careless) users of the control socket and of scenarios
# (issue 38, item 5): clients that start a link.flap and die give their
# places back and their flaps end; 16 clients holding every place leave
# `scenario stop` and `status` served; a scenario cannot ask for a tick
# below the floor, and one of 100 events at the floor leaves SMPs answered,
# stops on `scenario stop` and lets `ibemu down` end the daemon with
# SIGTERM.
# usage: hostile_control.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup hostile-control

I=e2e-hostile-control-$$

# two switches joined by 20 cables (a flap each), a host on each
{
	printf 'Switch\t24 "S-0002c90200000001"\t\t# "ibemu-sw1"\n'
	for p in $(seq 1 20); do printf '[%d]\t"S-0002c90200000002"[%d]\n' "$p" "$p"; done
	printf '[21]\t"H-0002c90300000100"[1]\n\n'
	printf 'Switch\t24 "S-0002c90200000002"\t\t# "ibemu-sw2"\n'
	for p in $(seq 1 20); do printf '[%d]\t"S-0002c90200000001"[%d]\n' "$p" "$p"; done
	printf '[21]\t"H-0002c90300000200"[1]\n\n'
	printf 'Ca\t1 "H-0002c90300000100"\t\t# "ibemu-host1 HCA-1"\n'
	printf '[1](2c90300000101) \t"S-0002c90200000001"[21]\n'
	printf 'Ca\t1 "H-0002c90300000200"\t\t# "ibemu-host2 HCA-1"\n'
	printf '[1](2c90300000201) \t"S-0002c90200000002"[21]\n'
} >"$work/c.topo"

out=$("$ibemu" up --instance $I --topology "$work/c.topo" 2>&1)
expect_eq "up" 0 $?
sock=$IBEMU_RUN_DIR/$I/control.sock

faults() { # what `status --json` says is faulty, as "flapping pulled"
	"$ibemu" control --instance $I '{"op":"state"}' 2>/dev/null | python3 -c '
import json, sys
f = json.load(sys.stdin)["faults"]
print(f["flapping"], len(f["pulled_cables"]))' 2>/dev/null
}
until_faults() { # WANT: wait (10 s at most) until faults says WANT
	local end=$((SECONDS + 10))
	while [ "$(faults)" != "$1" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
}

# clients N REQUEST >FILE: N connections from one process in the
# background ($! its pid), each sending REQUEST (with {port} replaced by
# its number, 1..N); it prints the replies of those past the 16 places and
# "ready", then holds the connections until killed
clients() {
	python3 -u - "$sock" "$1" "$2" <<'EOF' &
import select, socket, sys, time
path, n, req = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conns = []
for i in range(1, n + 1):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(req.replace("{port}", str(i)).encode() + b"\n")
    conns.append(s)
# the replies of the connections past the 16 places come at once; the
# others' only when their flaps end (10 s at most for a loaded machine)
pending, end = set(conns), time.time() + 10
while len(pending) > 16 and time.time() < end:
    ready, _, _ = select.select(list(pending), [], [], max(0, end - time.time()))
    for s in ready:
        print(s.recv(4096).decode().strip())
        pending.discard(s)
for s in pending:
    print("running")
print("ready")
time.sleep(3600)
EOF
}
until_ready() { # FILE
	local end=$((SECONDS + 20))
	until grep -q '^ready' "$1" || [ $SECONDS -ge $end ]; do sleep 0.1; done
}

# --- 20 clients start a link.flap and die
clients 20 '{"op":"link.flap","node":"ibemu-sw1","port":{port},"count":1000,"interval_ms":60000}' >"$work/flappers"
pid=$!
until_ready "$work/flappers"
until_faults "16 16"
expect_eq "16 flaps run, each holding its cable pulled" "16 16" "$(faults)"
kill -9 $pid
wait $pid 2>/dev/null
expect_eq "4 clients past the 16 places are refused the flap" 4 \
	"$(grep -c 'too many control connections' "$work/flappers")"
until_faults "0 0"
expect_eq "the dead clients' flaps end, their cables plugged back" "0 0" "$(faults)"
out=$("$ibemu" link down --instance $I ibemu-sw1 1 2>&1)
expect_match "a new client is served" 'pulled' "$out"
"$ibemu" link up --instance $I ibemu-sw1 1 >/dev/null
out=$("$ibemu" scenario stop --instance $I 2>&1)
expect_match "scenario stop is served" 'stopped 0 scenarios' "$out"
out=$(grep -c '"flap":' "$IBEMU_RUN_DIR/$I/events.jsonl")
expect_eq "each flap logged its down edge and the up edge of its cancel" 32 "$out"

# a client that only shuts down its writing half has not gone: its flap
# runs to the end, and the request it sent behind it is answered
out=$(timeout 30 python3 - "$sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"link.flap","node":"ibemu-sw1","port":2,"count":2,"interval_ms":100,"id":1}\n'
          b'{"op":"check","request":{"op":"link.down","node":"ibemu-sw1","port":2},"id":2}\n')
s.shutdown(socket.SHUT_WR)
buf = b""
while d := s.recv(65536):
    buf += d
print(buf.decode())
EOF
)
expect_match "a half-closed client gets its flap's reply" '^\{"ok":true,"node":"ibemu-sw1","port":2,"flaps":2,"id":1\}$' "$out"
expect_match "and the one after it, then the end" '^\{"ok":true,"id":2\}$' "$out"

# --- 20 live clients hold every place (16 and the 4 reserved)
clients 20 '{"op":"link.flap","node":"ibemu-sw1","port":{port},"count":1000,"interval_ms":60000}' >"$work/holders"
pid=$!
until_ready "$work/holders"
until_faults "16 16"
expect_eq "16 flaps run" "16 16" "$(faults)"
out=$("$ibemu" status --instance $I 2>&1)
expect_match "status is served" 'scenario|events:' "$out"
out=$("$ibemu" link down --instance $I ibemu-sw1 21 2>&1)
expect_eq "a change past the 16 places is refused" 1 $?
expect_match "saying why" 'too many control connections \(16\): past them only scenario.stop, state and check' "$out"
out=$("$ibemu" scenario stop --instance $I 2>&1)
expect_match "scenario stop is served, and ends the flaps of the live clients" 'stopped 0 scenarios' "$out"
until_faults "0 16"
expect_eq "no flap left (their cables stay where the stop found them)" "0 16" "$(faults)"
kill -9 $pid
wait $pid 2>/dev/null
for p in $(seq 1 16); do "$ibemu" link up --instance $I ibemu-sw1 "$p" >/dev/null; done
expect_eq "every cable back" "0 0" "$(faults)"

# --- scenarios: the floor, and 100 events at it
cat >"$work/fast.toml" <<'EOF'
[[event]]
every = "1ms"
op = "counters.set"
node = "ibemu-sw1"
port = 1
counter = "SymbolErrorCounter"
value = 1
EOF
out=$("$ibemu" scenario run --instance $I "$work/fast.toml" 2>&1)
expect_eq "a tick below the floor is refused" 1 $?
expect_match "with the file and line" 'fast.toml:2: every must be at least 10ms' "$out"

# 1,000 events every 10ms: the rate of 100 every 1ms, which kept the daemon
# firing its backlog until SIGKILL; a daemon that cannot keep up fails
# the checks below within 20 s each rather than hang the suite
for e in $(seq 1 1000); do
	printf '[[event]]\nevery = "10ms"\nop = "counters.set"\nnode = "ibemu-sw%d"\nport = %d\n' \
		$((e % 2 + 1)) $((e % 20 + 1))
	printf 'counter = "SymbolErrorCounter"\nvalue = %d\n\n' "$e"
done >"$work/busy.toml"
out=$(timeout 20 "$ibemu" scenario run --instance $I "$work/busy.toml" 2>&1)
expect_match "1,000 events every 10ms (the rate of 100 every 1ms) play" 'playing .*busy.toml: 1000 events' "$out"
out=$(timeout 20 "$ibemu" exec --instance $I -- smpquery -D nodedesc 0 2>&1)
expect_match "an SMP is answered meanwhile" 'Node Description:.*ibemu-host1 HCA-1' "$out"
out=$(timeout 20 "$ibemu" status --instance $I 2>&1)
expect_match "status shows it playing" 'scenario .*busy.toml .*events fired' "$out"
out=$(timeout 20 "$ibemu" scenario stop --instance $I 2>&1)
expect_match "scenario stop stops it" 'stopped 1 scenarios' "$out"
out=$(timeout 20 "$ibemu" control --instance $I '{"op":"state"}' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["scenarios"]))')
expect_eq "nothing plays" 0 "$out"

# a field of the wrong type is refused, whichever request it is in
out=$(timeout 20 "$ibemu" control --instance $I '{"op":"picture","summary":1}' 2>&1)
expect_match "picture with a summary that is not a boolean" 'summary.* must be true or false' "$out"
out=$(timeout 20 "$ibemu" control --instance $I '{"op":"scenario.run","file":7,"text":[1]}' 2>&1)
expect_match "a request whose fields are of the wrong types is refused" '"ok": *false|error' "$out"
out=$(timeout 20 "$ibemu" exec --instance $I -- smpquery -D nodedesc 0 2>&1)
expect_match "and the daemon lives on" 'Node Description:.*ibemu-host1 HCA-1' "$out"

# the same, left playing: down ends the daemon with SIGTERM
timeout 20 "$ibemu" scenario run --instance $I "$work/busy.toml" >/dev/null
out=$(timeout 20 "$ibemu" exec --instance $I -- smpquery -D nodedesc 0 2>&1)
expect_match "an SMP is answered while it plays again" 'Node Description:.*ibemu-host1 HCA-1' "$out"
out=$("$ibemu" down --keep-logs --instance $I 2>&1)
expect_eq "down while it plays exits 0" 0 $?
if grep -q 'killed it' <<<"$out"; then bad "down had to SIGKILL the daemon: $out"; else ok; fi
sanitizer_check $I
rm -rf "${IBEMU_RUN_DIR:?}/$I"

e2e_done
