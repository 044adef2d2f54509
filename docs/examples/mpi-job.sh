#!/usr/bin/env bash
# A CI job that runs an MPI program across two hosts of an emulated
# cluster, without Slurm or ssh (docs/cluster.md, "Jobs across hosts"): an
# instance with IPoIB and OpenSM, Open MPI's mpirun on ibemu-host1
# starting two ranks there and two on ibemu-host2 through ibemu-rsh, the
# job's checks (every rank's host, the HCAs' PMA counters moved), and a
# teardown that leaves nothing behind, even when a check fails. Run as
# root, with openmpi-bin and infiniband-diags installed.
#   usage: mpi-job.sh PROGRAM [ARGS...]   (an MPI program, e.g. tests/tools/mpi_hosts.cpp's)
#   IBEMU=/path/to/ibemu   (default: ibemu on PATH; ibemu-rsh is next to it)
#   IBEMU_INSTANCE=NAME    (default: mpi-<pid>, unique per job)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }
ibemu=${IBEMU:-ibemu}
PATH=$(dirname "$(command -v "$ibemu")"):$PATH # where ibemu-rsh is
export IBEMU_INSTANCE=${IBEMU_INSTANCE:-mpi-$$}
program=$(realpath "$1")
shift

# up --sm returns once the ports are ACTIVE and OpenSM is MASTER
"$ibemu" up --ipoib --sm
trap '"$ibemu" down --kill-clients' EXIT
on_host() { local h=$1; shift; "$ibemu" exec --host "$h" -- "$@"; }

# the hosts' ib0 carry the launchers' own connections: wait for a carrier
for _ in $(seq 100); do
	on_host ibemu-host1 ping -c 1 -W 1 10.200.1.1 >/dev/null 2>&1 && break
done
xmit() { on_host "$1" perfquery -x | sed -n 's/^PortXmitData:\.*//p'; }
before=$(xmit ibemu-host1)

on_host ibemu-host1 mpirun --allow-run-as-root -np 4 --host ibemu-host1:2,ibemu-host2:2 \
	--mca plm_rsh_agent ibemu-rsh --mca oob_tcp_if_include ib0 \
	--mca pml ucx --mca btl self,vader -x UCX_TLS=self,sm,rc_verbs,ud_verbs \
	--tag-output sh -c 'hostname; exec "$0" "$@"' "$program" "$@" | tee job.log

# the job's checks: ranks on both hosts, and host1's HCA sent data
grep -q '^\[1,[0-9]*\]<stdout>:ibemu-host1$' job.log
grep -q '^\[1,[0-9]*\]<stdout>:ibemu-host2$' job.log
after=$(xmit ibemu-host1)
echo "ibemu-host1's HCA sent $(((after - before) * 4)) bytes"
[ "$after" -gt "$before" ]
echo "mpi-job: all checks passed"
