#!/usr/bin/env bash
# Runs every test: unit and end-to-end suites in a normal build with
# warnings as errors, then again in an AddressSanitizer + UBSan build.
# Exits non-zero if any test fails; the last line is "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh || exit 1

passed=0 failed=0
run_suite() { # build-dir label meson-options...
	local dir=$1 label=$2
	shift 2
	echo "== $label: building $dir"
	if ! tools/build.sh "$dir" "$@"; then
		echo "== $label: build FAILED"
		failed=$((failed + 1))
		return
	fi
	echo "== $label: testing"
	meson test -C "$dir" --print-errorlogs --no-rebuild
	local log=$dir/meson-logs/testlog.json
	local ok bad
	ok=$(grep -c '"result": "OK"' "$log" || true)
	bad=$(grep -c '"result": "\(FAIL\|TIMEOUT\|ERROR\|UNEXPECTEDPASS\)"' "$log" || true)
	passed=$((passed + ok))
	failed=$((failed + bad))
}

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
run_suite build "release (-Werror)" -Dwerror=true
run_suite build-asan "ASan+UBSan" -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
