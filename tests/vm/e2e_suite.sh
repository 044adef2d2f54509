#!/usr/bin/env bash
# A VM suite: boots Debian's generic kernel under QEMU (the host kernel has
# no CUSE) and runs one end-to-end script of tests/e2e there, with the
# host's root read-only over 9p. Arguments that name files are made
# absolute: the guest runs from a scratch directory.
# usage: e2e_suite.sh E2E_SCRIPT ARGS...   (e.g. core_tools.sh build/tools/ibemu)
set -u
here=$(cd "$(dirname "$0")" && pwd)
command -v qemu-system-x86_64 >/dev/null || { echo "vm suite: no qemu-system-x86_64; skipped"; exit 77; }
script=$here/../e2e/$1
shift
args=()
for a in "$@"; do
	if [ -e "$a" ]; then args+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")"); else args+=("$a"); fi
done
"$here/setup.sh" || exit 1
work=$(mktemp -d /tmp/ibemu-vm.XXXXXX) # unique per run: parallel jobs never share it
trap 'rm -rf "$work"' EXIT
cd "$work"
VM_TIMEOUT=${VM_TIMEOUT:-900} "$here/vm-run" bash "$script" "${args[@]}"
