#!/usr/bin/env bash
# Jobs across cluster hosts (docs/cluster.md, "Jobs across hosts"), on the
# built-in fabric with IPoIB and OpenSM.
#
# The launch path first (docs/transports.md, "Launching across hosts"): a
# host's program sees its own host name; ibemu-rsh run by a program of
# ibemu-host1 (so under its exec's seccomp filter) runs its command on
# ibemu-host2 through the daemon's launch door, served as host2's (its
# HCA opens), with ssh's options, the command's exit status, its signal,
# the caller's SIGTERM forwarded and the command killed when the caller
# dies, the caller's environment given to the command but not to the
# ibemu the daemon runs before it has dropped privilege; a nested exec to
# an unknown host fails as a plain one does (exit 2, the message); a
# caller without CAP_SYS_ADMIN in its bounding set gets a command that has
# none either (it cannot join the host); a malformed request, one with a
# descriptor after its head and one past the limit of launches are
# refused, and the daemon goes on.
#
# Then an MPI job: mpirun on ibemu-host1 starts its ranks on both hosts
# through ibemu-rsh (plm_rsh_agent); the ranks report both hosts as their
# processor names, exchange BYTES across them intact (tests/tools/
# mpi_hosts.cpp), and the two HCAs' PMA PortXmitData/PortRcvData move by
# at least that much. Each pml in $pmls runs the same job (Open MPI over
# UCX: pml ucx, its verbs transports only; over libfabric: pml cm with
# the ofi MTL, verbs;ofi_rxm).
# usage: mpi.sh IBEMU_BINARY [MPI_HOSTS_BINARY]   (none: no MPI, the
# launch path's checks only)
set -u
ibemu=$1
mpi_hosts=${2:-}
. "$(dirname "$0")/lib.sh"
e2e_setup mpi
verbs_transport
for t in perfquery ping python3 setpriv; do
	if ! command -v $t >/dev/null; then
		echo "mpi: needs $t (tools/install-deps.sh); skipped"
		exit 77
	fi
done
if [ ! -w /dev/net/tun ]; then
	echo "mpi: needs /dev/net/tun for the hosts' ib0; skipped"
	exit 77
fi
chmod 755 "$work"
# ibemu-rsh next to ibemu (build/tools/, or where both are installed)
PATH=$(dirname "$ibemu"):$PATH
export PATH

I=e2e-mpi-$$
h1=ibemu-host1
h2=ibemu-host2
out=$("$ibemu" up --instance $I --ipoib --sm 2>&1)
expect_eq "up --ipoib --sm" 0 $?
expect_exec_transport $I
on_host() { local h=$1; shift; timeout "$tool_timeout" "$ibemu" exec --instance $I --host "$h" -- "$@" 2>&1; }

expect_eq "a host's program sees its host name" "$h2" "$(on_host $h2 hostname)"
expect_eq "ibemu-rsh from host1 runs on host2 (a nested exec, through the daemon)" "$h2 $h2" \
	"$(on_host $h1 ibemu-rsh $h2 'echo $(hostname) $IBEMU_HOST')"
expect_eq "... served as host2's: its HCA opens" 1 \
	"$(on_host $h1 ibemu-rsh $h2 ibv_devinfo -d ibemu1 | grep -c PORT_ACTIVE)"
expect_eq "... its programs get ibemu's provider once, not once per exec" 1 \
	"$(on_host $h1 ibemu-rsh $h2 'echo $RDMAV_DRIVERS' | tr ':' '\n' | grep -c libibemu)"
# none of the daemon's descriptors (its sockets' connections, the
# callers' stdio) reaches a launched command: the daemon's are all
# close-on-exec, as its spawn closes none (a close may wait on a FUSE file)
expect_eq "... with the caller's stdio and no descriptor of the daemon's" "0 1 2" \
	"$(on_host $h1 ibemu-rsh $h2 'ls /proc/$$/fd' | sort -n | xargs)"
# the caller's working directory is looked up on the command's host, not
# in the daemon's namespace: a tmpfs on both hosts (not the daemon's),
# and one on host1 alone, which host2's command says it cannot enter
mkdir -p "$work/both" "$work/h1only"
on_host $h1 sh -c "mount -t tmpfs none $work/both && mkdir $work/both/d && mount -t tmpfs none $work/h1only && mkdir $work/h1only/d"
on_host $h2 sh -c "mount -t tmpfs none $work/both && mkdir $work/both/d"
expect_eq "the command runs in the caller's directory, as the host sees it" "$work/both/d" \
	"$(on_host $h1 sh -c "cd $work/both/d && ibemu-rsh $h2 pwd")"
out=$(on_host $h1 sh -c "cd $work/h1only/d && ibemu-rsh $h2 pwd")
expect_match "... one the host lacks: it says so" "cannot enter $work/h1only/d .*: the command runs in /" "$out"
expect_match "... and runs in /" '^/$' "$out"
out=$(on_host $h1 ibemu-rsh -x -l root $h2 exit 7)
expect_eq "... with ssh's options; the command's exit status" 7 $?
out=$(on_host $h1 sh -c 'ibemu-rsh '$h2' "kill -9 \$\$"; echo $?' | tail -n 1) # after sh's "Killed"
expect_eq "... a command killed by a signal: the caller is too" 137 "$out"
out=$(on_host $h1 sh -c 'ibemu-rsh '$h2' "trap \"exit 42\" TERM; echo ready; sleep 977 & wait" >'"$work"'/term.out 2>&1 & c=$!
	for i in $(seq 100); do grep -q ready '"$work"'/term.out && break; sleep 0.1; done; kill -TERM $c; wait $c; echo $?')
expect_eq "... the caller's SIGTERM goes to the command" 42 "$out"
out=$(on_host $h1 sh -c 'ibemu-rsh '$h2' "echo ready; exec sleep 978" >'"$work"'/kill.out 2>&1 & c=$!
	for i in $(seq 100); do grep -q ready '"$work"'/kill.out && break; sleep 0.1; done
	for i in $(seq 100); do pgrep -f "^sleep 978\$" >/dev/null && break; sleep 0.1; done
	pgrep -f "^sleep 978\$" >/dev/null && echo ran; kill -9 $c')
expect_eq "... a caller's command ran" ran "$out"
gone=no
for _ in $(seq 1 100); do
	pgrep -f '^sleep 978$' >/dev/null || { gone=yes; break; }
	sleep 0.1
done
expect_eq "... a caller killed: its command is killed too" yes "$gone"
# the ibemu the daemon runs starts with no environment of the caller's
# (LD_DEBUG here, LD_PRELOAD in earnest: it would run before the ibemu
# drops what the caller lacks), which then reaches the command
out=$(on_host $h1 sh -c 'echo "client $$"; FOO=bar LD_DEBUG=files exec ibemu-rsh '$h2' "echo \$FOO"')
client=$(sed -n 's/^client //p' <<<"$out")
# (the positive control: LD_DEBUG=files does print ibemu's libraries)
expect_match "LD_DEBUG=files tells a program's libraries" 'needed by .*/ibemu ' \
	"$(LD_DEBUG=files "$ibemu" --version 2>&1)"
expect_eq "the launched ibemu starts without the caller's environment" 0 \
	"$(grep 'needed by .*/ibemu ' <<<"$out" | grep -vc "^ *$client:")"
expect_match "... which its command gets" '^bar$' "$out"
out=$(on_host $h1 "$ibemu" exec --host nosuch -- true)
expect_eq "a nested exec to an unknown host: exit 2" 2 $?
expect_match "... and says so" 'has no host "nosuch" \(its hosts: ibemu-host1, ibemu-host2' "$out"
# a daemon started under another instance's exec (under its listener, as
# under a container's): an exec from there is under no more filters than
# that daemon, and takes the device files, not the launch door (whose
# launched exec was under the listener again, 64 deep)
J=e2e-mpi-j-$$
timeout "$tool_timeout" "$ibemu" exec --instance $I -- "$ibemu" up --instance $J >/dev/null 2>&1
expect_eq "an instance up under another's exec" 0 $?
out=$(timeout "$tool_timeout" "$ibemu" exec --instance $I -- "$ibemu" exec --instance $J -- echo ran 2>&1)
expect_match "... its exec from under the same filter runs (not through the launch door)" '^ran$' "$out"
down_inst $J
out=$(on_host $h1 setpriv --bounding-set=-sys_admin ibemu-rsh $h2 true)
expect_eq "a caller without CAP_SYS_ADMIN: neither has its command (cannot join the host)" failed \
	"$([ $? -ne 0 ] && echo failed)"
expect_match "... and says why" 'setns to the namespaces.*Operation not permitted' "$out"
expect_eq "the launched command has the caller's umask and resource limits" "0027 1234" \
	"$(on_host $h1 sh -c "umask 027; ulimit -n 1234; ibemu-rsh $h2 'umask; ulimit -n'" | xargs)"

# the door itself: a valid request (true in /) from a root program that
# is no program of the instance's exec (this script: another mount
# namespace), and from one that dropped CAP_SYS_ADMIN from its bounding
# set but holds it still, are refused (EPERM)
door=$("$ibemu" status --instance $I --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["launch_socket"])')
request='
import ctypes, os, socket, struct, sys
if len(sys.argv) > 2:
    ctypes.CDLL(None).prctl(24, 21)  # PR_CAPBSET_DROP, CAP_SYS_ADMIN
words = b"\0/\0true\0IBEMU_RUN_DIR=" + os.environ["IBEMU_RUN_DIR"].encode() + b"\0"
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [struct.pack("<IIII", 0x31626C69, 1, 1, len(words))], [0, 1, 2])
s.sendall(words)
print("%d %d" % struct.unpack("<Ii", s.recv(8)))'
expect_eq "the launch door refuses a caller outside the instance's exec (EPERM)" "1 1" \
	"$(python3 -c "$request" "$door")"
expect_eq "... and one holding a capability it dropped from its bounding set (EPERM)" "1 1" \
	"$(on_host $h1 python3 -c "$request" "$door" drop)"
expect_eq "... and one whose connector died before its request was in (EPERM)" "1 1" \
	"$(on_host $h1 python3 -c '
import os, socket, struct, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [struct.pack("<IIII", 0x31626C69, 1, 0, 8)], [0, 1, 2])
parent = os.getpid()
if os.fork():
    os._exit(0)
while os.path.exists("/proc/%d" % parent):
    time.sleep(0.01)
s.sendall(b"\0/\0true\0")
print("%d %d" % struct.unpack("<Ii", s.recv(8)))' "$door")"
expect_eq "... but runs it for a program of the exec (exited 0)" "2 0" "$(on_host $h1 python3 -c "$request" "$door")"

# a malformed request, and one past the limit of 64
# launches at once, each get their errno; the daemon goes on
out=$(on_host $h1 python3 - "$door" $h2 <<'PY'
import socket, struct, subprocess, sys
def answer(s):
    data = b""
    while len(data) < 8:
        more = s.recv(8 - len(data))
        if not more:
            return "closed"
        data += more
    return "%d %d" % struct.unpack("<Ii", data)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"\0" * 16)  # no magic, no descriptors
print("malformed:", answer(s))
# a descriptor after the head: refused at its sendmsg (Linux 6.16) or
# received, closed and the request refused; never run
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [struct.pack("<IIII", 0x31626C69, 1, 0, 8)], [0, 1, 2])
try:
    socket.send_fds(s, [b"\0/\0true\0"], [0])
except PermissionError:  # then the daemon still waits for the strings: they end here
    s.shutdown(socket.SHUT_WR)
print("a descriptor after the head:", answer(s))
waiting = []
for _ in range(64):
    w = socket.socket(socket.AF_UNIX)
    w.connect(sys.argv[1])
    waiting.append(w)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("past the limit:", answer(s))
# and a nested exec past the limit (python runs under host1's filter)
rsh = subprocess.run(["ibemu-rsh", sys.argv[2], "true"], capture_output=True, text=True)
print(rsh.returncode, rsh.stderr.strip())
PY
)
expect_eq "the launch door refuses a malformed request, a descriptor after the head (EINVAL) and the 65th launch at once (EAGAIN), which a nested exec reports" \
	"malformed: 1 22
a descriptor after the head: 1 22
past the limit: 1 11
1 ibemu exec: the daemon did not run the command: the daemon is running as many launches as it allows already (64)" "$out"
expect_eq "... and goes on" "$h2" "$(on_host $h1 ibemu-rsh $h2 hostname)"

# the ports' PMA data counters (in 4-byte words), extended: "XMIT RCV"
port_data() {
	on_host "$1" perfquery -x | awk -F'[.:]+' '/PortXmitData/ { x = $NF } /PortRcvData/ { r = $NF } END { print x, r }'
}

# wait until both ib0 have a carrier: the job's out-of-band channel is TCP over them
for _ in $(seq 1 100); do
	on_host $h1 ping -c 1 -W 1 10.200.1.1 >/dev/null && break
done

bytes=$((8 << 20))
pmls=${IBEMU_MPI_PMLS:-ucx ofi}
skipped=
if ! command -v mpirun >/dev/null; then
	skipped="no mpirun (openmpi-bin, libopenmpi-dev: tools/install-deps.sh): the MPI job did not run"
	pmls=
elif [ -z "$mpi_hosts" ]; then
	bad "mpirun is here but the MPI program was not built (no MPI for meson: libopenmpi-dev)"
	pmls=
fi
for pml in $pmls; do
	case $pml in
	ucx) pml_args=(--mca pml ucx -x UCX_TLS=self,sm,rc_verbs,ud_verbs -x UCX_WARN_UNUSED_ENV_VARS=n) ;;
	# libfabric's verbs provider over the hosts' ib0 (docs/rdma-cm.md, "Middleware")
	ofi) pml_args=(--mca pml cm --mca mtl ofi -x 'FI_PROVIDER=verbs;ofi_rxm') ;;
	*)
		bad "no arguments for pml $pml"
		continue
		;;
	esac
	read -r x1 r1 <<<"$(port_data $h1)"
	read -r x2 r2 <<<"$(port_data $h2)"
	out=$(on_host $h1 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --allow-run-as-root -np 4 --host $h1:2,$h2:2 \
		--mca plm_rsh_agent ibemu-rsh --mca oob_tcp_if_include ib0 --mca btl self,vader \
		"${pml_args[@]}" "$mpi_hosts" $bytes)
	rc=$?
	expect_eq "$pml: the job exits 0" 0 $rc
	[ $rc = 0 ] || printf '%s\n' "$out" | tail -20
	expect_match "$pml: its ranks ran on both hosts" "^hosts: $h1,$h2\$" "$out"
	expect_match "$pml: every rank's bytes reached its partner on the other host" \
		"^moved $((bytes * 4)) bytes across hosts\$" "$out"
	expect_match "$pml: intact" '^ok$' "$out"
	read -r x1b r1b <<<"$(port_data $h1)"
	read -r x2b r2b <<<"$(port_data $h2)"
	# each host's two ranks sent 2 * bytes to the other host, and received as much
	for c in "host1 sent:$x1:$x1b" "host1 received:$r1:$r1b" "host2 sent:$x2:$x2b" "host2 received:$r2:$r2b"; do
		IFS=: read -r what before after <<<"$c"
		moved=$(((after - before) * 4))
		if [ "$moved" -ge $((2 * bytes)) ]; then ok; else bad "$pml: the PMA data counters: $what $moved bytes, not at least $((2 * bytes))"; fi
	done
done

down_inst $I
e2e_done || exit 1
if [ -n "$skipped" ]; then # the launch path's checks passed; the job is what the suite is for
	echo "mpi: $skipped; skipped"
	exit 77
fi
