#!/usr/bin/env bash
# The live view (ibemu up --web) in a real browser, headless Chromium: the
# page draws the fabric, its ports turn Active as OpenSM sweeps, the MADs
# show, a pulled cable turns red, a node's LFT shows on its link; and the
# server refuses what it should (other Hosts, other methods, junk).
# usage: web.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup web
browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
	echo "web: needs chromium (tools/install-deps.sh test); skipped"
	exit 77
fi

I=e2e-web-$$
H1=0x0002c90300000101
H2=0x0002c90300000201
# the page's DOM once its script has run for 3 s of virtual time
dom() {
	timeout "$tool_timeout" "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
		--virtual-time-budget=3000 --dump-dom "$url${1:-}" 2>/dev/null
}

out=$("$ibemu" up --instance $I --web nonsense 2>&1)
expect_eq "up --web with a bad address fails" 1 $?
expect_match "saying why" 'give ADDR:PORT' "$out"

out=$("$ibemu" up --instance $I --web 2>&1)
expect_eq "up --web" 0 $?
url=$(sed -n 's/^  live view: //p' <<<"$out")
expect_match "prints the page's address" '^http://127\.0\.0\.1:[0-9]+/$' "$url"
out=$("$ibemu" status --instance $I)
expect_match "status shows it too" "live view: $url" "$out"

# --- before any SM: links up, ports Init, no SM
page=$(dom)
expect_match "the fabric is drawn" '<g id="n0" class="node"' "$page"
expect_match "a cable up but not Active" '<g id="l0p7" class="edge" data-state="up">' "$page"
expect_match "host1's port Init" '<tr id="port-n2-1" data-state="Init">' "$page"
expect_match "no SM yet" '<div id="sm">SM: no SM has set up the fabric</div>' "$page"

# --- OpenSM sweeps: Active
start_opensm $I $H1
wait_for $I 120 sh -c 'ibstat | grep -q "State: Active"' || bad "ports Active"
wait_for $I 120 sh -c 'sminfo | grep -q SMINFO_MASTER' || bad "OpenSM master"
# the daemon spaces its picture builds (a tenth of its thread at most:
# seconds apart in a sanitizer build), so a page may first get the picture
# of the state before; it asks again until the two agree
for _ in $(seq 10); do
	page=$(dom)
	grep -q 'ibemu-host1 HCA-1</text>.*LID 1</text>' <<<"$(tr -d '\n' <<<"$page")" && break
done
expect_match "host1's port turned Active" '<tr id="port-n2-1" data-state="Active">' "$page"
expect_match "host2's too" '<tr id="port-n3-1" data-state="Active">' "$page"
expect_match "the cable is green" '<g id="l0p7" class="edge" data-state="active">' "$page"
expect_match "the SM" '<div id="sm">SM: LID 1 on ibemu-host1 HCA-1 port 1</div>' "$page"
expect_match "host1's LID in the picture" 'ibemu-host1 HCA-1</text>.*LID 1</text>' "$(tr -d '\n' <<<"$page")"

# the recent MADs: the daemon keeps them from its start (fabric/mad_ring.h)
inst $I perfquery -G $H2 1 >/dev/null
for _ in $(seq 10); do # the state's builds are spaced too
	page=$(dom)
	grep -q 'PerfGet(PortCounters) LID 1→3' <<<"$page" && break
done
expect_match "the recent MADs" '<li>ibemu-host2 HCA-1:1 ← PerfGet\(PortCounters\) LID 1→3 \(&quot;ibemu-host1 HCA-1&quot; → &quot;ibemu-host2 HCA-1&quot;\)</li>|<li>ibemu-host2 HCA-1:1 ← PerfGet\(PortCounters\) LID 1→3 \("ibemu-host1 HCA-1" → "ibemu-host2 HCA-1"\)</li>' "$page"

# --- a pulled cable turns red
"$ibemu" link down --instance $I ibemu-sw1 7 >/dev/null
page=$(dom | tr -d '\n')
expect_match "the pulled cable" '<g id="l0p7" class="edge" data-state="pulled">' "$page"
expect_match "is red" '<g id="l0p7" class="edge" data-state="pulled"><title>[^<]*</title><path[^>]* stroke="red"' "$page"
expect_match "and listed, in words" '<li>pulled cable: [^<{]+ -- [^<{]+</li>' "$page"
events=$(grep -o '<ul id="events">.*</ul>' <<<"$page")
expect_match "the event that pulled it, in words" '<li>[^<]* link.down \(control\) [^<{]*node ibemu-sw1[^<{]*</li>' "$events"
expect_eq "no JSON in the events" 0 "$(grep -c '{"' <<<"$events")"
"$ibemu" link up --instance $I ibemu-sw1 7 >/dev/null

# --- the picture fits the page (a button zooms in)
page=$(dom)
expect_match "a zoom button" '<button id="zoom" type="button">zoom in</button>' "$page"
expect_match "the picture fitted to the map's width" '#map svg \{ max-width: 100%; height: auto; \}' "$page"

# --- a node's NodeInfo, PortInfo and LFT on its link
page=$(dom '#node=0')
expect_match "the node's name" '<div id="node"[^>]* data-node="0"[^>]*><h2>ibemu-sw1</h2>' "$page"
expect_match "its LFT" 'LinearForwardingTable \(LinearFDBTop [0-9]+\): 1→1 ' "$page"

# --- what the server refuses
port=${url#http://127.0.0.1:}
port=${port%/}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
expect_eq "another Host (DNS rebinding)" 421 "$(code -H "Host: attacker.example:$port" "${url}api/state")"
expect_eq "localhost is ours" 200 "$(code -H "Host: localhost:$port" "${url}api/state")"
expect_eq "in any case" 200 "$(code -H "Host: LOCALHOST:$port" "${url}api/state")"
expect_eq "no port is port 80, not ours" 421 "$(code -H "Host: 127.0.0.1" "${url}api/state")"
expect_eq "POST" 405 "$(code -X POST "${url}api/state")"
expect_eq "a body" 413 "$(code -X POST -d x "${url}api/state")"
expect_eq "no such node" 404 "$(code "${url}api/node/99999")"
expect_eq "not a number" 404 "$(code "${url}api/node/1x")"
expect_eq "no such page" 404 "$(code "${url}etc/passwd")"
curl -s -m 10 -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "${url}api/state" >/dev/null
expect_eq "a header too big: the connection is dropped" 52 $?
python3 - "$port" <<'EOF'
import socket, sys
# clients that go away mid-request, and many at once
for i in range(50):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:" + sys.argv[1].encode() + b"\r\n")
    s.close()
EOF
expect_eq "it still answers" 200 "$(code "${url}api/state")"
out=$(curl -s -D - -o /dev/null "$url")
expect_match "the page runs only its own script" "Content-Security-Policy: default-src 'self'" "$out"

e2e_done
