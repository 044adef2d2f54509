#!/usr/bin/env bash
# Descriptors a program hands the daemon (issue 38, item 2): TCP sockets
# with SO_LINGER {1, 30 s} and unsent data, whose last close waits 30 s,
# and the daemon's own files, sent where the daemon receives descriptors:
# queued on a QP's doorbell before the device takes it (200 of them, more
# than its receive buffer once had room for: the kernel released the rest
# inside the daemon's recvmsg), sent on it after, loaded into the end of a
# completion-channel spare the daemon keeps, handed to the seccomp door
# (and queued after a hand-over there); and a door flooded with
# connections that never speak.
# While the client holds them (and so the lingering), another program's
# SMP and verbs query must be answered within 10 s: a bound on a 30 s
# stall, not a measure of speed.
# usage: hostile_fds.sh IBEMU_BINARY FD_HOSTILE
set -u
ibemu=$(readlink -f "$1")
client=$(readlink -f "$2")
. "$(dirname "$0")/lib.sh"
e2e_setup hostile-fds
verbs_transport
[ "$transport" = seccomp ] || { echo "hostile-fds: the seccomp transport's suite; skipped"; exit 77; }

F=hostile-fds-$$
"$ibemu" up --instance $F >/dev/null
expect_eq "up" 0 $?
expect_exec_transport $F
dev=/dev/infiniband/uverbs0
# SO_PASSRIGHTS (6.16): the device's doorbells refuse descriptors
refuses=$(python3 -c 'import os; v = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2]); print(int(v >= (6, 16)))')

# honest WHAT: another program's SMP and verbs query are answered
honest() {
	local out
	out=$(timeout 10 "$ibemu" exec --instance $F -- smpquery -D nodeinfo 0 2>&1)
	expect_match "$1: another program's SMP is answered" 'NodeType:\.*Channel Adapter' "$out"
	out=$(timeout 10 "$ibemu" exec --instance $F -- ibv_devinfo -d ibemu0 2>&1)
	expect_match "$1: another program's ibv_devinfo is answered" 'state:[[:space:]]*PORT_' "$out"
}

# hold NAME ARGS...: the client under exec (its output in $work/NAME.out)
# until it says it holds what it sent
hold() {
	local name=$1
	shift
	mkfifo "$work/$name.in"
	inst $F "$client" "$@" <"$work/$name.in" >"$work/$name.out" 2>/dev/null &
	exec 7>"$work/$name.in"
	holding "$name"
}

holding() { # NAME
	local end=$((SECONDS + 60))
	until grep -q '^holding' "$work/$1.out" || [ $SECONDS -ge $end ]; do sleep 0.2; done
	out=$(cat "$work/$1.out")
}

# release NAME: the client goes (SIGKILL: its own last close of a
# lingering socket would wait), and with it the listener its sockets wait on
release() {
	local pid
	pid=$(sed -n 's/^holding //p' "$work/$1.out")
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	exec 7>&-
	wait 2>/dev/null
}

# --- 200 on a doorbell before the device takes it, and the daemon's own
# sysfs file with them; a few more after
hold doorbell doorbell $dev 200 /sys/class/infiniband/ibemu0/node_guid
expect_match "200 lingering sockets queued on a doorbell" '^queued on the doorbell: ok$' "$out"
expect_match "the device takes the doorbell" '^attach_qp_ring: ok$' "$out"
if [ "$refuses" = 1 ]; then
	expect_match "a doorbell the device holds refuses descriptors" '^sent on the doorbell after: EPERM$' "$out"
fi
honest "doorbell"
release doorbell

# --- the program's own device file, passed back on a doorbell
hold own doorbell $dev 0 $dev
expect_match "the program's uverbs file queued on a doorbell" '^attach_qp_ring: ok$' "$out"
honest "own device file"
release own

# --- a spare whose kept end holds them: refused, the daemon's copies
# closed where their release cannot stall it
hold spare spare $dev 8 /sys/class/infiniband/ibemu0/node_guid
expect_match "lingering sockets queued in a spare" '^queued in the spare: ok$' "$out"
expect_match "a spare with something queued is refused" '^get_context with the spare: EINVAL$' "$out"
honest "spare"
release spare

# --- 200 at the seccomp door. The door reads at once: the client sends
# them while the daemon is stopped, so that its own copies are gone before
# the daemon takes them (its release is the last, as it would be for a
# client that does not wait for the daemon).
door=$("$ibemu" status --instance $F --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seccomp_socket"])')
daemon=$(cat "$IBEMU_RUN_DIR/$F/pid")
mkfifo "$work/door.in"
kill -STOP "$daemon"
"$client" door "$door" 200 <"$work/door.in" >"$work/door.out" 2>&1 &
exec 7>"$work/door.in"
holding door
kill -CONT "$daemon"
expect_match "100 lingering sockets handed to the door" '^sent to the door: ok$' "$out"
expect_match "and 100 more after them" '^sent after: ok$' "$out"
honest "door"
release door

# --- the door flooded with connections that say nothing (or nonsense)
# and stay: an exec after them still gets its listener taken
out=$(python3 - "$door" "$ibemu" $F <<'PY'
import socket, subprocess, sys
door, ibemu, inst = sys.argv[1:4]
held = []
for i in range(64):
    s = socket.socket(socket.AF_UNIX)
    s.connect(door)
    if i % 4 == 0:
        s.send(b'xx')
    held.append(s)
r = subprocess.run(['timeout', '60', ibemu, 'exec', '--instance', inst, '--', 'ibstat', 'ibemu0'],
                   capture_output=True, text=True)
print('exec', r.returncode)
print(r.stdout + r.stderr)
PY
)
expect_match "64 silent connections at the door: exec still works" '^exec 0$' "$out"
expect_match "and its program reaches the device" "CA 'ibemu0'" "$out"

down_inst $F
e2e_done
