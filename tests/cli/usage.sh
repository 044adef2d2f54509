#!/usr/bin/env bash
# The CLI's usage errors: every one exits 2 (docs/ibemu.1, faults.md), help
# and version 0; and `up --web -- OPENSM ARGS` gives OpenSM its arguments
# (an optional value right before `--` used to swallow the marker); `up
# --sm` waits for the ports that have a cable; an OpenSM run by hand under
# `exec` caches in the instance, shows in status and ends with `down`.
# usage: usage.sh IBEMU_BINARY TEST_DATA
set -u
ibemu=$1
data=$2
. "$(dirname "$0")/lib.sh"
status_of() { "$ibemu" "$@" >/dev/null 2>&1; echo $?; }

expect "an unknown option" 2 "$(status_of up --bogus)"
expect "a missing argument" 2 "$(status_of link down)"
expect "a value not in the set" 2 "$(status_of up --transport foo)"
expect "a number that is not" 2 "$(status_of link flap --count many x 1)"
expect "an unknown command" 2 "$(status_of frobnicate)"
expect "an empty host: exec" 2 "$(status_of exec --host= -- true)"
expect "an empty host: shell" 2 "$(status_of shell --host '')"
expect "an empty instance: exec" 2 "$(status_of exec --instance '' -- true)"
expect "saying so" "ibemu exec: --host: a name, not an empty word" "$("$ibemu" exec --host '' -- true 2>&1)"
expect "no command" 2 "$(status_of)"
expect "--help" 0 "$(status_of up --help)"
expect "--version" 0 "$(status_of --version)"
out=$("$ibemu" up --bogus 2>&1)
expect "saying what was wrong" "The following argument was not expected: --bogus" "$(head -1 <<<"$out")"

# --- `up --sm --web -- -s 0`: OpenSM runs with -s 0
export IBEMU_RUN_DIR=$(mktemp -d /tmp/ibemu-cli-usage.XXXXXX)
I=cli-usage-$$
trap '"$ibemu" down --instance $I --kill-clients >/dev/null 2>&1; rm -rf "$IBEMU_RUN_DIR"' EXIT
if command -v opensm >/dev/null; then
	"$ibemu" up --instance $I --sm --web -- -s 0 >/dev/null 2>&1
	expect "up --sm --web -- -s 0" 0 $?
	args=
	for p in $(pgrep -x opensm); do
		grep -qF "$IBEMU_RUN_DIR" /proc/$p/cmdline 2>/dev/null && args=$(tr '\0' ' ' </proc/$p/cmdline)
	done
	expect "OpenSM got -s 0" 1 "$(grep -c -- ' -s 0' <<<"$args")"
	"$ibemu" down --instance $I --kill-clients >/dev/null 2>&1
	# --- a CA with an uncabled port (ibsim's own example): up --sm waits
	# for the cabled ports only, and says which have no cable
	out=$("$ibemu" up --instance $I --sm --wait-timeout 60 --topology "$data/topology/net.2sw2path4hca" 2>&1)
	expect "up --sm with uncabled ports" 0 $?
	expect "the cabled ports Active" 2 "$(grep -c 'port 1: .* ACTIVE/LinkUp' <<<"$out")"
	expect "naming the uncabled ones" 2 "$(grep -c 'ibemu up: ibemu[01] port 2 has no cable (Polling); not waited for' <<<"$out")"
	"$ibemu" down --instance $I --kill-clients >/dev/null 2>&1
	# --- an OpenSM run by hand (the tutorial's chapter 3) caches in the
	# instance, not in the machine's /var/cache/opensm
	before=$(stat -c %Y /var/cache/opensm/guid2lid 2>/dev/null || echo none)
	"$ibemu" up --instance $I >/dev/null 2>&1
	timeout 60 "$ibemu" exec --instance $I -- opensm -o -s 0 -g 0x0002c90300000101 >/dev/null 2>&1
	expect "opensm -o by hand" 0 $?
	expect "its cache is the instance's (6 nodes, 8 LIDs)" 8 "$(grep -c '^0x' "$IBEMU_RUN_DIR/$I/opensm/cache/guid2lid")"
	expect "the machine's is untouched" "$before" "$(stat -c %Y /var/cache/opensm/guid2lid 2>/dev/null || echo none)"
	# --- one left running: status names it; down (without --kill-clients)
	# ends it first, as it would spin deaf to SIGTERM once its umad file fails
	"$ibemu" exec --instance $I -- opensm -s 0 >/dev/null 2>&1 &
	sm=$!
	for _ in $(seq 100); do
		"$ibemu" status --instance $I | grep -q '(opensm): 2 files' && break
		sleep 0.1
	done
	out=$("$ibemu" status --instance $I)
	expect "status names the hand-run OpenSM" 1 "$(grep -Ec '^    pid [0-9]+ \(opensm\): 2 files$' <<<"$out")"
	out=$("$ibemu" down --instance $I 2>&1)
	expect "down ends it first" 1 "$(grep -c '^ibemu down: ending the OpenSM started by hand' <<<"$out")"
	wait $sm 2>/dev/null
	left=0
	for p in $(pgrep -x opensm); do grep -qF "$IBEMU_RUN_DIR" /proc/$p/environ 2>/dev/null && left=1; done
	expect "no OpenSM left" 0 "$left"
else
	echo "usage: no opensm; the --web -- check did not run"
fi

cli_done cli-usage
