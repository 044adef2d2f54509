#!/usr/bin/env bash
# libfabric over ibemu (docs/rdma-cm.md, "Middleware"): its verbs provider
# finds each HCA through the IPoIB interface of its host (`up --ipoib`),
# lists `verbs;ofi_rxm`, and runs fi_pingpong's reliable datagrams
# (ofi_rxm over connected verbs endpoints, its connections made by
# rdma_cm) and its connected endpoints between two hosts; then a two-rank
# Open MPI job over Open MPI's ofi MTL (`--mca pml cm --mca mtl ofi`,
# FI_PROVIDER="verbs;ofi_rxm"), one rank on each HCA of a host, whose
# messages cross the fabric: both ports' PMAs count them; and the same
# job over UCX (`--mca pml ucx`). As nobody, ofi_rxm's large CQ wants an
# RLIMIT_MEMLOCK above 8 MiB (ENOMEM). The topology is
# tests/data/hosts.topo (hosta: two HCAs, hostb: one).
# usage: mpi_ofi.sh IBEMU_BINARY TOPOLOGY_DIR [MPI_OFI_CHECK]
set -u
ibemu=$1
data=$2
mpi_check=${3:-}
. "$(dirname "$0")/lib.sh"
e2e_setup mpi-ofi
verbs_transport
for t in fi_info fi_pingpong; do
	command -v $t >/dev/null || { echo "mpi-ofi: needs $t (libfabric-bin, tools/install-deps.sh); skipped"; exit 77; }
done
python3 -c 'import os; os.open("/dev/net/tun", os.O_RDWR)' 2>/dev/null ||
	{ echo "mpi-ofi: no TUN driver here, so no ib0 for libfabric; skipped"; exit 77; }
chmod 755 "$work"

M=mpiofi-$$
"$ibemu" up --instance $M --ipoib --topology "$data/hosts.topo" --local "hosta HCA-1,hosta HCA-2,hostb HCA-1" \
	>/dev/null 2>&1
expect_eq "up" 0 $?
start_opensm $M 0x0002c90300000101
wait_for $M 120 sh -c 'for d in ibemu0 ibemu1 ibemu2; do ibstat $d | grep -q "State: Active" || exit 1; done'
expect_eq "OpenSM brings the three ports up" 0 $?

on() { local h=$1; shift; timeout "$tool_timeout" "$ibemu" exec --instance $M --host "$h" -- "$@"; }
# xmit DEV: the port's PortXmitData (in 4-byte words), read from the instance
xmit() { inst $M perfquery -x -C "$1" -P 1 | sed -n 's/^PortXmitData:\.*//p'; }

# the provider takes each HCA's address from its host's ib0, ib1
out=$(on hosta fi_info -p 'verbs;ofi_rxm' -v 2>&1 | grep -E '^ *(name|src_addr):' | sort -u)
expect_match "fi_info on hosta: verbs;ofi_rxm on ibemu0 at ib0's address" \
	'src_addr: fi_sockaddr_in://10\.200\.0\.1:0' "$out"
expect_match "fi_info on hosta: and on ibemu1 at ib1's" 'src_addr: fi_sockaddr_in://10\.200\.1\.1:0' "$out"
expect_match "fi_info on hosta: ibemu1's domain" 'name: ibemu1$' "$out"

# pingpong NAME ENDPOINT PROVIDER [WRAPPER...]: a server on hostb, a
# client on hosta, each run through WRAPPER (a user, a limit) if given (a
# client that comes before its server listens is refused on the
# out-of-band socket, and runs again); prints both exit statuses
pingpong() {
	local name=$1 e=$2 p=$3 rc runs=1
	shift 3
	on hostb "$@" fi_pingpong -p "$p" -e "$e" -I 100 -S 64 >"$work/$name.server" 2>&1 &
	local server=$!
	sleep 1
	on hosta "$@" fi_pingpong -p "$p" -e "$e" -I 100 -S 64 10.200.2.1 >"$work/$name.client" 2>&1
	rc=$?
	while [ $rc -ne 0 ] && [ $runs -lt 5 ] && kill -0 $server 2>/dev/null &&
		grep -q 'Connection refused' "$work/$name.client"; do
		sleep 2
		on hosta "$@" fi_pingpong -p "$p" -e "$e" -I 100 -S 64 10.200.2.1 >"$work/$name.client" 2>&1
		rc=$?
		runs=$((runs + 1))
	done
	wait $server
	local src=$?
	# a pair that failed shows what both said, in the suite's log
	[ "$rc $src" = "0 0" ] || [ "$name" = low ] ||
		{ echo "--- $name: client"; cat "$work/$name.client"; echo "--- $name: server"; cat "$work/$name.server"; } >&2
	echo "$rc $src"
}

before=$(xmit ibemu2)
rcs=$(pingpong rxm rdm 'verbs;ofi_rxm')
expect_eq "fi_pingpong -p 'verbs;ofi_rxm' -e rdm hosta -> hostb: client and server exit 0" "0 0" "$rcs"
expect_match "fi_pingpong ofi_rxm: 100 messages of 64 bytes" '^64 +100 +=100 ' "$(cat "$work/rxm.client")"
after=$(xmit ibemu2)
expect_eq "fi_pingpong ofi_rxm: hostb's port sent its 100 answers (6,400 bytes and more)" 1 \
	"$(((after - before) * 4 >= 6400))"

# as a user without CAP_IPC_LOCK, ofi_rxm's CQ of 262,144 entries (24
# MiB, charged as mlx5 pins a CQ buffer) is past an 8 MiB RLIMIT_MEMLOCK
# (Debian's default): ENOMEM; with the limit raised (or CAP_IPC_LOCK,
# where this root cannot raise it) it runs
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
rcs=$(pingpong low rdm 'verbs;ofi_rxm' prlimit --memlock=8388608 "${nobody[@]}")
expect_eq "fi_pingpong ofi_rxm as nobody, memlock 8 MiB: client and server fail" "1 1" "$(echo $rcs | awk '{print ($1 != 0), ($2 != 0)}')"
expect_match "fi_pingpong ofi_rxm as nobody, memlock 8 MiB: ENOMEM in fi_enable" \
	'^fi_enable\(\).*\(Cannot allocate memory\)' "$(cat "$work/low.client" "$work/low.server")"
if prlimit --memlock=67108864 true 2>/dev/null; then
	raised=(prlimit --memlock=67108864 "${nobody[@]}") what="memlock 64 MiB"
else # no CAP_SYS_RESOURCE (a container) to raise the hard limit: exempt it
	raised=(prlimit --memlock=8388608 "${nobody[@]}" --inh-caps +ipc_lock --ambient-caps +ipc_lock)
	what="memlock 8 MiB with CAP_IPC_LOCK"
fi
rcs=$(pingpong nobody rdm 'verbs;ofi_rxm' "${raised[@]}")
expect_eq "fi_pingpong ofi_rxm as nobody, $what: client and server exit 0" "0 0" "$rcs"
[ "$rcs" = "0 0" ] || cat "$work/nobody.server" "$work/nobody.client"

rcs=$(pingpong msg msg verbs)
expect_eq "fi_pingpong -p verbs -e msg hosta -> hostb: client and server exit 0" "0 0" "$rcs"
expect_match "fi_pingpong -e msg: 100 messages of 64 bytes" '^64 +100 +=100 ' "$(cat "$work/msg.client")"

# Open MPI over libfabric: two ranks on hosta, one on each of its HCAs
# (FI_VERBS_DEVICE_NAME), so that their messages leave one port and
# arrive at the other across the switch; ranks on one HCA would meet in
# its own port. mpi_ofi_check sends 20 messages of each of 1 B to 1 MiB
# (eager and rendezvous) and back, 22,365,460 bytes each way, and checks
# every byte.
if [ -z "$mpi_check" ] || ! command -v mpirun >/dev/null; then
	# not a skip: the suite is there for this job (CI installs them)
	bad "no MPI (mpirun, or mpi_ofi_check unbuilt: openmpi-bin and libopenmpi-dev, tools/install-deps.sh)"
else
	x0=$(xmit ibemu0)
	x1=$(xmit ibemu1)
	out=$(FI_PROVIDER='verbs;ofi_rxm' on hosta mpirun --allow-run-as-root -x FI_PROVIDER \
		--mca pml cm --mca mtl ofi --mca btl self \
		-np 1 env FI_VERBS_DEVICE_NAME=ibemu0 "$mpi_check" : \
		-np 1 env FI_VERBS_DEVICE_NAME=ibemu1 "$mpi_check" 2>&1)
	expect_eq "mpirun -np 2 --mca pml cm --mca mtl ofi: exit 0" 0 $?
	expect_match "mpi_ofi_check: every byte arrived" \
		'^mpi_ofi_check: 2 ranks, 22365460 bytes each way, 0 bad bytes, allreduce 3$' "$out"
	d0=$((($(xmit ibemu0) - x0) * 4))
	d1=$((($(xmit ibemu1) - x1) * 4))
	expect_eq "the MPI job's bytes left both ports (ibemu0 $d0, ibemu1 $d1 bytes)" "1 1" \
		"$((d0 >= 22365460)) $((d1 >= 22365460))"

	# the same job over UCX (--mca pml ucx: its verbs transports, each
	# rank on one HCA), the path the ofi MTL is compared with
	x0=$(xmit ibemu0)
	out=$(on hosta mpirun --allow-run-as-root -x UCX_TLS=rc_verbs,ud_verbs,self --mca pml ucx \
		-np 1 env UCX_NET_DEVICES=ibemu0:1 "$mpi_check" : \
		-np 1 env UCX_NET_DEVICES=ibemu1:1 "$mpi_check" 2>&1)
	expect_eq "mpirun -np 2 --mca pml ucx: exit 0" 0 $?
	expect_match "mpi_ofi_check over UCX: every byte arrived" \
		'^mpi_ofi_check: 2 ranks, 22365460 bytes each way, 0 bad bytes, allreduce 3$' "$out"
	d0=$((($(xmit ibemu0) - x0) * 4))
	expect_eq "the UCX job's bytes left ibemu0's port ($d0 bytes)" 1 "$((d0 >= 22365460))"
fi

down_inst $M
e2e_done
