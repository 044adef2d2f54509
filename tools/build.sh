#!/usr/bin/env bash
# Configures (once) and builds one build directory. Used by demo.sh and test.sh.
# usage: tools/build.sh DIR [meson options...]
set -euo pipefail
dir=$1
shift
cd "$(dirname "$0")/.."
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log" >&2; exit 1; }
	rm -f "$dir.setup.log"
fi
meson compile -C "$dir" >"$dir.compile.log" 2>&1 || { cat "$dir.compile.log" >&2; exit 1; }
rm -f "$dir.compile.log"
