#!/usr/bin/env bash
# The VM suite: boots Debian's generic kernel under QEMU and runs the core
# tools over the CUSE transport there (the host kernel has no CUSE).
# usage: cuse_suite.sh IBEMU_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
ibemu=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v qemu-system-x86_64 >/dev/null || { echo "vm suite: no qemu-system-x86_64; skipped"; exit 77; }
"$here/setup.sh" || exit 1
work=$(mktemp -d /tmp/ibemu-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
VM_TIMEOUT=${VM_TIMEOUT:-900} "$here/vm-run" bash "$here/../e2e/core_tools.sh" "$ibemu"
