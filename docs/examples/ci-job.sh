#!/usr/bin/env bash
# A CI job's use of ibemu (docs/ci.md): an instance with OpenSM, the job's
# own tests under `ibemu exec` (here: saquery, ibping between the two local
# HCAs, perfquery), and a teardown that leaves no process, mount or run
# directory behind, even when a test fails. Run as root.
#   IBEMU=/path/to/ibemu   (default: ibemu on PATH)
#   IBEMU_INSTANCE=NAME    (default: ci-<pid>, unique per job)
set -euo pipefail
ibemu=${IBEMU:-ibemu}
export IBEMU_INSTANCE=${IBEMU_INSTANCE:-ci-$$}

# up --sm returns once both local ports are ACTIVE and OpenSM is MASTER
"$ibemu" up --sm
trap '"$ibemu" down --kill-clients' EXIT

in_ibemu() { "$ibemu" exec -- "$@"; }

# the job's tests
in_ibemu saquery -s | grep -q 'EndPortLid'
lid=$(in_ibemu cat /sys/class/infiniband/ibemu1/ports/1/lid)
in_ibemu ibping -S -C ibemu1 >/dev/null 2>&1 &
for _ in $(seq 50); do # until the server answers
	in_ibemu ibping -C ibemu0 -c 1 $((lid)) >/dev/null 2>&1 && break
	sleep 0.2
done
in_ibemu ibping -C ibemu0 -c 3 $((lid)) | grep -q '3 received'
in_ibemu perfquery -C ibemu1 | grep -q 'PortXmitPkts'
echo "ci-job: all tests passed"
