#!/usr/bin/env bash
# Runs a bench script in the QEMU guest of the VM suite (verbs need CUSE),
# with IBEMU_IN_VM=1 telling the script it is inside, and removes the
# scratch directory the guest shared afterwards.
# usage: bench/vm_bench.sh TIMEOUT_SECONDS SCRIPT ARGS...
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
timeout=$1
shift
"$here/tests/vm/setup.sh"
work=$(mktemp -d /tmp/ibemu-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
VM_TIMEOUT=$timeout "$here/tests/vm/vm-run" env IBEMU_IN_VM=1 bash "$@"
