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
expect_eq "the page starts its capture of recent MADs" 200 "$(code "${url}api/state")"
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
out=$(curl -s -m 20 "${url}api/state" | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(any(m["port"] == "\ufffd\ufffd host1:1" for m in s["mads"]),
      any(m["text"].endswith("\"\ufffd\ufffd host1\": \"\ufffd\ufffd host1\"") for m in s["mads"]))')
expect_eq "the page's recent MADs: JSON, naming host1 and its answer with U+FFFD" "True True" "$out"
out=$(curl -s -m 20 "${url}api/node/2" | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
expect_eq "the node's page: JSON, with U+FFFD" "$fffd$fffd host1" "$out"
expect_eq "and its picture" 200 "$(code "${url}api/picture.svg")"
out=$("$ibemu" capture --instance $W --port "$(printf '\377\376 host1'):9" -c 1 2>&1)
expect_eq "a capture of such a name's port 9 is refused" 1 $?
expect_match "saying why, with U+FFFD" "no node \"$fffd$fffd host1\"" "$out"
healthy "a refused capture of such a name"
inst $W sh -c "printf 'ibemu-host1 HCA-1' >/sys/class/infiniband/ibemu0/node_desc"

e2e_done
