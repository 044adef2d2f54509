# shellcheck shell=bash
# Helpers for the end-to-end suites: instances with private run directories,
# tools run inside them, and assertions that print what they compared.

pass=0
fail=0

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

e2e_cleanup() {
	for pid in $(cat "$work"/*.opensm.pid 2>/dev/null); do kill "$pid" 2>/dev/null; done
	for d in "$IBEMU_RUN_DIR"/*/; do
		[ -d "$d" ] && "$ibemu" down --instance "$(basename "$d")" >/dev/null 2>&1
	done
	rm -rf "$work"
}

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }

expect_eq() { # what expected actual
	if [ "$2" == "$3" ]; then ok; else bad "$1"; printf '  expected: %s\n  actual:   %s\n' "$2" "$3"; fi
}
expect_match() { # what regex text
	if grep -Eq -- "$2" <<<"$3"; then ok; else bad "$1"; printf '  no line matches: %s\n  in:\n%s\n' "$2" "$(sed 's/^/    /' <<<"$3" | head -40)"; fi
}

# inst INSTANCE CMD...: run a tool inside an instance (20 s limit)
inst() { local i=$1; shift; timeout 20 "$ibemu" exec --instance "$i" -- "$@" 2>&1; }

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

# start_opensm INSTANCE PORT_GUID: the master SM, in the background
start_opensm() {
	mkdir -p "$work/$1.osm"
	OSM_CACHE_DIR=$work/$1.osm "$ibemu" exec --instance "$1" -- \
		opensm -g "$2" -f "$work/$1.osm/opensm.log" -s 0 >"$work/$1.osm/out" 2>&1 &
	echo $! >"$work/$1.opensm.pid"
}

e2e_done() {
	echo "$suite: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
