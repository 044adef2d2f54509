#!/usr/bin/env bash
# The VM verbs suite: stock libibverbs programs over uverbs CUSE devices in
# a guest that boots Debian's generic kernel (the host kernel has no CUSE).
# usage: verbs_suite.sh IBEMU_BINARY UVERBS_PROBE VERBS_REUSE
set -u
here=$(cd "$(dirname "$0")" && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm suite: no qemu-system-x86_64; skipped"; exit 77; }
ibemu=$(abs "$1")
probe=$(abs "$2")
reuse=$(abs "$3")
"$here/setup.sh" || exit 1
work=$(mktemp -d /tmp/ibemu-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
VM_TIMEOUT=${VM_TIMEOUT:-900} "$here/vm-run" bash "$here/../e2e/verbs_tools.sh" "$ibemu" "$probe" "$reuse"
