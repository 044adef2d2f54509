#!/usr/bin/env bash
# Stock rdma-core tools and OpenSM against ibemu on the FUSE transport, in
# private mount namespaces: the built-in default fabric and a generated fat
# tree, as two instances running side by side.
# With IBEMU_FUSE_URING=on (meson test e2e-fuse-uring) the same checks run
# with the FUSE requests over io_uring, a queue per CPU.
# usage: fuse_tools.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup fuse-tools

host_providers=$(ls /etc/libibverbs.d 2>/dev/null)
A=e2e-default-$$
B=e2e-fattree-$$
out=$("$ibemu" up --instance $A 2>&1)
expect_eq "up default" 0 $?
expect_match "up lists umad0" '/dev/infiniband/umad0 /dev/infiniband/issm0' "$out"
# the FUSE files alone serve no verbs: up says so, why, and what to do
expect_match "up says verbs are not available, and why" \
	'^  verbs and rdma_cm: not available: the fuse transport serves umad and issm files only.*--transport auto' "$out"
out=$("$ibemu" status --instance $A --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["verbs"]["available"], "verbs_provider" in j)')
expect_eq "status --json: verbs not available, no provider named" "False False" "$out"
"$ibemu" topo gen fat-tree --levels 2 --hosts 16 --radix 8 -o "$work/ft.topo"
out=$("$ibemu" up --instance $B --topology "$work/ft.topo" --local host00001,host00016 2>&1)
expect_eq "up fat tree" 0 $?
expect_match "two instances side by side" 'fabric .*ft.topo: 8 switches, 16 CAs, 32 links' "$out"
out=$("$ibemu" up --instance $A 2>&1)
expect_match "a second up of a running instance is refused" 'is already running' "$out"
expect_fuse_requests $A
expect_fuse_requests $B

# --- the namespace lists one provider file, the stock one ibemu's HCAs
# match (ibemu's own comes in RDMAV_DRIVERS); the host keeps all of its
if [ -f /etc/libibverbs.d/ipathverbs.driver ]; then
	expect_eq "provider files in the instance: ipathverbs.driver alone" "ipathverbs.driver" \
		"$(inst $A ls /etc/libibverbs.d)"
	expect_eq "and as the host has it" "$(cat /etc/libibverbs.d/ipathverbs.driver)" \
		"$(inst $A cat /etc/libibverbs.d/ipathverbs.driver)"
	expect_eq "the host's list is as it was" "$host_providers" "$(ls /etc/libibverbs.d)"
	expect_match "installing a provider in the instance fails, not vanishes" "Read-only file system" \
		"$(inst $A sh -c 'echo "driver x" >/etc/libibverbs.d/x.driver')"
fi

# --- before any SM
out=$(inst $A ibstat)
expect_match "ibstat: CA" "^CA 'ibemu0'" "$out"
expect_match "ibstat: node GUID" 'Node GUID: 0x0002c90300000100' "$out"
expect_match "ibstat: port waits for an SM" 'State: Initializing' "$out"
expect_match "ibstat: rate" 'Rate: 100' "$out"
out=$(inst $A smpquery -D nodeinfo 0)
expect_match "smpquery hop 0" '^PortGuid:\.+0x0002c90300000101' "$out"
out=$(inst $A smpquery -D nodedesc 0,1,7)
expect_match "smpquery DR to sw2" 'Node Description:\.+ibemu-sw2' "$out"

# --- OpenSM brings both subnets up
start_opensm $A 0x0002c90300000101
start_opensm $B 0x0002c90300000011
wait_for $A 30 sh -c 'sminfo | grep -q SMINFO_MASTER && ibstat ibemu0 | grep -q "State: Active"'
expect_eq "OpenSM master on the default fabric" 0 $?
wait_for $B 30 sh -c 'sminfo | grep -q SMINFO_MASTER && ibstat ibemu1 | grep -q "State: Active"'
expect_eq "OpenSM master on the fat tree" 0 $?

out=$("$ibemu" status --instance $A)
expect_match "status shows the live port state" 'umad0 /dev/infiniband/issm0  ACTIVE/LinkUp  LID 1  SM LID 1  100 Gb/sec \(4X EDR\)  \(issm held\)  [1-9] open' "$out"
out=$("$ibemu" status --instance $A --json |
	python3 -c 'import json,sys; p=json.load(sys.stdin)["devices"][0]["ports"][0]; print(p["ipv4"], p["ipv6"])')
expect_eq "status --json: the port's rdma_cm addresses" "10.200.0.1 fe80::202:c903:0:101" "$out"
out=$(inst $A ibstat ibemu0 1)
expect_match "ibstat after SM: LID" 'Base lid: [1-9]' "$out"
expect_match "ibstat after SM: SM LID" 'SM lid: [1-9]' "$out"
expect_match "ibstat after SM: IsSM while opensm holds issm" 'Capability mask: 0x0251484a' "$out"
out=$(inst $A ibstatus)
expect_match "ibstatus" 'state:[[:space:]]+4: ACTIVE' "$out"
out=$(inst $A ibaddr)
expect_match "ibaddr" '^GID fe80::2:c903:0:101 LID start 0x1 end 0x1' "$out"
out=$(inst $A smpquery portinfo 3 1)
expect_match "smpquery portinfo by LID" '^LinkState:\.+Active' "$out"
for q in "pkeys 2" "guidinfo 3" "switchinfo 2" "sl2vl 2 7" "vlarb 3 1" "nodedesc 6"; do
	out=$(inst $A smpquery $q); expect_eq "smpquery $q exit" 0 $?
done
out=$(inst $A sminfo)
expect_match "sminfo" 'state 3 SMINFO_MASTER' "$out"

# --- discovery matches the topology
inst $A ibnetdiscover >"$work/a.topo"
out=$("$ibemu" topo diff - "$work/a.topo")
expect_eq "ibnetdiscover = built-in topology" "same: 6 nodes, 8 links" "$out"
inst $B ibnetdiscover >"$work/b.topo"
out=$("$ibemu" topo diff "$work/ft.topo" "$work/b.topo")
expect_eq "ibnetdiscover = fat tree" "same: 24 nodes, 32 links" "$out"
out=$(inst $A ibhosts); expect_eq "ibhosts" 4 "$(grep -c '^Ca' <<<"$out")"
out=$(inst $A ibswitches); expect_eq "ibswitches" 2 "$(grep -c '^Switch' <<<"$out")"
out=$(inst $A iblinkinfo)
expect_match "iblinkinfo" '==\( 4X +25\.78125 Gbps Active/  LinkUp\)==> +[0-9]+ +7\[  \] "ibemu-sw2"' "$out"
out=$(inst $A ibroute 2)
expect_match "ibroute: LFT programmed by OpenSM" "^0x0003 00[78] : \(Channel Adapter portguid 0x0002c90300000201: 'ibemu-host2 HCA-1'\)" "$out"
out=$(inst $A ibtracert 1 3)
expect_match "ibtracert crosses both switches" '^\[[78]\] -> switch port \{0x0002c90200000002\}\[[78]\] lid 6-6 "ibemu-sw2"' "$out"

# --- SA queries (RMPP)
out=$(inst $A saquery)
expect_eq "saquery NodeRecords (one per CA port)" 8 "$(grep -c 'NodeRecord dump' <<<"$out")"
out=$(inst $A saquery -s)
expect_match "saquery -s: the SM port" 'EndPortLid\.+1$' "$out"
out=$(inst $A saquery PR 1 3)
expect_match "saquery PathRecord" 'dlid\.+3$' "$out"
out=$(inst $A saquery PIR)
expect_match "saquery PortInfoRecords" 'PortInfoRecord dump' "$out"
out=$(inst $B saquery)
expect_eq "saquery on the fat tree (many segments)" 24 "$(grep -c 'NodeRecord dump' <<<"$out")"

# --- SA tables of several MiB: OpenSM writes each as one RMPP message
# through a libibumad buffer (not page-aligned, split by the kernel over
# several requests) and saquery reads it the same way; every record arrives
C=e2e-big-$$
# OpenSM run by the instance (up --sm), bound to sw1's HCA
out=$("$ibemu" up --instance $C --gen torus:dims=40x40,hosts-per-switch=1 --sm --wait-timeout 600 \
	-- -g 0x0002c90300000011 -s 0 2>&1)
expect_eq "up --sm brings up a 1,600-switch torus" 0 $?
# the SA answers once the first sweep is over, a while after MASTER
wait_for $C 600 sh -c 'saquery -s | grep -q EndPortLid'
expect_eq "and its SA answers" 0 $?
out=$(inst $C saquery -t 60000 NR)
expect_eq "saquery: 3,200 NodeRecords (~350 KiB)" 3200 "$(grep -c 'NodeRecord dump' <<<"$out")"
out=$(inst $C saquery -t 60000 LFTR)
expect_eq "saquery: 81,600 LFT records (~5.6 MiB), all of them" 81600 "$(grep -c 'LFT Record dump' <<<"$out")"
expect_eq "OpenSM logged no MAD errors" 0 "$(grep -c 'ERR 3111' "$IBEMU_RUN_DIR/$C/opensm/opensm.log")"
down_inst $C

# --- performance counters
out=$(inst $A perfquery)
expect_match "perfquery" '^PortXmitPkts:\.+[1-9]' "$out"
out=$(inst $A perfquery -x 3 1)
expect_match "perfquery -x" '^PortUnicastRcvPkts:\.+[1-9]' "$out"
inst $A perfquery -R 3 1 >/dev/null
out=$(inst $A perfquery 3 1)
expect_match "perfquery after -R: only its own two queries" '^PortRcvPkts:\.+2$' "$out"
out=$(inst $A ibqueryerrors)
expect_match "ibqueryerrors walks the fabric, and finds it clean" "## Summary: 6 nodes checked, 0 bad nodes found" "$out"

# --- ibping between the two local CAs, across the switches
"$ibemu" exec --instance $A -- ibping -S -C ibemu1 >/dev/null 2>&1 &
server=$!
wait_for $A 60 ibping -C ibemu0 -c 1 3 # until the server has its agent
out=$(inst $A ibping -C ibemu0 -c 3 3)
expect_match "ibping" '3 packets transmitted, 3 received, 0% packet loss' "$out"
kill $server 2>/dev/null
wait $server 2>/dev/null

# --- a disabled link: OpenSM routes around it
inst $A ibportstate 2 7 disable >/dev/null
wait_for $A 20 sh -c 'ibtracert 1 3 | grep -q "^\[8\] -> switch port {0x0002c90200000002}\[8\]"'
expect_eq "OpenSM routes around a disabled link" 0 $?
out=$(inst $A smpquery portinfo 2 7)
expect_match "the disabled port" '^PhysLinkState:\.+Disabled' "$out"
inst $A ibportstate 2 7 enable >/dev/null

# --- sysfs follows the fabric, and the run directory is the instance's own
out=$(inst $A cat /sys/class/infiniband/ibemu0/ports/1/lid /sys/class/infiniband_mad/umad1/ibdev /sys/class/infiniband_mad/abi_version)
expect_eq "sysfs values" "$(printf '0x1\nibemu1\n5')" "$out"
expect_eq "nothing shows outside the namespace" "" "$(ls /sys/class/infiniband 2>/dev/null | grep ibemu)"

# --- blocked requests can always be interrupted (the daemon answers EINTR)
cat >"$work/blocked.py" <<'PY'
# The alarm's handler raises, so Python does not retry the call (PEP 475):
# "interrupted" shows only if the daemon answered the parked request.
import errno, fcntl, os, signal, struct
def alarm(*a): raise TimeoutError()
signal.signal(signal.SIGALRM, alarm)
fd = os.open("/dev/infiniband/umad1", os.O_RDWR)                    # blocking
req = struct.pack("<I16sBBB3sBx", 0, b"\0" * 16, 1, 0, 0, b"\0\0\0", 0)
fcntl.ioctl(fd, 0xc01c1b01, bytearray(req))                          # REGISTER_AGENT
signal.alarm(1)
try:
    os.read(fd, 64 + 256)
    print("read returned")
except TimeoutError:
    print("read: interrupted")
held = os.open("/dev/infiniband/issm1", os.O_RDONLY | os.O_NONBLOCK)
try:
    os.open("/dev/infiniband/issm1", os.O_RDONLY | os.O_NONBLOCK)
except OSError as e:
    print("second issm, nonblocking:", errno.errorcode[e.errno])
signal.alarm(1)
try:
    os.open("/dev/infiniband/issm1", os.O_RDONLY)
    print("second issm opened")
except TimeoutError:
    print("second issm, blocking: interrupted")
PY
out=$(inst $A python3 "$work/blocked.py")
expect_eq "blocked read and issm open can be interrupted" \
	"$(printf 'read: interrupted\nsecond issm, nonblocking: EAGAIN\nsecond issm, blocking: interrupted')" "$out"

# --- up refuses what it cannot do, and says why
printf 'Switch 8 "a"\n[1] "nosuch"[1]\n' >"$work/bad.topo"
out=$("$ibemu" up --instance bad-$$ --topology "$work/bad.topo" 2>&1)
expect_eq "up with a bad topology fails" 1 $?
expect_match "and names the line" "bad.topo:2: port 1 of \"a\" names an unknown node \"nosuch\"" "$out"
out=$("$ibemu" up --instance bad-$$ --local nosuch 2>&1)
expect_match "up with an unknown --local CA" '^  error: --local: no node "nosuch" in the fabric' "$out"
expect_eq "says it without the daemon's log times" 0 "$(grep -c '\[ibemud\]' <<<"$out")"
out=$("$ibemu" up --instance bad-$$ --local ibemu-hots1 2>&1)
expect_match "a misspelt one gets the nearest name" 'no node "ibemu-hots1" in the fabric; did you mean "ibemu-host1"\?' "$out"
out=$("$ibemu" up --instance 'bad/name' 2>&1)
expect_match "up with a bad instance name" 'instance names use letters' "$out"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ibemu" up --instance bad-$$ 2>&1)
expect_match "up as a non-root user" 'must run as root' "$out"

# --- up --gen and --transport
G=e2e-gen-$$
out=$("$ibemu" up --instance $G --gen fat-tree:levels=2,hosts=16,radix=8 --transport fuse 2>&1)
expect_eq "up --gen --transport fuse" 0 $?
expect_match "the generated fabric, on FUSE" 'fuse transport, fabric gen fat-tree:levels=2,hosts=16,radix=8: 8 switches, 16 CAs, 32 links' "$out"
out=$(inst $G smpquery -D nodedesc 0,1)
expect_match "the generated fabric answers" 'Node Description:\.+' "$out"
down_inst $G
if [ ! -e /dev/cuse ]; then
	out=$("$ibemu" up --instance cuse-$$ --transport cuse 2>&1)
	expect_eq "up --transport cuse without CUSE fails" 1 $?
	expect_match "and says why" '/dev/cuse is missing' "$out"
fi

# --- up --sm: OpenSM run by the instance, its cache and log in the run
# directory; down --kill-clients ends the users first, OpenSM next, and
# leaves no process, mount or directory behind
S=e2e-sm-$$
out=$("$ibemu" up --instance $S --sm 2>&1)
expect_eq "up --sm" 0 $?
expect_eq "up --sm returns with both local ports ACTIVE" 2 "$(grep -c 'ACTIVE/LinkUp' <<<"$out")"
out=$(IBEMU_INSTANCE=$S "$ibemu" status)
expect_match "status (instance from IBEMU_INSTANCE) shows the SM" "OpenSM: running, pid [0-9]+, SMINFO_MASTER" "$out"
expect_match "its log is in the run directory" "log $IBEMU_RUN_DIR/$S/opensm/opensm.log" "$out"
expect_eq "its cache too, not the machine's" 0 "$(test -s "$IBEMU_RUN_DIR/$S/opensm/cache/guid2lid"; echo $?)"
# exec's forms: --instance NAME, --instance=NAME, IBEMU_INSTANCE (taken
# before the command tree is built), and the same answers from the tree
expect_eq "exec --instance=NAME" "$S" "$("$ibemu" exec --instance=$S -- sh -c 'echo $IBEMU_INSTANCE')"
expect_eq "exec, the instance from IBEMU_INSTANCE" "$S" "$(IBEMU_INSTANCE=$S "$ibemu" exec -- sh -c 'echo $IBEMU_INSTANCE')"
expect_eq "exec gives the command's exit status" 7 "$("$ibemu" exec --instance $S -- sh -c 'exit 7'; echo $?)"
direct=$("$ibemu" exec --instance nosuch-$$ -- true 2>&1; echo "exit $?")
tree=$("$ibemu" exec --instance nosuch-$$ true 2>&1; echo "exit $?")
expect_match "exec of an instance not up says so" "ibemu exec: .*nosuch-$$.*exit 1" "$(tr '\n' ' ' <<<"$direct")"
expect_eq "the same as the command tree says" "$tree" "$direct"
expect_match "exec --help is the tree's" "Run a command that sees the instance" "$("$ibemu" exec --help 2>&1)"
smpid=$("$ibemu" status --instance $S --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sm"]["pid"])')
lid1=$(inst $S cat /sys/class/infiniband/ibemu1/ports/1/lid)
inst $S ibping -S -C ibemu1 >/dev/null 2>&1 &
pinger=$!
wait_for $S 30 ibping -C ibemu0 -c 1 $((lid1))
expect_eq "ibping from ibemu0 to ibemu1" 0 $?
out=$(inst $S perfquery -C ibemu1)
expect_match "perfquery on the other HCA" 'PortXmitPkts:\.+[1-9]' "$out"
out=$("$ibemu" status --instance $S)
expect_match "status names the ibping server as a client" "pid [0-9]+ \(ibping\): 1 file" "$out"
out=$("$ibemu" down --instance $S --kill-clients 2>&1)
expect_eq "down --kill-clients" 0 $?
expect_match "says whom it ended" "ending 1 process holding the devices" "$out"
wait $pinger 2>/dev/null
expect_eq "the client is gone" 1 "$(kill -0 $pinger 2>/dev/null; echo $?)"
expect_eq "OpenSM is gone" 1 "$(kill -0 "$smpid" 2>/dev/null; echo $?)"
expect_eq "the run directory is gone" 1 "$(test -e "$IBEMU_RUN_DIR/$S"; echo $?)"
out=$("$ibemu" up --instance $S --sm -- --no-such-option 2>&1)
expect_eq "up --sm with OpenSM failing exits 1" 1 $?
expect_match "and says why" "OpenSM exited with status .*unrecognized option" "$(tr '\n' ' ' <<<"$out")"
expect_eq "and leaves no run directory" 1 "$(test -e "$IBEMU_RUN_DIR/$S"; echo $?)"
out=$("$ibemu" up --instance $S --sm --keep-logs -- --no-such-option 2>&1)
expect_match "--keep-logs keeps them" "logs kept in $IBEMU_RUN_DIR/$S" "$out"
expect_eq "with OpenSM's output" 0 "$(grep -qs 'unrecognized option' "$IBEMU_RUN_DIR/$S/opensm/opensm.out"; echo $?)"
sanitizer_check $S
rm -rf "${IBEMU_RUN_DIR:?}/$S"
out=$("$ibemu" frobnicate 2>&1)
expect_match "an unknown subcommand is named" "frobnicate" "$out"
out=$("$ibemu" --version)
expect_match "--version" '^ibemu [0-9]+\.[0-9]+' "$out"

# --- down while clients are blocked in a read, a write and an issm open:
# each gets an error, none hangs, and the daemon stops without a kill
D=e2e-down-$$
"$ibemu" up --instance $D >/dev/null
cat >"$work/blockers.py" <<'PY'
import errno, fcntl, glob, os, struct, threading, time
fd = os.open("/dev/infiniband/umad1", os.O_RDWR)                    # blocking
req = bytearray(struct.pack("<I16sBBB3sBx", 0, b"\0" * 16, 1, 0, 0, b"\0\0\0", 0))
fcntl.ioctl(fd, 0xc01c1b01, req)                                      # REGISTER_AGENT, GSI
agent = struct.unpack_from("<I", req, 0)[0]
held = os.open("/dev/infiniband/issm1", os.O_RDONLY)
results = {}
def attempt(name, fn):
    try:
        fn()
        results[name] = "returned"
    except OSError as e:
        results[name] = errno.errorcode[e.errno]
# a PerfMgt Get to LID 0xffff (nobody), never answered in time
mad = struct.pack("<I4xHBBIBBH8xHBB8x8x", agent, 0xffff, 0, 0, 0x100000, 0, 0, 0, 0, 0, 0)
mad = mad.ljust(64, b"\0") + bytes([1, 4, 1, 1]) + b"\0" * 252
threads = [threading.Thread(target=attempt, args=a) for a in (
    ("read", lambda: os.read(fd, 64 + 256)),
    ("write", lambda: os.write(fd, mad)),          # waits for the read's f_pos lock
    ("issm", lambda: os.open("/dev/infiniband/issm1", os.O_RDONLY)))]
for t in threads:
    t.start()
    time.sleep(0)
# blocked means: every thread sits in its system call (read, write, openat)
want = {"0", "1", "257"}
while True:
    calls = set()
    for f in glob.glob("/proc/self/task/*/syscall"):
        try:
            calls.add(open(f).read().split()[0])
        except OSError:
            pass
    if want <= calls:
        break
    time.sleep(0.01)
print("blocked", flush=True)
for t in threads:
    t.join()
for k in sorted(results):
    print(k, results[k])
PY
"$ibemu" exec --instance $D -- python3 "$work/blockers.py" >"$work/blockers.out" 2>&1 &
blockers=$!
end=$((SECONDS + tool_timeout))
until grep -qs '^blocked$' "$work/blockers.out" || ! kill -0 $blockers 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.1; done
expect_eq "three clients blocked" blocked "$(head -1 "$work/blockers.out")"
down_inst $D
end=$((SECONDS + tool_timeout))
while kill -0 $blockers 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
kill -9 $blockers 2>/dev/null
wait $blockers
expect_eq "the blocked clients return by themselves" 0 $?
out=$(cat "$work/blockers.out")
expect_match "the blocked read fails with EIO" '^read EIO$' "$out"
# (over io_uring a request caught between the daemon's queues and its end
# gets the kernel's ECANCELED)
expect_match "the write behind it fails" '^write (EIO|ENOTCONN|ECONNABORTED|ECANCELED)$' "$out"
expect_match "the blocked issm open fails with ENXIO" '^issm ENXIO$' "$out"

# --- down: the daemon goes, and with it its mount namespace and mounts
daemon=$(cat "$IBEMU_RUN_DIR/$A/pid")
ns=$(readlink "/proc/$daemon/ns/mnt")
expect_match "the instance's mounts live in the daemon's namespace" " $IBEMU_RUN_DIR/$A/fs fuse" "$(cat "/proc/$daemon/mounts")"
expect_eq "and not in ours" 0 "$(grep -c "$IBEMU_RUN_DIR/$A" /proc/mounts)"
down_inst $A
out=$("$ibemu" status --instance $A)
expect_eq "status after down" 3 $?
expect_eq "no process is left in the instance's namespace" "" \
	"$(for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "${p#/proc/}"; done)"
out=$("$ibemu" status --instance $B --json)
expect_match "the other instance is untouched" '"running":true' "$out"
down_inst $B

e2e_done
