#!/usr/bin/env bash
# Configures and builds one build directory with exactly the options given.
# A directory configured earlier with other options is wiped and configured
# again, so a build never silently keeps options nobody asked for.
# Used by demo.sh and test.sh.
# usage: tools/build.sh DIR [meson options...]
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
meson compile -C "$dir" >"$dir.compile.log" 2>&1 || { cat "$dir.compile.log" >&2; exit 1; }
rm -f "$dir.compile.log"
