# shellcheck shell=bash
# Helpers for the end-to-end suites: instances with private run directories,
# tools run inside them, and assertions that print what they compared.
#
# A suite passes only if it made at least one check, none failed, every
# instance went down cleanly (no forced kill) and no daemon printed a
# sanitizer report.

pass=0
fail=0
finished=0

# Every tool gets this long before it is called hung: a guard against a
# hang, not a measure of speed (ASan builds in the TCG guest are slow).
tool_timeout=${IBEMU_TOOL_TIMEOUT:-300}

e2e_setup() { # suite name
	suite=$1
	if [ "$(id -u)" -ne 0 ] || [ ! -w /dev/fuse ]; then
		echo "$suite: needs root and /dev/fuse; skipped"
		exit 77
	fi
	work=$(mktemp -d "/tmp/ibemu-$suite.XXXXXX")
	export IBEMU_RUN_DIR=$work/run
	trap e2e_cleanup EXIT
}

# need_tools TOOL...: the suite is skipped unless every TOOL is on PATH
need_tools() {
	local t
	for t in "$@"; do
		if ! command -v "$t" >/dev/null; then
			echo "$suite: needs $t (tools/install-deps.sh); skipped"
			exit 77
		fi
	done
}

# verbs_transport: how the suite's instances give programs under `ibemu
# exec` their verbs and rdma_cm devices, as `ibemu up` takes it from
# IBEMU_TRANSPORT (set $transport): cuse (character devices; the VM
# suites, in a guest whose kernel has CUSE) or seccomp (the daemon's
# filter; the native suites; auto, the default, is seccomp). FUSE files
# alone serve no verbs: the suite skips there, and where CUSE is asked for
# but /dev/cuse is missing.
verbs_transport() {
	transport=${IBEMU_TRANSPORT:-auto}
	case $transport in
	auto | seccomp) transport=seccomp ;;
	cuse)
		[ -w /dev/cuse ] || { echo "$suite: IBEMU_TRANSPORT=cuse and no /dev/cuse; skipped"; exit 77; }
		;;
	*)
		echo "$suite: verbs need IBEMU_TRANSPORT=seccomp or cuse, not $transport; skipped"
		exit 77
		;;
	esac
}

# expect_exec_transport INSTANCE: its programs reach the devices the way
# $transport says (the daemon's "exec_transport")
expect_exec_transport() {
	local out
	out=$("$ibemu" status --instance "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["exec_transport"])')
	expect_eq "programs under exec in $1 go through $transport" "$transport" "$out"
}

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }

expect_eq() { # what expected actual
	if [ "$2" == "$3" ]; then ok; else bad "$1"; printf '  expected: %s\n  actual:   %s\n' "$2" "$3"; fi
}
expect_match() { # what regex text
	if grep -Eq -- "$2" <<<"$3"; then ok; else bad "$1"; printf '  no line matches: %s\n  in:\n%s\n' "$2" "$(sed 's/^/    /' <<<"$3" | head -40)"; fi
}

# inst INSTANCE CMD...: run a tool inside an instance
# the path of an instance's FUSE requests is the one asked for: io_uring
# under IBEMU_FUSE_URING=on (the *-uring meson tests), else /dev/fuse
expect_fuse_requests() { # instance
	local want=/dev/fuse out
	[ "${IBEMU_FUSE_URING:-}" = on ] && want=io_uring
	out=$("$ibemu" status --instance "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fuse_requests"])')
	expect_eq "FUSE requests of $1 go through $want" "$want" "$out"
}
inst() { local i=$1; shift; timeout "$tool_timeout" "$ibemu" exec --instance "$i" -- "$@" 2>&1; }

# wait_for INSTANCE SECONDS CMD...: until CMD succeeds inside the instance
wait_for() {
	local i=$1 t=$2; shift 2
	local end=$((SECONDS + t))
	while [ $SECONDS -lt $end ]; do
		inst "$i" "$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# start_opensm INSTANCE PORT_GUID: the master SM, in the background (its log
# kept under 64 MB: an SM left behind by a killed run must not fill a disk)
start_opensm() {
	mkdir -p "$work/$1.osm"
	OSM_CACHE_DIR=$work/$1.osm "$ibemu" exec --instance "$1" -- \
		opensm -g "$2" -f "$work/$1.osm/opensm.log" -L 64 -s 0 >"$work/$1.osm/out" 2>&1 &
	echo $! >"$work/$1.opensm.pid"
}

# stop_opensm INSTANCE: stop it and wait for it, before its devices go
# (an OpenSM whose umad device disappears hangs in its shutdown)
stop_opensm() {
	local f=$work/$1.opensm.pid pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	rm -f "$f"
	kill "$pid" 2>/dev/null || return 0
	local end=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		bad "OpenSM of $1 did not stop on SIGTERM"
		kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

# sanitizer_check INSTANCE: the daemon's stderr holds no sanitizer report
sanitizer_check() {
	local out=$IBEMU_RUN_DIR/$1/ibemud.out
	[ -f "$out" ] || return 0
	no_sanitizer_report "ibemud of $1" "$out"
	rm -f "$out"
}

# no_sanitizer_report WHO FILE: FILE (a daemon's output) holds no report
no_sanitizer_report() {
	if grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:|UndefinedBehaviorSanitizer' "$2"; then
		bad "$1 printed a sanitizer report"
		sed 's/^/    /' "$2" | head -60
	fi
}

# perftest_untimed NAME: the flag that keeps perftest NAME's own clock out
# of a run's outcome. perftest times in CPU cycles and measures their rate
# first; in a TCG guest on a busy host that measurement comes out too noisy
# ("Correlation coefficient r^2 < 0.9"; 19 of 80 ib_send_bw runs in the VM
# with the host's two cores loaded 8 deep, as often at 20 iterations as at
# 200). A bandwidth tool then exits 1 right after its header ("Can't produce
# a report", at the top of its output: stderr, above what stdout flushed at
# exit), and its peer fails the closing handshake ("Unable to read to
# socket/rdma_cm"): a run that looks stuck. -F makes a bandwidth tool
# report zero rates instead, -C makes a latency tool count cycles without
# measuring their rate (it would print inf). The checks look at statuses
# and counts, never at rates.
perftest_untimed() {
	case $1 in
	*_lat) echo -C ;;
	*) echo -F ;;
	esac
}

# down_inst INSTANCE: its SM first, then the instance; down must stop the
# daemon without a forced kill, the daemon must be clean, and the run
# directory goes (kept by --keep-logs until the daemon's output is read)
down_inst() {
	stop_opensm "$1"
	local out
	out=$("$ibemu" down --keep-logs --instance "$1" 2>&1)
	expect_eq "down $1 exits 0" 0 $?
	out=$(grep -v -e 'is down' -e 'logs kept in' <<<"$out")
	[ -n "$out" ] && printf '  down said: %s\n' "$out"
	sanitizer_check "$1"
	rm -rf "${IBEMU_RUN_DIR:?}/$1"
}

# every instance still up, then the leftovers
e2e_teardown() {
	local d
	for d in "$IBEMU_RUN_DIR"/*/; do
		[ -d "$d" ] || continue
		if [ -f "$d/pid" ]; then down_inst "$(basename "$d")"; else sanitizer_check "$(basename "$d")"; fi
	done
}

e2e_cleanup() {
	[ "$finished" = 1 ] || e2e_teardown
	rm -rf "$work"
}

e2e_done() {
	e2e_teardown
	finished=1
	echo "$suite: $pass passed, $fail failed"
	[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}
