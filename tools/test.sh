#!/usr/bin/env bash
# Runs every test: unit and end-to-end suites in a normal build with
# warnings as errors, then again, but for the VM suites, in an
# AddressSanitizer + UBSan build, then a short run of each libFuzzer target
# (tests/fuzz) in a clang build.
#
# A suite that does not run (meson's SKIP: no root, no /dev/fuse, no QEMU,
# no CUSE in the guest) counts as a failure unless IBEMU_ALLOW_SKIP=1 is set
# (CI never sets it). The last lines list every suite with its result and
# its own count of checks, then "tests: N passed, M failed, K skipped".
#
# --quick: the release build's unit and native suites only (no QEMU guest,
# no package or image, no ASan or libFuzzer build): a contributor's inner
# loop, about 15 minutes on 2 cores where the whole run takes about 45.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0
case ${1:-} in
--quick) quick=1 ;;
"") ;;
*)
	echo "usage: tools/test.sh [--quick]" >&2
	exit 2
	;;
esac
tools/install-deps.sh || exit 1
# each row's suites are its own ($suites, given per call below): never a
# value the caller's environment happens to hold
unset suites targets
if [ $quick = 1 ]; then
	echo "tests: --quick: the release build's unit and native suites (about 15 minutes on 2 cores)"
else
	echo "tests: three builds (release, ASan+UBSan, libFuzzer), each with its suites, the VM suites in a QEMU guest: about 45 minutes on 2 cores (tools/test.sh --quick: the release build's native suites)"
fi

rows=()
passed=0 failed=0 skipped=0
run_suite() { # build-dir label meson-options...   ($suites: meson test's own arguments; $targets: what to build, all if empty)
	local dir=$1 label=$2
	shift 2
	echo "== $label: building $dir"
	if ! IBEMU_BUILD_TARGETS=${targets:-} tools/build.sh "$dir" "$@"; then
		echo "== $label: build FAILED"
		rows+=("$label	(build)	FAIL	the build failed")
		failed=$((failed + 1))
		return
	fi
	echo "== $label: testing"
	local log=$dir/meson-logs/testlog.json
	rm -f "$log" # never count an earlier run's results
	meson test -C "$dir" --print-errorlogs --no-rebuild ${suites:-}
	local rc=$?
	local table
	if ! table=$(python3 tools/test_summary.py "$label" "$log"); then
		rows+=("$label	(all)	FAIL	meson wrote no test log (exit $rc)")
		failed=$((failed + 1))
		return
	fi
	local line ok=0 bad=0 skip=0
	while IFS= read -r line; do
		rows+=("$line")
		case $(cut -f3 <<<"$line") in
		OK) ok=$((ok + 1)) ;;
		SKIP) skip=$((skip + 1)) ;;
		*) bad=$((bad + 1)) ;;
		esac
	done <<<"$table"
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		rows+=("$label	(meson)	FAIL	meson test exited $rc")
		bad=1
	fi
	passed=$((passed + ok)) failed=$((failed + bad)) skipped=$((skipped + skip))
}

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# what libraries keep for the process's life on purpose (fontconfig's
# font cache, loaded by Graphviz's text layout) is not ibemu's leak
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
if [ $quick = 1 ]; then
	suites="--no-suite vm --no-suite image" run_suite build "release (-Werror)" -Dwerror=true
else
	run_suite build "release (-Werror)" -Dwerror=true
fi
# the VM suites (CUSE, and the comparison with the guest's rdma_rxe) take
# most of the run's time: the release build runs them, the ASan build runs
# every native suite, the verbs ones through the seccomp transport, but
# those of packages and images (the same daemon code, in a package or a
# container) and the repeats (the same hostile checks over FUSE on
# io_uring, a transport e2e-fuse-uring runs here), which one build proves
# (docs/ci.md)
if [ $quick = 0 ]; then
	suites="--no-suite vm --no-suite image --no-suite repeat" run_suite build-asan "ASan+UBSan" \
		-Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	# the fuzz targets alone (tests/fuzz: the alias target `fuzz`), not the
	# whole tree a third time
	CXX=clang++ suites="--suite fuzz" targets=fuzz run_suite build-fuzz "libFuzzer" \
		-Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi

echo
echo "== summary"
printf '%s\n' "${rows[@]}" | column -t -s $'\t'
echo "tests: $passed passed, $failed failed, $skipped skipped"
if [ "$skipped" -gt 0 ] && [ "${IBEMU_ALLOW_SKIP:-0}" != 1 ]; then
	echo "tests: $skipped suite(s) did not run (see SKIP above); that is a failure unless IBEMU_ALLOW_SKIP=1"
	exit 1
fi
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
