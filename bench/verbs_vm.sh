#!/usr/bin/env bash
# Verbs data path figures, in the QEMU guest (verbs need CUSE): RDMA WRITE
# bandwidth for 4 KiB, 64 KiB and 1 MiB messages as a ratio to memcpy
# measured in the same run, and the 8-byte SEND round trip, between the
# two local CAs of the default fabric (across both switches).
# Needs root. usage: bench/verbs_vm.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
runs=${2:-5}
[ -x "$build/bench/verbs_bw" ] || { echo "verbs_vm: build first (needs libibverbs-dev)" >&2; exit 1; }
[ "${IBEMU_IN_VM:-}" = 1 ] || exec "$here/bench/vm_bench.sh" 1200 "$here/bench/verbs_vm.sh" "$build" "$runs"

# --- in the guest
ibemu=$build/tools/ibemu
mkdir -p /etc/modprobe.d
echo "install ib_core /bin/false" >/etc/modprobe.d/ibemu-no-ib-core.conf # libibverbs: sysfs, not netlink
export IBEMU_RUN_DIR=/run/ibemu-bench OSM_CACHE_DIR=/run/ibemu-bench-osm
mkdir -p "$OSM_CACHE_DIR"
"$ibemu" up --instance bench >/dev/null
"$ibemu" exec --instance bench -- opensm -g 0x0002c90300000101 -f /run/osm.log -s 0 >/dev/null 2>&1 &
for _ in $(seq 600); do
	"$ibemu" exec --instance bench -- sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu1 | grep -q "State: Active"' && break
	sleep 0.2
done
echo "verbs data path, ibemu0 -> ibemu1 across both switches, $(nproc) vCPU TCG guest, medians of $runs runs:"
"$ibemu" exec --instance bench -- "$build/bench/verbs_bw" ibemu0 ibemu1 "$runs"
"$ibemu" down --instance bench >/dev/null
