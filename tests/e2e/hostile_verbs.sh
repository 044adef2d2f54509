#!/usr/bin/env bash
# Hostile users of verbs and rdma_cm (issue 38, items 6 and 7), natively
# under `ibemu exec` (the seccomp transport): a caller with ~64k mappings
# of its own registers memory and gets the right answers (the daemon asks
# PROCMAP_QUERY about the range, not the whole map); MIGRATE_ID takes an ID
# only from the very file the caller names and holds (the kernel's errnos);
# rdma_cm ports below 1024 want CAP_NET_BIND_SERVICE; one user holds at
# most 3/4 of the device's PDs (EAGAIN past it), others and root go on
# (the rdma cgroup's rdma.max: unit tests, where the kernel has no rdma
# controller, as on the CI host); CAP_IPC_LOCK in a user namespace of
# its own does not lift RLIMIT_MEMLOCK.
# usage: hostile_verbs.sh IBEMU_BINARY UVERBS_PROBE UCMA_PROBE
set -u
ibemu=$1
uverbs_probe=$2
ucma_probe=$3
. "$(dirname "$0")/lib.sh"
e2e_setup hostile-verbs
verbs_transport
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)

S=hverbs-$$
out=$("$ibemu" up --instance $S 2>&1)
expect_eq "up" 0 $?
expect_exec_transport $S

# --- item 6: REG_MR by a caller with 65,000 mappings
out=$(inst $S "$uverbs_probe" many-maps /dev/infiniband/uverbs0 65000)
expect_eq "many mappings: every answer the kernel's" 0 $?
expect_match "the mappings were made" '^mappings made: all$' "$out"
expect_match "the last of them, writable: registered" '^reg the last page, writable: ok$' "$out"
expect_match "a read-only one asked writable: EFAULT" '^reg a read-only page, writable: Bad address$' "$out"
expect_match "across 64 of them, writable: EFAULT" '^reg across 64 mappings, writable: Bad address$' "$out"

# --- item 7: MIGRATE_ID's errnos, and the file it names must hold the ID
out=$(inst $S "$ucma_probe" migrate)
expect_eq "migrate: every answer the kernel's" 0 $?
expect_match "a descriptor not open: ENOENT" '^migrate through a descriptor not open: No such file or directory$' "$out"
expect_match "not an rdma_cm file: EINVAL" '^migrate through a file not rdma_cm: Invalid argument$' "$out"
expect_match "an ID of another file of the same process: EINVAL" \
	'^migrate an ID that is not the named file.s: Invalid argument$' "$out"
expect_match "from the file that has it: ok" '^migrate from the file that has it: ok$' "$out"
expect_match "from a file inherited, not opened: ok" '^migrate from a file inherited, not opened: ok$' "$out"

# --- item 7: rdma_cm ports below 1024
out=$(inst $S "${nobody[@]}" "$ucma_probe" bind-port 0.0.0.0 100)
expect_match "port 100 without CAP_NET_BIND_SERVICE: EACCES" '^bind 100: Permission denied$' "$out"
out=$(inst $S "${nobody[@]}" "$ucma_probe" bind-port 0.0.0.0 1024)
expect_match "port 1024 as anyone: ok" '^bind 1024: ok$' "$out"
out=$(inst $S "$ucma_probe" bind-port 0.0.0.0 100)
expect_match "port 100 as root: ok" '^bind 100: ok$' "$out"

# --- CAP_IPC_LOCK of a user namespace of one's own (unshare -Ur) is not
# the kernel's capable(): REG_MR stays within RLIMIT_MEMLOCK (ENOMEM past
# it, EPERM at 0) as for anyone else
out=$(inst $S "${nobody[@]}" unshare -Ur "$uverbs_probe" pin /dev/infiniband/uverbs0)
expect_eq "pinning as root of a user namespace of its own: RLIMIT_MEMLOCK applies" 0 $?
expect_match "the 9th page is ENOMEM" '^reg 1 more \(9 > 8\): Cannot allocate memory$' "$out"

# --- item 7: one user cannot take all of the device's PDs
fifo=$work/hold
mkfifo "$fifo"
PROBE_HOLD=1 inst $S "${nobody[@]}" "$uverbs_probe" pd-share /dev/infiniband/uverbs0 <"$fifo" >"$work/share.out" &
holder=$!
exec 7>"$fifo"
wait_file() { local i; for i in $(seq 100); do grep -q '^pds' "$1" 2>/dev/null && return; sleep 0.1; done; }
wait_file "$work/share.out"
expect_match "user 65534 gets 3/4 of the 1024 PDs, then EAGAIN" '^pds 768: Resource temporarily unavailable$' \
	"$(cat "$work/share.out")"
out=$(inst $S setpriv --reuid=65533 --regid=65533 --clear-groups "$uverbs_probe" pd-share /dev/infiniband/uverbs0)
expect_match "meanwhile another user still gets PDs (the rest of the device: 256)" '^pds 256: Cannot allocate memory$' "$out"
exec 7>&-
wait $holder
out=$(inst $S "$uverbs_probe" pd-share /dev/infiniband/uverbs0)
expect_match "once they are given back, root gets all 1024" '^pds 1024: Cannot allocate memory$' "$out"

# the rdma cgroup's rdma.max is honoured too (emu/rdma_cgroup.h), but a
# kernel without the rdma controller has no rdma.max to set: there only
# the unit tests ([rdma_cgroup]) check it
if ! grep -qw '^rdma' /proc/cgroups; then
	echo "note: this kernel has no rdma cgroup controller; rdma.max is checked by the unit tests only"
fi

down_inst $S
e2e_done
