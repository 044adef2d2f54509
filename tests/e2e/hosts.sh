#!/usr/bin/env bash
# Cluster hosts (docs/cluster.md): a topology whose local CAs sit in two
# hosts, hosta (two HCAs) and hostb (one), tests/data/hosts.topo. `ibemu
# hosts` lists them; `ibemu exec --host` runs a program in the host's own
# network namespace, seeing only its HCAs (ibstat, ibv_devices, the
# device and sysfs directories) and refused another host's device paths
# (ENOENT, also where the seccomp transport serves them, after unshare
# -rn, and at the instance's copies, which a host has covered); two
# programs of one host share its namespace, plain `exec` keeps the
# instance's, and each host has its own host name; rping between two
# programs of one host; rdma_cm binds and
# listens per host; an unknown host is an error (exit 2). Natively on the seccomp
# transport (e2e-hosts), on CUSE in the VM (vm-cuse-hosts).
# usage: hosts.sh IBEMU_BINARY TOPOLOGY_DIR
set -u
ibemu=$1
data=$2
. "$(dirname "$0")/lib.sh"
e2e_setup hosts
verbs_transport
chmod 755 "$work"

H=hosts-$$
"$ibemu" up --instance $H --ipoib --topology "$data/hosts.topo" --local "hosta HCA-1,hosta HCA-2,hostb HCA-1" >/dev/null 2>&1
expect_eq "up" 0 $?
expect_exec_transport $H

# IPoIB's interfaces are TUN devices: a kernel without the tun driver
# (the VM suite's guest loads no modules) has hosts without them, which
# e2e-hosts and e2e-ipoib check natively
tun=1
python3 -c 'import os; os.open("/dev/net/tun", os.O_RDWR)' 2>/dev/null || {
	tun=0
	echo "hosts: no TUN driver here: the IPoIB checks skipped"
}
out=$("$ibemu" hosts --instance $H)
if [ $tun = 1 ]; then
	expect_eq "ibemu hosts: the HCAs, and ib0, ib1 across a host's ports" "hosta
  ibemu0   0x0002c90300000100  \"hosta HCA-1\"
  ibemu1   0x0002c90300000200  \"hosta HCA-2\"
  ib0      10.200.0.1/16      ibemu0 port 1
  ib1      10.200.1.1/16      ibemu1 port 1
hostb
  ibemu2   0x0002c90300000300  \"hostb HCA-1\"
  ib0      10.200.2.1/16      ibemu2 port 1" "$out"
else
	expect_eq "ibemu hosts: the HCAs" "hosta
  ibemu0   0x0002c90300000100  \"hosta HCA-1\"
  ibemu1   0x0002c90300000200  \"hosta HCA-2\"
hostb
  ibemu2   0x0002c90300000300  \"hostb HCA-1\"" "$out"
fi
out=$("$ibemu" hosts --instance $H --json |
	python3 -c 'import json,sys; print(*("%s=%s" % (h["name"], ",".join(c["name"] + "/" + c["node_guid"] for c in h["hcas"])) for h in json.load(sys.stdin)["hosts"]))')
expect_eq "ibemu hosts --json" "hosta=ibemu0/0x0002c90300000100,ibemu1/0x0002c90300000200 hostb=ibemu2/0x0002c90300000300" "$out"

expect_match "ibemu status names the hosts" '^  hosts \(ibemu exec --host\): hosta: ibemu0 ibemu1; hostb: ibemu2$' \
	"$("$ibemu" status --instance $H)"

# on_host HOST CMD...: a tool run on one of the instance's hosts
on_host() { local h=$1; shift; timeout "$tool_timeout" "$ibemu" exec --instance $H --host "$h" -- "$@" 2>&1; }

expect_eq "ibstat -l on hosta: its two" "ibemu0 ibemu1" "$(on_host hosta ibstat -l | xargs)"
expect_eq "ibstat -l on hostb: its one" "ibemu2" "$(on_host hostb ibstat -l | xargs)"
expect_eq "ibstat -l without --host: all three" "ibemu0 ibemu1 ibemu2" "$(inst $H ibstat -l | xargs)"
expect_eq "ibv_devices on hosta" "ibemu0 ibemu1" "$(on_host hosta ibv_devices | awk 'NR > 2 {print $1}' | xargs)"
expect_eq "ibv_devices on hostb" "ibemu2" "$(on_host hostb ibv_devices | awk 'NR > 2 {print $1}' | xargs)"
expect_eq "a host's own host name" "hosta hostb $(hostname)" \
	"$(on_host hosta hostname) $(on_host hostb uname -n) $(inst $H hostname)"
expect_eq "hostb's /dev/infiniband" "issm2 rdma_cm umad2 uverbs2" "$(on_host hostb ls /dev/infiniband | xargs)"
expect_eq "hostb's infiniband_mad" "abi_version issm2 umad2" "$(on_host hostb ls /sys/class/infiniband_mad | xargs)"
expect_eq "hostb's infiniband_verbs" "abi_version uverbs2" "$(on_host hostb ls /sys/class/infiniband_verbs | xargs)"

# another host's device paths: ENOENT, as for a device the node lacks,
# even where the seccomp transport would serve the path itself
# opens PATH...: each path opened read-write: "PATH opened" or its errno
opens='
import errno, os, sys
for p in sys.argv[1:]:
    try:
        os.close(os.open(p, os.O_RDWR))
        print(os.path.basename(p), "opened")
    except OSError as e:
        print(os.path.basename(p), errno.errorcode[e.errno])
'
d=/dev/infiniband
out=$(on_host hosta python3 -c "$opens" $d/uverbs2 $d/umad2 $d/issm2 $d/uverbs1 $d/rdma_cm)
expect_eq "hosta opens hostb's devices: ENOENT; its own open" "uverbs2 ENOENT
umad2 ENOENT
issm2 ENOENT
uverbs1 opened
rdma_cm opened" "$out"

# nor through where the instance keeps every HCA's device files and
# sysfs views: covered in a host (ENOENT), whatever the transport
r=$IBEMU_RUN_DIR/$H
out=$(on_host hosta python3 -c "$opens" $r/fs/dev/umad2 $r/fs/dev/uverbs2 $r/fs/class/infiniband_mad/umad2/dev \
	$r/fs/hosts/hostb/class/infiniband_mad/umad2/dev $r/scratch/dev-infiniband/uverbs2 $d/umad1)
expect_eq "hosta opens the instance's copies of hostb's device files: ENOENT" "umad2 ENOENT
uverbs2 ENOENT
dev ENOENT
dev ENOENT
uverbs2 ENOENT
umad1 opened" "$out"

# the host is the program's, not its namespace's: one that leaves the
# host's network namespace (unshare -rn) still finds only its host's
# devices
# (the seccomp transport's check: on CUSE the host's files are all a
# program can name)
if [ $transport = seccomp ]; then
	out=$(on_host hosta unshare -rn python3 -c "$opens" $d/uverbs2 $d/uverbs1)
	expect_eq "hosta, after unshare -rn, opens hostb's uverbs2: ENOENT" "uverbs2 ENOENT
uverbs1 opened" "$out"
fi

# a program of a host holding a device is one of the instance's clients
"$ibemu" exec --instance $H --host hostb -- python3 -c '
import os, time
fd = os.open("/dev/infiniband/uverbs2", os.O_RDWR)
print("open", flush=True)
time.sleep(60)' >"$work/holder.out" 2>&1 &
holder=$!
for _ in $(seq 100); do grep -q open "$work/holder.out" && break; sleep 0.1; done
out=$("$ibemu" status --instance $H --json | python3 -c 'import json,sys; print(*(c["pid"] for c in json.load(sys.stdin)["clients"]))')
expect_eq "ibemu status names a host's program holding a device" "$holder" "$out"
kill $holder
wait $holder 2>/dev/null

# one network namespace per host, shared by its programs; plain exec's is
# the instance's (this shell's)
a1=$(on_host hosta readlink /proc/self/ns/net)
a2=$(on_host hosta readlink /proc/self/ns/net)
b1=$(on_host hostb readlink /proc/self/ns/net)
expect_match "a host's network namespace" '^net:\[[0-9]+\]$' "$a1"
expect_eq "two programs of hosta: one network namespace" "$a1" "$a2"
[ "$a1" != "$b1" ] && [ "$a1" != "$(readlink /proc/self/ns/net)" ]
expect_eq "hostb's differs from hosta's and the instance's" 0 $?
expect_eq "plain exec: the instance's network namespace" "$(readlink /proc/self/ns/net)" \
	"$(inst $H readlink /proc/self/ns/net)"
expect_eq "a host's loopback is up" "lo UP" "$(on_host hostb ip -br link show lo | awk '{print $1, $2}' | sed 's/UNKNOWN/UP/')"
# IPoIB (docs/cluster.md): an interface per port of the host's HCAs, in
# order; without an SM no join, so no carrier
if [ $tun = 1 ]; then
	expect_eq "hosta's interfaces: lo, ib0 and ib1" "lo ib0 ib1" "$(on_host hosta ip -o link | awk -F': ' '{print $2}' | xargs)"
	expect_match "hosta's ib1 on ibemu1's address" 'inet 10\.200\.1\.1/16' "$(on_host hosta ip -o addr show ib1)"
	expect_match "no SM: ib0 has no carrier" 'NO-CARRIER' "$(on_host hostb ip -o link show ib0)"
fi

out=$("$ibemu" exec --instance $H --host nosuch -- true 2>&1)
expect_eq "an unknown host: exit 2" 2 $?
expect_eq "an unknown host: what to do" \
	"ibemu exec: instance \"$H\" has no host \"nosuch\" (its hosts: hosta, hostb; \`ibemu hosts\` lists them)" "$out"

# a ready file of another daemon (stale: its pid is not the running
# daemon's) names no holder to join
cp "$IBEMU_RUN_DIR/$H/ready.json" "$work/ready.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["pid"]+=1; json.dump(j, open(sys.argv[1], "w"))' \
	"$IBEMU_RUN_DIR/$H/ready.json"
out=$("$ibemu" exec --instance $H --host hosta -- true 2>&1)
expect_eq "a stale ready file: exit 1" 1 $?
expect_eq "a stale ready file: no namespaces to join" \
	"ibemu exec: host \"hosta\" of instance \"$H\" has no namespaces of its own (a --global instance has none; otherwise their holder is gone)" "$out"
cp "$work/ready.json" "$IBEMU_RUN_DIR/$H/ready.json"

# rdma_cm: a server and a client of hosta over its two addresses
start_opensm $H 0x0002c90300000101
wait_for $H 120 sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu2 | grep -q "State: Active"'
expect_eq "OpenSM brings the ports up" 0 $?
timeout "$tool_timeout" "$ibemu" exec --instance $H --host hosta -- rping -s -a 10.200.1.1 -C 3 -v >"$work/rping.server" 2>&1 &
server=$!
for _ in 1 2 3 4 5; do
	sleep 1
	on_host hosta rping -c -a 10.200.1.1 -I 10.200.0.1 -C 3 -v >"$work/rping.client" && break
done
expect_eq "rping between two programs of hosta: the client" 3 "$(grep -c '^ping data: rdma-ping-' "$work/rping.client")"
wait $server
expect_eq "rping on hosta: the server exits 0" 0 $?
# hostb binds none of hosta's addresses (rdma_bind_addr: EADDRNOTAVAIL)
out=$(on_host hostb rping -s -a 10.200.0.1 -C 1 -v)
expect_match "hostb cannot bind hosta's address" 'rdma_bind_addr: Cannot assign requested address' "$out"
# each host has its own port space, and a wildcard listener hears its
# host's ports only: servers of both hosts on one port, each reached by
# the other host's client, and only that one (each server ends after
# its one client)
servers=()
for h in hostb hosta; do
	timeout "$tool_timeout" "$ibemu" exec --instance $H --host $h -- rping -s -p 7471 -C 1 -v >"$work/any.$h" 2>&1 &
	servers+=($!)
	sleep 1
done
for to in "hosta 10.200.2.1" "hostb 10.200.0.1"; do
	read -r from addr <<<"$to"
	for _ in 1 2 3 4 5; do
		on_host "$from" rping -c -a "$addr" -p 7471 -C 1 -v >"$work/any.client" && break
		sleep 1
	done
	expect_eq "$from's client reaches the other host's wildcard listener at $addr" 1 \
		"$(grep -c '^ping data: rdma-ping-' "$work/any.client")"
done
wait "${servers[@]}"
expect_eq "both hosts listened on port 7471 (no rdma_bind_addr or rdma_listen error)" 0 \
	"$(cat "$work/any.hosta" "$work/any.hostb" | grep -c 'rdma_')"
for h in hosta hostb; do
	expect_eq "$h's wildcard listener served exactly the other host's one client" 1 \
		"$(grep -c '^server ping data: rdma-ping-' "$work/any.$h")"
done

stop_opensm $H

# a description whose first word is no name for a directory ("..",
# "a/b") puts its HCA in a host of its own, named after the HCA; and a
# killed daemon leaves no host namespaces behind: their holders end with
# it (bounded wait: a killed daemon takes a moment to go)
K=hosts-kill-$$
sed -e 's|"hosta HCA-2"|"../x HCA-2"|' -e 's|"hostb HCA-1"|"a/b HCA-1"|' "$data/hosts.topo" >"$work/names.topo"
"$ibemu" up --instance $K --topology "$work/names.topo" --local "hosta HCA-1,../x HCA-2,a/b HCA-1" >/dev/null 2>&1
expect_eq "up (odd host names)" 0 $?
expect_eq "first words that are no host names: hosts named after their HCAs" "hosta: ibemu0; ibemu1: ibemu1; ibemu2: ibemu2" \
	"$("$ibemu" status --instance $K | sed -n 's/^  hosts (ibemu exec --host): //p')"
holders=$("$ibemu" status --instance $K --json | python3 -c 'import json,sys; print(*(h["holder"] for h in json.load(sys.stdin)["hosts"]))')
expect_match "three hosts, each with a holder" '^[0-9]+ [0-9]+ [0-9]+$' "$holders"
kill -9 "$(cat "$IBEMU_RUN_DIR/$K/pid")"
for _ in $(seq 100); do
	left=$(for p in $holders; do [ -d /proc/$p ] && echo "$p"; done)
	[ -z "$left" ] && break
	sleep 0.1
done
expect_eq "the holders end with a killed daemon" "" "$left"
rm -rf "${IBEMU_RUN_DIR:?}/$K"
e2e_done
