#!/usr/bin/env bash
# Hostile local clients (issue 9): raw umad clients that read and write
# with absurd counts, unaligned and faulting buffers, flood the daemon,
# hold thousands of files and agents, and die by the dozen in the middle of
# their calls; users who are not root; bad input to the CLI; run directories
# and pid files that someone else prepared. After each attack the daemon
# must be alive, answer an SMP, and hold less memory than its limits allow.
# With IBEMU_FUSE_URING=on (meson test e2e-hostile-uring) the FUSE
# requests go over io_uring, served by a thread per CPU.
# usage: hostile.sh IBEMU_BINARY UMAD_HOSTILE
set -u
ibemu=$(readlink -f "$1") # the relative run directory test runs it from elsewhere
hostile=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh"
e2e_setup hostile
chmod 755 "$work" # nobody must reach the 1777 directory below
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
u0=/dev/infiniband/umad0
u1=/dev/infiniband/umad1

A=hostile-$$
"$ibemu" up --instance $A >/dev/null
expect_fuse_requests $A
expect_eq "up" 0 $?
daemon=$(cat "$IBEMU_RUN_DIR/$A/pid")
start_opensm $A 0x0002c90300000101
wait_for $A 120 sh -c 'ibstat ibemu0 | grep -q "State: Active" && ibstat ibemu1 | grep -q "State: Active"'
expect_eq "OpenSM brings both ports up" 0 $?
lid1=$(($(inst $A cat /sys/class/infiniband/ibemu1/ports/1/lid)))

# What the daemon may hold. One attack below makes it keep at most one
# file's receive budget (kMaxQueuedBytes, 128 MiB: "unread" peaks at ~150
# MiB with a message in flight; a flood of small MADs stops at
# MAX_UMAD_RECV_LIST_SIZE, ~70 MiB), 4096 outstanding sends, 1024
# reassemblies or 128k agents (~30 MiB each); the daemon itself needs ~20
# MiB, and glibc keeps freed heap for the next attack rather than adding to
# it. 512 MiB is that with room to spare, and far below what a daemon
# without the bounds reaches (GiBs, or an abort). VmHWM is checked too: a
# buffer sized by what a caller claims and freed at once shows nowhere
# else. An ASan build pays ~3x: redzones, shadow, a 256 MiB quarantine.
bound_kb=$((512 * 1024))
grep -q libasan "/proc/$daemon/maps" 2>/dev/null && bound_kb=$((3 * bound_kb))

alive() { # PID...: how many have not died yet (zombies have)
	local p n=0
	for p; do
		[ -e "/proc/$p" ] && [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" != Z ] && n=$((n + 1))
	done
	echo $n
}

# healthy WHAT: the daemon survived WHAT, answers, and stays within bounds;
# when it did not survive, nothing after can be tested
healthy() {
	if [ "$(alive "$daemon")" = 0 ]; then
		bad "after $1: the daemon is gone"
		e2e_done
		exit 1
	fi
	local out rss hwm
	out=$(inst $A smpquery -D nodedesc 0)
	expect_match "after $1: smpquery -D nodedesc 0 answers" '^Node Description:\.+' "$out"
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status")
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon/status")
	if [ "${rss:-0}" -gt 0 ] && [ "$rss" -lt $bound_kb ] && [ "${hwm:-0}" -lt $bound_kb ]; then
		ok
	else
		bad "after $1: daemon memory VmRSS ${rss:-?} kB, VmHWM ${hwm:-?} kB (bound $bound_kb kB)"
	fi
}

# an attack as root inside the instance
attack() { inst $A "$hostile" "$@"; }

# open files per port (umad0 umad1) and whether issm0 is held, from status
ports() {
	"$ibemu" status --instance $A --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
ps = [p for d in j["devices"] for p in d["ports"]]
print(" ".join(str(p["open_files"]) for p in ps), "issm0 held" if ps[0]["issm_held"] else "issm0 free")'
}
# until_ports WANT: bounded wait for the files of killed clients to be released
until_ports() {
	local end=$((SECONDS + tool_timeout)) got
	while got=$(ports) && [ "$got" != "$1" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
	echo "$got"
}
baseline=$(ports)
healthy "start"

# --- reads whose count is absurd: the daemon must not allocate what the
# caller claims (it did: 1 GiB for the first, and died of the second). A
# zero-length read never reaches a FUSE daemon: the kernel returns 0.
out=$(attack hugeread $u0)
expect_eq "hugeread" "read 0: 0
read 1073741824: EAGAIN
read 1099511627776: EAGAIN
read 1099511627776 with a MAD queued: 320
it is the HCA's NodeInfo: method 0x81 tid 0x1234" "$out"
healthy "hugeread"

# --- a 3 MiB RMPP message from unaligned buffers (the kernel splits such
# reads and writes at offsets that are not page multiples); a reader's
# buffer and a writer's buffer with a hole after 1 MiB
out=$(attack unaligned $u0 $u1 $((3 << 20)))
expect_eq "unaligned" "to LID $lid1, 3145728 data bytes
write from an unaligned buffer: 3145832
read into an unaligned buffer: tid 1, 3145832 bytes, same
write: 3145832
read into a buffer with a hole at 1024 KiB: EFAULT
read again into a good buffer: tid 2, 3145832 bytes, same
write from a buffer with a hole at 1024 KiB: EFAULT
write: 3145832
the next message: tid 4, 3145832 bytes, same
anything more: EAGAIN" "$out"
healthy "unaligned"

# --- 60 messages of 3 MiB that nobody reads while they arrive: the queue
# keeps what fits in its 128 MiB budget (42), and drops the rest
out=$(attack unread $u0 $u1 60 $((3 << 20)))
expect_eq "unread RMPP messages" "unread: 60 written, 60 accepted, 60 ended, 42 kept by the receiver" "$out"
healthy "unread RMPP messages"
# the same over six receiving files: each file's bound alone would keep all
# 100 (42 each); the user's budget (256 MiB, emu/memory_budget.h) keeps
# about 85 of 3 MiB, and the receivers STOP the rest
out=$(attack unread $u0 $u1 100 $((3 << 20)) 6)
kept=$(sed -n 's/.* \([0-9]*\) kept by the receivers$/\1/p' <<<"$out")
expect_match "unread over six files: all written" '^unread: 100 written' "$out"
if [ -n "$kept" ] && [ "$kept" -gt 42 ] && [ "$kept" -le $((256 / 3)) ]; then ok; else
	bad "unread over six files: the user's budget bounds what is kept (42 < kept <= 85)"; echo "  $out"; fi
healthy "unread RMPP messages over six files"

# --- a registration whose id cannot be copied back is undone
out=$(attack regfault $u0)
expect_eq "regfault" "register, argument read-only: EFAULT
the same, writable: ok
once more (its method is taken now): EINVAL" "$out"
healthy "regfault"

# --- unmapped pointers and absurd sizes; a queued MAD survives bad reads.
# A write of 2^40 bytes is refused before anything is read from it.
out=$(attack badptr $u0)
partial='with a hole after|good request|before a hole'
expect_eq "badptr" "write from an unmapped buffer: EFAULT
write of 2^40 bytes from a 4 KiB buffer: ENOMEM
write of 16 MiB from a 4 KiB buffer: EFAULT
read into an unmapped buffer, queue empty: EFAULT
register, unmapped argument: EFAULT
unregister, unmapped argument: EFAULT
register, argument running into a hole: EFAULT
ioctl of the largest size (16383): ENOTTY
read into an unmapped buffer, a MAD queued: EFAULT
read into a good buffer: 320, the NodeInfo answer
and then: EAGAIN" "$(grep -Ev "$partial" <<<"$out")"
# Buffers that fault within their first page: the kernel hands the FUSE
# server only the mapped part, but the caller's read() or write() is the
# whole count. The kernel's umad answers EFAULT, sends nothing, and keeps
# the MAD queued.
expect_eq "badptr: buffers that fault within their first page" "write of a MAD with a hole after 120 bytes: EFAULT
answers up to a good request's: 0x52
read into 100 bytes before a hole: EFAULT
read into 300 bytes before a hole: EFAULT" "$(grep -E "$partial" <<<"$out")"
healthy "badptr"

# --- every size from 0 to the header + 24, both header layouts
out=$(attack tiny $u0)
expect_eq "tiny" "header 56 bytes
write 0: 0
write 1-80: EINVAL
read, queue empty 0: 0
read, queue empty 1-55: EINVAL
read, queue empty 56-80: EAGAIN
read, a MAD queued 0: 0
read, a MAD queued 1-80: EINVAL
read the MAD: 312
header 64 bytes
write 0: 0
write 1-88: EINVAL
read, queue empty 0: 0
read, queue empty 1-63: EINVAL
read, queue empty 64-88: EAGAIN
read, a MAD queued 0: 0
read, a MAD queued 1-88: EINVAL
read the MAD: 320" "$out"
healthy "tiny"

# --- poll() without a timeout, woken by the answer to a MAD another
# process sends on the same file (or ended by a signal), and with one
out=$(attack pollwait $u0)
expect_eq "pollwait" "poll, no timeout, a MAD sent meanwhile: 1, POLLIN
read it: 320
ppoll, no timeout, a MAD sent meanwhile: 1, POLLIN
read it: 320
poll, no timeout, a signal: EINTR
poll, 300 ms, nothing comes: 0, none" "$out"
healthy "pollwait"

# --- a flood that never reads: 250,000 answers, more than a file may queue
out=$(attack flood $u0 250000)
expect_eq "flood" "flood: 250000 written, 250000 accepted" "$out"
healthy "flood"

# --- requests that wait 60 s for answers that never come: at most 4096
out=$(attack outstanding $u1)
expect_eq "outstanding sends" "outstanding: 4096 accepted, then ENOMEM" "$out"
healthy "outstanding sends"

# --- first RMPP segments that never go on: 1024 reassemblies at once, then STOP
out=$(attack rmppflood $u0 $u1 2000)
expect_eq "rmppflood" "rmppflood: 2000 first segments sent, 1024 ACKs, 976 STOPs (RESX), 0 other" "$out"
healthy "rmppflood"

# --- 4000 files with 32 agents each, checked while they are held
mkfifo "$work/agents.in"
"$ibemu" exec --instance $A -- "$hostile" agents $u0 4000 <"$work/agents.in" >"$work/agents.out" 2>&1 &
agents=$!
exec 9>"$work/agents.in"
end=$((SECONDS + tool_timeout))
until grep -q '^ready' "$work/agents.out" || ! kill -0 $agents 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.1; done
expect_eq "agents: all held" "ready 4000 files 128000 agents" "$(cat "$work/agents.out")"
healthy "4000 files x 32 agents (held)"
(trap '' PIPE; echo go >&9) 2>/dev/null # it may have died
exec 9>&-
wait $agents
expect_eq "agents: closed" "ready 4000 files 128000 agents
closed" "$(cat "$work/agents.out")"
out=$(until_ports "$baseline")
expect_eq "agents: every file released" "$baseline" "$out"
healthy "4000 files x 32 agents (closed)"

# --- past the per-user cap: EMFILE, whoever holds the other files
read -r f0 f1 _ <<<"$baseline"
held=$((f0 + f1 + 1)) # OpenSM's umad and issm files
out=$(echo | attack agents $u1 5000)
expect_eq "agents past the per-user cap" "open $((4096 - held + 1)): EMFILE
ready $((4096 - held)) files $(((4096 - held) * 32)) agents
closed" "$out"
out=$(echo | attack agents $u1 10)
expect_eq "the cap gives files back" "ready 10 files 320 agents
closed" "$out"
healthy "the per-user cap"

# --- kill storms: 50 clients in blocking reads and polls, issm opens
# (OpenSM holds issm0, so they wait), ioctl and write loops (umad ioctls
# never block), all SIGKILLed at once, twice
in_call() { # PID KIND OUTFILE: the client is where it should be killed
	local sc
	case $2 in
	read | poll | issm)
		grep -q '^\(reading\|polling\|opening\)' "$3" || return 1
		sc=$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)
		[ "$2" = read ] && [ "$sc" = 0 ] && return 0
		[ "$2" = poll ] && [ "$sc" = 7 ] && return 0
		[ "$2" = issm ] && [ "$sc" = 257 ] && return 0
		return 1 ;;
	*) grep -q '^looping' "$3" ;;
	esac
}
for round in 1 2; do
	pids=() kinds=()
	for i in $(seq 0 49); do
		case $((i % 5)) in
		0) kind=read dev=/dev/infiniband/umad$((i % 2)) ;;
		1) kind=poll dev=/dev/infiniband/umad$((i % 2)) ;;
		2) kind=issm dev=/dev/infiniband/issm0 ;;
		3) kind=ioctl dev=/dev/infiniband/umad$((i % 2)) ;;
		4) kind=write dev=/dev/infiniband/umad$((i % 2)) ;;
		esac
		"$ibemu" exec --instance $A -- "$hostile" block "$dev" "$kind" >"$work/storm.$i" 2>&1 &
		pids+=("$!") kinds+=("$kind")
		disown # no "Killed" notices; alive() below tells when they are gone
	done
	end=$((SECONDS + tool_timeout)) ready=0
	for i in "${!pids[@]}"; do
		until in_call "${pids[$i]}" "${kinds[$i]}" "$work/storm.$i" || [ $SECONDS -ge $end ]; do sleep 0.05; done
		in_call "${pids[$i]}" "${kinds[$i]}" "$work/storm.$i" && ready=$((ready + 1))
	done
	expect_eq "storm $round: 50 clients in their calls" 50 $ready
	kill -9 "${pids[@]}"
	# bounded: a client whose request the daemon never answers stays in D
	end=$((SECONDS + tool_timeout))
	until [ "$(alive "${pids[@]}")" = 0 ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
	expect_eq "storm $round: every client died" 0 "$(alive "${pids[@]}")"
	out=$(until_ports "$baseline")
	expect_eq "storm $round: every file released, OpenSM still holds issm0" "$baseline" "$out"
	healthy "kill storm $round"
done

# --- users other than root: the device files are 0600 root, as the
# kernel's, so nobody cannot open them; sysfs stores are root's too
out=$(inst $A stat -L -c '%a %U' $u0 /dev/infiniband/issm0)
expect_eq "umad and issm files are 0600 root" "600 root
600 root" "$out"
for mode in hugeread regfault outstanding badptr tiny; do
	out=$(inst $A "${nobody[@]}" "$hostile" $mode $u0)
	expect_eq "nobody: $mode cannot open umad0" "open $u0: EACCES" "$out"
done
out=$(inst $A "${nobody[@]}" "$hostile" unaligned $u0 $u1 4096)
expect_eq "nobody: unaligned cannot open either" "open $u0: EACCES
open $u1: EACCES" "$out"
out=$(echo | inst $A "${nobody[@]}" "$hostile" agents $u0 10)
expect_eq "nobody: agents" "open 1: EACCES
ready 0 files 0 agents
closed" "$out"
out=$(inst $A "${nobody[@]}" "$hostile" block /dev/infiniband/issm1 issm)
expect_eq "nobody: issm" "opening /dev/infiniband/issm1
issm open: EACCES" "$out"
out=$(inst $A "${nobody[@]}" sh -c 'printf x >/sys/class/infiniband/ibemu0/node_desc' 2>&1)
expect_match "nobody: node_desc cannot be written" 'Permission denied' "$out"
out=$(inst $A sh -c 'printf 9 >/sys/class/infiniband/ibemu0/ports/1/lid' 2>&1)
expect_match "root: a read-only attribute cannot be written" 'Permission denied' "$out"
out=$("${nobody[@]}" "$ibemu" down --instance $A 2>&1)
expect_eq "nobody: down fails" 1 $?
out=$("${nobody[@]}" "$ibemu" status --instance $A 2>&1)
expect_match "nobody: status says only root can see it" 'is root.s: .* is readable by root only, so only root can see or control it' "$out"
healthy "unprivileged attempts"

# --- a node description that is not UTF-8 (or holds NULs): status and
# its JSON still work
inst $A sh -c "printf '\377\376' >/sys/class/infiniband/ibemu0/node_desc"
out=$("$ibemu" status --instance $A --json)
expect_eq "status --json with a non-UTF-8 node description exits 0" 0 $?
expect_eq "and is JSON, with the bytes replaced" "$(printf '\357\277\275\357\277\275')" \
	"$(python3 -c 'import json, sys; print(json.load(sys.stdin)["devices"][0]["node"])' <<<"$out")"
out=$("$ibemu" status --instance $A)
expect_eq "status with it exits 0" 0 $?
inst $A sh -c "head -c 100 /dev/zero >/sys/class/infiniband/ibemu0/node_desc"
out=$("$ibemu" status --instance $A --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["devices"][0]["node"]))')
expect_eq "a node description of NULs: 64 of them kept" 64 "$out"
inst $A sh -c "head -c $((16 << 20)) /dev/zero | tr '\\0' a >/sys/class/infiniband/ibemu0/node_desc"
out=$(inst $A smpquery -D nodedesc 0)
expect_match "a 16 MiB node description: its first 64 bytes" "^Node Description:\.+a{64}\$" "$out"
healthy "odd node descriptions"
inst $A sh -c "printf 'ibemu-host1 HCA-1' >/sys/class/infiniband/ibemu0/node_desc"

# --- status while the daemon cannot answer: stopped, then frozen
kill -STOP "$daemon"
end=$((SECONDS + tool_timeout))
until [ "$(awk '{ print $3 }' "/proc/$daemon/stat")" = T ] || [ $SECONDS -ge $end ]; do sleep 0.05; done
out=$(timeout "$tool_timeout" "$ibemu" status --instance $A 2>&1)
rc=$?
kill -CONT "$daemon"
expect_eq "status of a stopped daemon returns" 0 $rc
expect_match "and says it is stopped" 'is stopped \(SIGSTOP\?\)' "$out"
healthy "SIGSTOP/SIGCONT"
freezer=/sys/fs/cgroup/freezer
if [ -w $freezer/cgroup.procs ] || [ -w $freezer/tasks ]; then
	home=$(awk -F: '$2 == "freezer" { print $3 }' "/proc/$daemon/cgroup")
	cg=$freezer/ibemu-hostile-$$
	mkdir "$cg"
	# every thread: with --fuse-uring the daemon has a request thread per CPU
	for t in /proc/"$daemon"/task/*; do echo "${t##*/}" >"$cg/tasks"; done
	echo FROZEN >"$cg/freezer.state"
	end=$((SECONDS + tool_timeout))
	until [ "$(cat "$cg/freezer.state")" = FROZEN ] || [ $SECONDS -ge $end ]; do sleep 0.05; done
	out=$(timeout "$tool_timeout" "$ibemu" status --instance $A 2>&1)
	rc=$?
	echo THAWED >"$cg/freezer.state"
	for t in /proc/"$daemon"/task/*; do echo "${t##*/}" >"$freezer$home/tasks"; done
	rmdir "$cg"
	expect_eq "status of a frozen daemon returns" 0 $rc
	expect_match "and says it did not answer" 'did not answer within 5 s' "$out"
	healthy "a frozen daemon"
else
	echo "hostile: no cgroup v1 freezer; the frozen-daemon case is skipped"
fi

# --- topology files that are not text
printf 'Switch 8 "sw1"\nSwitch 8 "sw\377"\n' >"$work/bad8.topo"
out=$("$ibemu" topo check "$work/bad8.topo" 2>&1)
expect_eq "topo check of non-UTF-8 text fails" 1 $?
expect_match "and names file and line" 'bad8.topo:2: text that is not UTF-8' "$out"
out=$(timeout "$tool_timeout" /usr/bin/time -f 'maxrss %M' "$ibemu" topo check /dev/zero 2>&1)
expect_eq "topo check /dev/zero fails" 1 $?
expect_match "and says why" '/dev/zero: larger than 256 MiB: not a topology file' "$out"
maxrss=$(sed -n 's/^maxrss //p' <<<"$out")
# the text read so far (256 MiB) and one copy of it while the string grows
if [ "${maxrss:-0}" -gt 0 ] && [ "$maxrss" -lt $((bound_kb * 2)) ]; then ok; else bad "topo check /dev/zero used ${maxrss:-?} kB"; fi
out=$("$ibemu" topo check "$work" 2>&1)
expect_eq "topo check of a directory fails" 1 $?
expect_match "and says why" "$work: is a directory, not a topology file" "$out"

# --- instance names that look like options
out=$("$ibemu" up --instance=-rf 2>&1)
expect_eq "an instance named -rf is refused" 2 $?
expect_match "with the naming rule" 'instance names use letters' "$out"
out=$("$ibemu" up --instance -rf 2>&1)
expect_match "also as a separate argument" 'instance names use letters' "$out"
out=$("$ibemu" down --instance=-rf 2>&1)
expect_eq "down -rf is refused too" 2 $?
expect_eq "nothing was created for it" "" "$(find "$IBEMU_RUN_DIR" -maxdepth 1 -name '-*')"

# --- a relative IBEMU_RUN_DIR
R=rel-$$
out=$(cd "$work" && IBEMU_RUN_DIR=relrun "$ibemu" up --instance $R 2>&1)
expect_eq "up with a relative IBEMU_RUN_DIR" 0 $?
out=$(cd / && IBEMU_RUN_DIR=$work/relrun timeout "$tool_timeout" "$ibemu" exec --instance $R -- \
	sh -c 'readlink -f /dev/infiniband/umad0; smpquery -D nodedesc 0' 2>&1)
expect_match "its /dev/infiniband links resolve" "^$work/relrun/$R/fs/dev/umad0\$" "$out"
expect_match "and the tools work" '^Node Description:\.+ibemu-host1' "$out"
saved=$IBEMU_RUN_DIR
IBEMU_RUN_DIR=$work/relrun
down_inst $R
IBEMU_RUN_DIR=$saved

# --- run directories prepared by someone else, under a 1777 directory
pub=$work/pub
mkdir -m 1777 "$pub"
mkdir -m 755 "$work/rootdir"
"${nobody[@]}" mkdir "$pub/victim"
"${nobody[@]}" ln -s "$pub/victim" "$pub/linked"
"${nobody[@]}" mkdir "$pub/nbbase"
"${nobody[@]}" ln -s "$work/rootdir" "$pub/evil"
# refused WHAT RUN_DIR INSTANCE WHY: up there fails, and says why (an
# instance that starts anyway is stopped at once: no daemon may outlive us)
refused() {
	local out rc
	out=$(IBEMU_RUN_DIR=$2 "$ibemu" up --instance "$3" 2>&1)
	rc=$?
	[ $rc = 0 ] && ! IBEMU_RUN_DIR=$2 "$ibemu" down --instance "$3" >/dev/null 2>&1 && kill "$(cat "$2/$3/pid")"
	expect_eq "up $1 fails" 1 $rc
	expect_match "up $1: says why" "$4" "$out"
}
refused "in an instance directory nobody made" "$pub" victim "$pub/victim belongs to uid 65534, not to us: refusing it"
expect_eq "and puts nothing in it" "" "$(ls -A "$pub/victim")"
refused "through nobody's symlink as the instance directory" "$pub" linked "$pub/linked is a symbolic link: refusing it"
refused "under a run directory nobody owns" "$pub/nbbase" x "$pub/nbbase belongs to another user \(uid 65534\)"
refused "under nobody's symlink to a root directory" "$pub/evil" x "$pub/evil"
expect_eq "and creates nothing where it points" "" "$(ls -A "$work/rootdir")"

# --- a pid file naming another instance's daemon: a stopped instance
# whose pid file holds (or links to) A's pid must not act on A's daemon
S=stopped-$$
"$ibemu" up --instance $S >/dev/null && "$ibemu" down --keep-logs --instance $S >/dev/null
sanitizer_check $S
for how in written linked; do
	if [ $how = written ]; then
		echo "$daemon" >"$IBEMU_RUN_DIR/$S/pid"
	else
		rm -f "$IBEMU_RUN_DIR/$S/pid"
		ln -s "../$A/pid" "$IBEMU_RUN_DIR/$S/pid"
	fi
	out=$("$ibemu" down --instance $S 2>&1)
	expect_eq "$how pid: down of the stopped instance fails" 1 $?
	expect_match "$how pid: because it is not running" 'is not running' "$out"
	out=$("$ibemu" exec --instance $S -- true 2>&1)
	expect_eq "$how pid: exec in it fails" 1 $?
	"$ibemu" status --instance $S >/dev/null 2>&1
	expect_eq "$how pid: status says it is not running" 3 $?
	healthy "a $how pid file"
done
rm -f "$IBEMU_RUN_DIR/$S/pid"

echo "hostile: the daemon's peak was $(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon/status") kB (bound $bound_kb kB)"
down_inst $A
e2e_done
