#!/usr/bin/env bash
# The VM rdma_cm suite: stock librdmacm programs over ibemu's rdma_cm CUSE
# device, next to rdma_rxe, in a guest that boots Debian's generic kernel.
# usage: rdma_cm_suite.sh IBEMU_BINARY
set -u
here=$(cd "$(dirname "$0")" && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm suite: no qemu-system-x86_64; skipped"; exit 77; }
ibemu=$(abs "$1")
"$here/setup.sh" || exit 1
work=$(mktemp -d /tmp/ibemu-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
VM_TIMEOUT=${VM_TIMEOUT:-900} "$here/vm-run" bash "$here/../e2e/rdma_cm_tools.sh" "$ibemu"
