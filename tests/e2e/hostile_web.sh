#!/usr/bin/env bash
# Hostile users of captures and of the live view (issue 38, items 1 and 3):
# a NodeDescription that is not UTF-8 in every capture (the CLI's, to a
# file and as text, and the page's recent MADs); local users who hold the
# live view's connections; clients that hammer /api/state, built once per
# change while an SMP is still answered. After each the daemon must be
# alive and answer.
# usage: hostile_web.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup hostile-web
chmod 755 "$work" # other users run clients from here

W=hweb-$$
out=$("$ibemu" up --instance $W --web 2>&1)
expect_eq "up --web" 0 $?
url=$(sed -n 's/^  live view: //p' <<<"$out")
port=${url#http://127.0.0.1:}
port=${port%/}
daemon=$(cat "$IBEMU_RUN_DIR/$W/pid")
code() { curl -s -m 20 -o /dev/null -w '%{http_code}' "$@"; }

# healthy WHAT: the daemon survived WHAT and answers an SMP and a page;
# when it did not survive, nothing after can be tested
healthy() {
	if [ ! -e "/proc/$daemon" ] || [ "$(awk '{ print $3 }' "/proc/$daemon/stat")" = Z ]; then
		bad "after $1: the daemon is gone"
		tail -5 "$IBEMU_RUN_DIR/$W/ibemud.out"
		e2e_done
		exit 1
	fi
	expect_match "after $1: an SMP is answered" '^Node Description:\.+' "$(inst $W smpquery -D nodedesc 0)"
	expect_eq "after $1: the page is served" 200 "$(code "${url}api/state")"
}

# --- 1. a NodeDescription that is not UTF-8 (root may write one, as on
# the kernel), in captures: the daemon writes U+FFFD for the bytes
inst $W sh -c "printf '\377\376 host1' >/sys/class/infiniband/ibemu0/node_desc"
fffd=$(printf '\357\277\275')
expect_eq "the page is served" 200 "$(code "${url}api/state")"
"$ibemu" capture --instance $W -c 12 -w "$work/bad.pcap" >"$work/pcap.out" 2>&1 &
pcap=$!
"$ibemu" capture --instance $W -c 12 >"$work/text.out" 2>"$work/text.err" &
text=$!
end=$((SECONDS + 30))
until grep -q capturing "$work/pcap.out" && grep -q capturing "$work/text.err" || [ $SECONDS -ge $end ]; do
	sleep 0.1
done
# DR SMPs out of host1 over its cable and back: host1 is the source, and
# its description the answer
inst $W smpquery -D nodedesc 0,1 >/dev/null
inst $W smpquery -D nodedesc 0,1,1 >/dev/null
timeout 30 tail --pid=$pcap -f /dev/null
wait $pcap
expect_eq "ibemu capture -w with such a name exits 0" 0 $?
timeout 30 tail --pid=$text -f /dev/null
wait $text
expect_eq "ibemu capture (text) exits 0" 0 $?
healthy "captures of a node description that is not UTF-8"
out=$(python3 - "$work/bad.pcap" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", d[:24])
n, at = 0, 24
while at + 16 <= len(d):
    incl = struct.unpack("<IIII", d[at:at + 16])[2]
    at += 16 + incl
    n += 1
print(hex(magic), link, n, at == len(d))
EOF
)
expect_eq "the pcap file: ERF, 12 whole packets" "0xa1b2c3d4 197 12 True" "$out"
# (the text trace shows the description the answer carries as it is)
expect_match "the text trace names host1 with U+FFFD" \
	"^ *[0-9.]+ $fffd$fffd host1:1 ← .* SubnGetResp\\(NodeDescription\\) DR 0,1,1 ← \"$fffd$fffd host1\": " \
	"$(cat "$work/text.out")"
# (the page's state follows the fabric up to 250 ms, or ten build times,
# late: docs/observe.md; ask until it shows the MADs, 100 times at most)
for _ in $(seq 100); do
	out=$(curl -s -m 20 "${url}api/state" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(any(m["port"] == "\ufffd\ufffd host1:1" for m in s["mads"]),
      any(m["text"].endswith("\"\ufffd\ufffd host1\": \"\ufffd\ufffd host1\"") for m in s["mads"]))')
	[ "$out" = "True True" ] && break
	# (and a fresh MAD of host1's, should the 12 above have left the
	# last hundred the page shows)
	inst $W smpquery -D nodedesc 0,1,1 >/dev/null
	sleep 0.2
done
expect_eq "the page's recent MADs: JSON, naming host1 and its answer with U+FFFD" "True True" "$out"
out=$(curl -s -m 20 "${url}api/node/2" | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
expect_eq "the node's page: JSON, with U+FFFD" "$fffd$fffd host1" "$out"
expect_eq "and its picture" 200 "$(code "${url}api/picture.svg")"
out=$("$ibemu" capture --instance $W --port "$(printf '\377\376 host1'):9" -c 1 2>&1)
expect_eq "a capture of such a name's port 9 is refused" 1 $?
expect_match "saying why, with U+FFFD" "no node \"$fffd$fffd host1\"" "$out"
healthy "a refused capture of such a name"
inst $W sh -c "printf 'ibemu-host1 HCA-1' >/sys/class/infiniband/ibemu0/node_desc"

# --- 3. connections held: a client (the user who owns the other end)
# keeps at most 8, and when all 32 are taken, a new one closes the least
# recently used of the client holding the most: no one is locked out
cat >"$work/squat.py" <<'EOF'
# squat.py PORT N: N keep-alive connections that ask once and then hold
# on; prints how many of them are still open once all have asked, then
# holds them until its standard input closes
import http.client, select, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = []
for i in range(n):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        c.request("GET", "/app.js")
        c.getresponse().read()
        conns.append(c)
    except (OSError, http.client.HTTPException):
        pass  # refused or dropped: not held
def is_open(c):
    r, _, _ = select.select([c.sock], [], [], 0)
    return not r or c.sock.recv(1, socket.MSG_PEEK) != b""
print(sum(is_open(c) for c in conns), flush=True)
sys.stdin.read()
EOF
chmod 644 "$work/squat.py"
# squat NAME UID N: N connections held by user UID, until unsquat NAME
squat() {
	mkfifo "$work/$1.in"
	setpriv --reuid="$2" --regid="$2" --clear-groups /usr/bin/python3 "$work/squat.py" "$port" "$3" \
		<"$work/$1.in" >"$work/$1.out" &
	local fd
	exec {fd}>"$work/$1.in"
	eval "hold_$1=$fd"
	local end=$((SECONDS + 60))
	until [ -s "$work/$1.out" ] || [ $SECONDS -ge $end ]; do sleep 0.05; done
}
unsquat() {
	local fd
	eval "fd=\$hold_$1"
	exec {fd}>&-
}
webstat() { # KEY: the daemon's web_view.KEY, from status --json (-1: none)
	"$ibemu" status --instance $W --json |
		python3 -c "import json, sys; print(json.load(sys.stdin).get('web_view', {}).get('$1', -1))"
}

squat nobody 65534 40
expect_eq "a user who opens 40 connections keeps 8" 8 "$(cat "$work/nobody.out")"
expect_eq "root's page is still served" 200 "$(code "$url")"
expect_eq "and again" 200 "$(code "${url}api/state")"
squat root 0 40
expect_eq "root's own 40 connections: 8 kept" 8 "$(cat "$work/root.out")"
expect_eq "and root's page is still served" 200 "$(code "${url}api/state")"
unsquat root
for u in 65533 65532 65531; do squat u$u $u 8; done
expect_eq "four users hold 8 each: all 32 taken" "32 4" "$(webstat connections) $(webstat clients)"
evicted=$(webstat evicted)
expect_eq "root's page is still served" 200 "$(code "${url}api/state")"
expect_eq "by closing one of theirs" $((evicted + 1)) "$(webstat evicted)"
for s in nobody u65533 u65532 u65531; do unsquat $s; done
wait
healthy "connections held"

# --- 3. /api/state asked for by many at once, unchanged: built once
# (no SM here, nothing moves)
state() { curl -s -m 20 "${url}api/state" | python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
state '["picture"]' >/dev/null
before=$(webstat state_builds)
expect_match "the daemon counts its builds of the state" '^[1-9][0-9]*$' "$before"
python3 - "$port" <<'EOF'
import http.client, sys, threading
def hammer():
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
    for _ in range(25):
        c.request("GET", "/api/state")
        c.getresponse().read()
ts = [threading.Thread(target=hammer) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
EOF
expect_eq "100 requests for an unchanged state: not built again" "$before" "$(webstat state_builds)"
"$ibemu" link down --instance $W ibemu-sw1 7 >/dev/null
end=$((SECONDS + 30))
until [ "$(state '["cables"]["l0p7"]')" = pulled ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
expect_eq "a change is seen" pulled "$(state '["cables"]["l0p7"]')"
expect_eq "built once more" $((before + 1)) "$(webstat state_builds)"
"$ibemu" link up --instance $W ibemu-sw1 7 >/dev/null

# --- 3. an 8,192-host fat tree (/api/state of 369 KB): SMPs are answered
# while four clients ask for the state as fast as they can
B=hwebbig-$$
out=$("$ibemu" up --instance $B --web --gen fat-tree:levels=3,hosts=8192,radix=32 2>&1)
expect_eq "up an 8,192-host fat tree with --web" 0 $?
burl=$(sed -n 's/^  live view: //p' <<<"$out")
bport=${burl#http://127.0.0.1:}
bport=${bport%/}
# (it says "hammering" once each of the four has had an answer)
python3 - "$bport" "$work/stop" >"$work/hammer.out" <<'EOF' &
import http.client, os, sys, threading
n = [0] * 4
started = threading.Barrier(4, action=lambda: print("hammering", flush=True))
def hammer(i):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
    while n[i] == 0 or not os.path.exists(sys.argv[2]):
        c.request("GET", "/api/state")
        c.getresponse().read()
        n[i] += 1
        if n[i] == 1:
            started.wait()
ts = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(sum(n))
EOF
hammer=$!
end=$((SECONDS + 120))
until grep -q hammering "$work/hammer.out" || [ $SECONDS -ge $end ]; do sleep 0.05; done
# (a guard against a hang: without the cache, none came back in a minute)
answered=$(timeout 120 "$ibemu" exec --instance $B -- sh -c 'for i in 1 2 3 4 5; do smpquery -D nodedesc 0; done' |
	grep -c '^Node Description:')
touch "$work/stop"
wait $hammer
expect_eq "5 SMPs answered while /api/state is hammered" 5 $answered
expect_match "as it was" '^[1-9][0-9]*$' "$(tail -1 "$work/hammer.out")"
down_inst $B
healthy "/api/state hammered"

e2e_done
