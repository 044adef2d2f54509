#!/usr/bin/env bash
# tools/build.sh and tools/test.sh as a contributor meets them: progress
# outside a terminal, the whole log only when a build fails, the quick
# run's one build and native suites, usage errors. The scripts run in a
# scratch copy of tools/ with a stand-in `meson` on PATH that records what
# it is asked and answers as meson does (the real builds take minutes).
# usage: scripts.sh SOURCE_ROOT
set -u
src=$1
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d /tmp/ibemu-scripts.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/tools" "$work/bin"
cp "$src/tools/build.sh" "$src/tools/test.sh" "$src/tools/test_summary.py" "$work/repo/tools/"
printf '#!/bin/sh\nexit 0\n' >"$work/repo/tools/install-deps.sh" # everything is installed
chmod +x "$work/repo/tools/"*.sh
calls=$work/meson-calls

# the stand-in: `setup DIR OPTS`, `compile -C DIR` (20 steps, as ninja
# prints them; FAKE_COMPILE_FAIL=1 fails at step 13), `test -C DIR ARGS`
# (a testlog.json of two suites; FAKE_TEST_FAIL names one that fails)
cat >"$work/bin/meson" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$MESON_CALLS"
case $1 in
setup) mkdir -p "$2" && : >"$2/build.ninja" ;;
compile)
	for i in $(seq 1 20); do
		if [ "${FAKE_COMPILE_FAIL:-}" = 1 ] && [ "$i" = 13 ]; then
			echo "[13/20] Compiling C++ object emu/broken.cpp.o"
			echo "emu/broken.cpp:7:1: error: expected ';' before '}' token"
			exit 1
		fi
		echo "[$i/20] Compiling C++ object obj$i.o"
	done ;;
test)
	dir=$3
	mkdir -p "$dir/meson-logs"
	for s in unit e2e-demo; do
		r=OK
		[ "${FAKE_TEST_FAIL:-}" = "$s" ] && r=FAIL
		printf '{"name": "%s", "result": "%s", "stdout": "%s: 3 passed, 0 failed\\n"}\n' "$s" "$r" "$s"
	done >"$dir/meson-logs/testlog.json"
	[ -z "${FAKE_TEST_FAIL:-}" ] ;;
esac
EOF
chmod +x "$work/bin/meson"
export PATH=$work/bin:$PATH MESON_CALLS=$calls
cd "$work/repo"

# --- build.sh: progress every tenth, on stderr, with no terminal
: >"$calls"
out=$(tools/build.sh b1 -Dwerror=true 2>&1 >/dev/null </dev/null)
expect "build.sh succeeds" 0 $?
expect "a progress line per tenth" 10 "$(grep -c '^b1: [0-9]*% built' <<<"$out")"
expect "the first tenth" "b1: 10% built (2/20)" "$(head -1 <<<"$out")"
expect "the last line" "b1: 100% built (20/20)" "$(tail -1 <<<"$out")"
expect "the compiler's lines are kept back" 0 "$(grep -c Compiling <<<"$out")"
expect "configured once with the options given" "setup b1 -Dwerror=true" "$(grep '^setup' "$calls")"

expect "no log left behind on success" "" "$(ls b1.compile.log b1.setup.log 2>/dev/null)"

# the same options again: no new configuration; other options: a new one
: >"$calls"
tools/build.sh b1 -Dwerror=true >/dev/null 2>&1
expect "same options: not configured again" "" "$(grep '^setup' "$calls")"
out=$(tools/build.sh b1 -Dbuildtype=debug 2>&1)
expect "other options: said" 1 "$(grep -c 'configured with other options; configuring it again' <<<"$out")"
expect "other options: configured again" "setup b1 -Dbuildtype=debug" "$(grep '^setup' "$calls")"

# a failed build: its exit status and the whole compiler output
out=$(FAKE_COMPILE_FAIL=1 tools/build.sh b1 -Dbuildtype=debug 2>&1)
expect "a failed build exits 1" 1 $?
expect "the error is shown" 1 "$(grep -c "emu/broken.cpp:7:1: error" <<<"$out")"
expect "with the steps before it" 1 "$(grep -c '^\[12/20\] Compiling' <<<"$out")"

# --- test.sh: usage
out=$(tools/test.sh --bogus 2>&1)
expect "test.sh --bogus exits 2" 2 $?
expect "and prints the usage" "usage: tools/test.sh [--quick]" "$out"

# --- test.sh --quick: the release build only, no VM or image suites
: >"$calls"
out=$(tools/test.sh --quick 2>&1)
expect "--quick passes" 0 $?
expect "--quick states its cost" 1 "$(grep -c 'about 15 minutes' <<<"$out")"
expect "--quick: one build, with -Werror" "setup build -Dwerror=true" "$(grep '^setup' "$calls")"
expect "--quick: the native suites" "test -C build --print-errorlogs --no-rebuild --no-suite vm --no-suite image" \
	"$(grep '^test' "$calls")"
expect "--quick: the counts" "tests: 2 passed, 0 failed, 0 skipped" "$(tail -1 <<<"$out")"
expect "--quick: each suite's own count" 1 "$(grep -cE '^release \(-Werror\) +unit +OK +3 checks passed, 0 failed' <<<"$out")"

# a failing suite fails the run and is named
out=$(FAKE_TEST_FAIL=e2e-demo tools/test.sh --quick 2>&1)
expect "a failed suite fails the run" 1 $?
expect "and is named in the summary" 1 "$(grep -cE '^release \(-Werror\) +e2e-demo +FAIL' <<<"$out")"

# --- the whole run: three builds; the VM suites in the release build only
: >"$calls"
rm -rf build build-asan build-fuzz
out=$(tools/test.sh 2>&1)
expect "the whole run passes" 0 $?
expect "it states its cost" 1 "$(grep -c 'about 45 minutes' <<<"$out")"
expect "three builds" "build build-asan build-fuzz" "$(awk '/^setup/ {print $2}' "$calls" | xargs)"
expect "the release build runs every suite" "test -C build --print-errorlogs --no-rebuild" \
	"$(grep '^test -C build ' "$calls")"
expect "the ASan build leaves out the VM suites" 1 "$(grep -c '^test -C build-asan .*--no-suite vm' "$calls")"
expect "the ASan build leaves out the repeats" 1 "$(grep -c '^test -C build-asan .*--no-suite repeat' "$calls")"
expect "the release build runs the repeats" 0 "$(grep -c '^test -C build .*--no-suite repeat' "$calls")"
expect "the fuzz build runs the fuzzers" 1 "$(grep -c '^test -C build-fuzz .*--suite fuzz' "$calls")"
expect "the fuzz build builds the fuzzers alone" "compile -C build-fuzz fuzz" "$(grep '^compile -C build-fuzz' "$calls")"
expect "the other builds build everything" "compile -C build|compile -C build-asan" \
	"$(grep -E '^compile -C build(-asan)? *$' "$calls" | sed 's/ *$//' | paste -sd'|')"
expect "the whole run's counts" "tests: 6 passed, 0 failed, 0 skipped" "$(tail -1 <<<"$out")"

cli_done cli-scripts
