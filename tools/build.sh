#!/usr/bin/env bash
# Configures and builds one build directory with exactly the options given.
# A directory configured earlier with other options is wiped and configured
# again, so a build never silently keeps options nobody asked for.
# Used by demo.sh and test.sh.
# usage: tools/build.sh DIR [meson options...]
# IBEMU_BUILD_TARGETS: build only these targets (meson compile's names),
# not the whole tree
set -euo pipefail
dir=$1
shift
cd "$(dirname "$0")/.."
want="CXX=${CXX:-} $*"
stamp=$dir/ibemu-options
if [ -f "$dir/build.ninja" ] && [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	echo "build: $dir was configured with other options; configuring it again" >&2
	rm -rf "$dir"
fi
if [ ! -f "$dir/build.ninja" ]; then
	mkdir -p "$dir"
	meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log" >&2; exit 1; }
	rm -f "$dir.setup.log"
	printf '%s' "$want" >"$stamp"
fi
# progress every tenth of the way ("build: 40% built (452/1130)"), on a
# terminal or not; the whole output only when the build fails
meson compile -C "$dir" ${IBEMU_BUILD_TARGETS:-} 2>&1 | tee "$dir.compile.log" | tr '\r' '\n' | awk -v dir="$dir" '
	match($0, /^\[[0-9]+\/[0-9]+\]/) {
		split(substr($0, 2, RLENGTH - 2), nm, "/")
		step = int(nm[1] * 10 / nm[2])
		if (step > shown) { shown = step; printf "%s: %d%% built (%d/%d)\n", dir, step * 10, nm[1], nm[2] > "/dev/stderr"; fflush("/dev/stderr") }
	}' || { cat "$dir.compile.log" >&2; exit 1; }
rm -f "$dir.compile.log"
