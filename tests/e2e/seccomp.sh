#!/usr/bin/env bash
# The seccomp transport's files as the kernel's behave (docs/transports.md),
# seen by a program under `ibemu exec` doing its own system calls (Python's
# os module, ctypes for what it does not wrap): the numbers of the reserved
# block, fstat() of a character device with sysfs's numbers, dup(), the
# program's own file at a reserved number, errnos of bad sizes and
# pointers, a blocking read a signal interrupts, poll(), IsSM held by an
# open issm file across fork() and released with its last reference, a
# caller killed in the middle of a call, and garbage at the daemon's door.
# usage: seccomp.sh IBEMU_BINARY
set -u
ibemu=$1
. "$(dirname "$0")/lib.sh"
e2e_setup seccomp
export IBEMU_TRANSPORT=seccomp

S=seccomp-$$
out=$("$ibemu" up --instance $S 2>&1)
expect_eq "up" 0 $?
expect_eq "exec's transport" seccomp \
	"$("$ibemu" status --instance $S --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["exec_transport"])')"

# py CODE...: Python under exec, with the helpers below in scope
py() {
	inst $S python3 -c "
import ctypes, errno, os, select, signal, stat, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def cerr(rc):
    return 'ok %d' % rc if rc >= 0 else errno.errorcode[ctypes.get_errno()]
def sysdev(path):
    return open(path).read().strip()
$1"
}

out=$(py '
fd = os.open("/dev/infiniband/umad0", os.O_RDWR | os.O_NONBLOCK)
st = os.fstat(fd)
print("fd", fd, "chr", stat.S_ISCHR(st.st_mode), "mode %o" % stat.S_IMODE(st.st_mode))
print("rdev %d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)), "sysfs", sysdev("/sys/class/infiniband_mad/umad0/dev"))
for name, cls in (("uverbs0", "infiniband_verbs/uverbs0"), ("rdma_cm", "misc/rdma_cm")):
    f = os.open("/dev/infiniband/" + name, os.O_RDWR)
    s = os.stat(f)
    print(name, "%d:%d" % (os.major(s.st_rdev), os.minor(s.st_rdev)), sysdev("/sys/class/%s/dev" % cls))
d = os.dup(fd)
print("dup", d, stat.S_ISCHR(os.fstat(d).st_mode))
print("read of a nonblocking umad with nothing queued:", cerr(libc.read(fd, ctypes.create_string_buffer(400), 400)))
print("read shorter than the header:", cerr(libc.read(fd, ctypes.create_string_buffer(400), 10)))
print("write from a bad pointer:", cerr(libc.write(fd, ctypes.c_void_p(8), 320)))
print("write too short:", cerr(libc.write(fd, ctypes.create_string_buffer(400), 8)))
print("unknown ioctl:", cerr(libc.ioctl(fd, 0x1234, 0)))
ro = os.open("/dev/infiniband/umad0", os.O_RDONLY | os.O_NONBLOCK)
print("write on a read-only open:", cerr(libc.write(ro, ctypes.create_string_buffer(400), 320)))
p = select.poll(); p.register(fd, select.POLLIN | select.POLLOUT)
print("poll:", sorted(e for _, e in p.poll(0)))
own = os.open("/etc/hostname", os.O_RDONLY)
os.dup2(own, 1000)
print("own file at 1000:", os.read(1000, 100) == open("/etc/hostname", "rb").read(100), stat.S_ISREG(os.fstat(1000).st_mode))
')
expect_match "a device descriptor is in the reserved block" '^fd (89[6-9]|9[0-9][0-9]|10[01][0-9]|102[0-3]) chr True mode 666$' "$out"
rdev=$(sed -n 's/^rdev \([0-9:]*\) sysfs \(.*\)/\1 \2/p' <<<"$out")
expect_eq "fstat's numbers are sysfs's" "231:0 231:0" "$rdev"
expect_match "uverbs0: the kernel's 231:192, as sysfs says" '^uverbs0 231:192 231:192$' "$out"
expect_match "rdma_cm: as sysfs says" '^rdma_cm ([0-9]+:[0-9]+) \1$' "$out"
expect_match "dup() stays in the block, a character device" '^dup (89[6-9]|9[0-9][0-9]|10[01][0-9]|102[0-3]) True$' "$out"
expect_match "read with nothing queued: EAGAIN" 'nothing queued: EAGAIN$' "$out"
expect_match "read shorter than the header: EINVAL" 'shorter than the header: EINVAL$' "$out"
expect_match "write from a bad pointer: EFAULT" 'bad pointer: EFAULT$' "$out"
expect_match "write too short: EINVAL" 'write too short: EINVAL$' "$out"
expect_match "unknown ioctl: ENOTTY" 'unknown ioctl: ENOTTY$' "$out"
expect_match "write on a read-only open: EBADF" 'read-only open: EBADF$' "$out"
expect_match "poll: writable, not readable" '^poll: \[4\]$' "$out"
expect_match "the program's own file at a reserved number is its own" '^own file at 1000: True True$' "$out"

# --- a blocking read waits in the daemon; a signal frees it (EINTR to a
# handler that does not restart), and the file still works after
out=$(py '
fd = os.open("/dev/infiniband/umad0", os.O_RDWR)
class Alarm(Exception): pass
def on(sig, frame): raise Alarm()
signal.signal(signal.SIGALRM, on)
signal.setitimer(signal.ITIMER_REAL, 0.5)
t = time.monotonic()
try:
    os.read(fd, 400)
    print("read returned")
except Alarm:
    print("interrupted after %.1f s" % (time.monotonic() - t))
os.set_blocking(fd, False)
print("then:", cerr(libc.read(fd, ctypes.create_string_buffer(400), 400)))
')
expect_match "a signal frees a blocking read (after its 0.5 s)" '^interrupted after (0\.[4-9]|[1-9][0-9]*\.[0-9]) s$' "$out"
expect_match "the file works after" '^then: EAGAIN$' "$out"

# --- IsSM: held by an open issm file, across fork(), until its last
# reference goes
capmask() { inst $S smpquery -D portinfo 0 1 | sed -n 's/^CapMask:\.*\(0x[0-9a-f]*\).*/\1/p'; }
issm_bit() { echo $(( ($(capmask) >> 1) & 1 )); }
expect_eq "IsSM clear at first" 0 "$(issm_bit)"
mark=$work/parent-closed
inst $S python3 -c '
import os, sys, time
fd = os.open("/dev/infiniband/issm0", os.O_RDONLY)
if os.fork() == 0:
    while not os.path.exists(sys.argv[1] + ".done"):
        time.sleep(0.05)   # the child holds it on until told
    os._exit(0)
os.close(fd)               # the parent lets go at once
open(sys.argv[1], "w").close()
os.wait()
' "$mark" >/dev/null &
holder=$!
for _ in $(seq 200); do [ -e "$mark" ] && break; sleep 0.05; done
expect_eq "IsSM set while a forked child holds the issm file" 1 "$(issm_bit)"
touch "$mark.done"
wait $holder
bit=1
for _ in $(seq 50); do bit=$(issm_bit); [ "$bit" = 0 ] && break; sleep 0.1; done
expect_eq "IsSM clear once its last holder is gone" 0 "$bit"

# --- a second issm open waits for the first, and a nonblocking one fails
out=$(py '
a = os.open("/dev/infiniband/issm0", os.O_RDONLY)
try:
    os.open("/dev/infiniband/issm0", os.O_RDONLY | os.O_NONBLOCK)
    print("second: opened")
except OSError as e:
    print("second:", errno.errorcode[e.errno])
if os.fork() == 0:
    os.close(a)       # its copy of the claim would keep it from itself
    t = time.monotonic()
    b = os.open("/dev/infiniband/issm0", os.O_RDONLY)
    print("blocked open got it after %.1f s" % (time.monotonic() - t), flush=True)
    os._exit(0)
time.sleep(1)
os.close(a)
os.wait()
')
expect_match "a nonblocking issm open of a held port: EAGAIN" '^second: EAGAIN$' "$out"
expect_match "a blocking one gets it when the holder closes (after its 1 s)" '^blocked open got it after (0\.9|[1-9][0-9]*\.[0-9]) s$' "$out"

# --- a caller killed in the middle of a blocking call: the daemon goes on
(inst $S python3 -c 'import os; os.read(os.open("/dev/infiniband/umad0", os.O_RDWR), 400)' >/dev/null) 2>/dev/null &
sleep 1
pkill -KILL -f "os.read\(os.open\(\"/dev/infiniband/umad0\"" 2>/dev/null
sleep 0.5
out=$(inst $S smpquery -D nodeinfo 0)
expect_match "the daemon serves the next program" 'NodeType:\.*Channel Adapter' "$out"

# --- garbage at the door: the daemon refuses it and goes on
door=$("$ibemu" status --instance $S --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seccomp_socket"])')
out=$(python3 -c "
import socket, array
s = socket.socket(socket.AF_UNIX); s.connect('$door')
fds = array.array('i', [0, 1, 2])
s.sendmsg([b'garbage!'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
s.settimeout(5)
try: print('answer', s.recv(1))
except Exception as e: print('closed', type(e).__name__)
")
expect_match "a hand-over that is not one is refused" '^(answer b|closed)' "$out"
out=$(inst $S smpquery -D nodeinfo 0)
expect_match "and the daemon serves on" 'NodeType:\.*Channel Adapter' "$out"

# --- where the transport cannot be had, exec says why in one line and the
# program gets the device files
out=$(ulimit -n 200; inst $S ibv_devinfo -d ibemu0)
expect_match "a limit too low for the block: one line saying so" \
	'^ibemu exec: the seccomp transport is not in use \(RLIMIT_NOFILE leaves no room for the reserved descriptors\); the devices are FUSE files, without verbs or rdma_cm$' "$out"
expect_match "and libibverbs cannot open the device" 'Failed to open device' "$out"

down_inst $S
e2e_done
