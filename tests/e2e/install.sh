#!/usr/bin/env bash
# ibemu as installed: `meson install` into a DESTDIR puts every file where
# the system looks for it, the installed ibemu finds the installed ibemud,
# ibemud tells a service manager when it is ready (Type=notify), and the
# CI recipe of docs/ci.md (docs/examples/ci-job.sh) passes ten times in a
# row from the installed binaries, leaving no process, mount or run
# directory behind.
# usage: install.sh IBEMU_BINARY (in its build directory)
set -u
ibemu_built=$1
ibemu=$ibemu_built # for lib.sh's helpers
. "$(dirname "$0")/lib.sh"
e2e_setup install
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$(dirname "$ibemu_built")/.." && pwd)

dest=$work/dest
out=$(meson install -C "$build" --destdir "$dest" --no-rebuild 2>&1)
expect_eq "meson install into a DESTDIR" 0 $?
prefix=$(meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
root=$dest$prefix
for f in bin/ibemu sbin/ibemud share/man/man1/ibemu.1 share/man/man8/ibemud.8 \
	share/bash-completion/completions/ibemu bin/ibemu-rsh share/man/man1/ibemu-rsh.1; do
	expect_eq "installed: $f" 0 "$(test -s "$root/$f"; echo $?)"
done
expect_eq "ibemu-rsh is executable" 0 "$(test -x "$root/bin/ibemu-rsh"; echo $?)"
libdir=$(meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
expect_eq "installed: ibemu's libibverbs provider" 0 "$(test -s "$root/$libdir/libibverbs/libibemu-rdmav34.so"; echo $?)"
expect_match "it binds libibverbs' provider ABI 34" 'verbs_register_driver_34' \
	"$(objdump -T "$root/$libdir/libibverbs/libibemu-rdmav34.so" 2>&1 | grep IBVERBS_PRIVATE_34)"
expect_eq "and exports nothing" "" "$(nm -D --defined-only "$root/$libdir/libibverbs/libibemu-rdmav34.so" 2>&1)"
unit=$(find "$dest" -name 'ibemud@.service' | head -1)
expect_match "the systemd unit runs the installed ibemud" "^ExecStart=$prefix/sbin/ibemud --instance %i" "$(cat "$unit" 2>/dev/null)"
expect_match "and waits for its readiness" '^Type=notify' "$(cat "$unit" 2>/dev/null)"
for page in man1/ibemu.1 man1/ibemu-rsh.1; do
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$root/share/man/$page" 2>&1 >/dev/null)
	expect_eq "$page renders without warnings" "" "$out"
done
out=$("$root/bin/ibemu" --version)
expect_match "the installed ibemu runs" '^ibemu [0-9]' "$out"

# ibemud as a Type=notify service: READY=1 once the devices are there,
# STOPPING=1 on SIGTERM (a datagram socket stands in for systemd)
cat >"$work/notify.py" <<'PY'
import os, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sys.argv[1])
sock.settimeout(float(sys.argv[2]))
ready_file = sys.argv[3]
try:
    while True:
        msg = sock.recv(4096).decode()
        for line in msg.splitlines():
            extra = " (devices ready)" if line == "READY=1" and os.path.exists(ready_file) else ""
            print(line + extra, flush=True)
            if line == "STOPPING=1":
                sys.exit(0)
except socket.timeout:
    print("timeout", flush=True)
PY
N=svc-$$
python3 "$work/notify.py" "$work/notify.sock" "$tool_timeout" "$IBEMU_RUN_DIR/$N/ready.json" >"$work/notify.out" &
listener=$!
until [ -S "$work/notify.sock" ] || ! kill -0 $listener 2>/dev/null; do sleep 0.05; done
NOTIFY_SOCKET=$work/notify.sock "$root/sbin/ibemud" --instance $N --sm >"$work/svc.out" 2>&1 &
svc=$!
end=$((SECONDS + tool_timeout))
until grep -qs '^READY=1' "$work/notify.out" || ! kill -0 $svc 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.1; done
expect_eq "ibemud says READY=1 once its devices are ready" "READY=1 (devices ready)" "$(grep '^READY=1' "$work/notify.out")"
out=$("$root/bin/ibemu" exec --instance $N -- ibstat ibemu0 2>&1)
expect_match "the service's devices answer" "CA 'ibemu0'" "$out"
kill $svc
wait $svc
expect_eq "ibemud exits 0 on SIGTERM" 0 $?
wait $listener
expect_match "and says STOPPING=1 first" '^STOPPING=1' "$(cat "$work/notify.out")"
sanitizer_check $N
rm -rf "${IBEMU_RUN_DIR:?}/$N"

# the CI recipe, from the installed binaries, ten times
leftovers() { # processes of this suite's recipe instances, mounts, run directories
	pgrep -af "ci-$$-" | grep -v -e pgrep -e "install.sh" || true
	grep "$IBEMU_RUN_DIR" /proc/mounts || true
	ls -A "$IBEMU_RUN_DIR" 2>/dev/null || true
}
for i in $(seq 10); do
	out=$(IBEMU="$root/bin/ibemu" IBEMU_INSTANCE=ci-$$-$i timeout "$tool_timeout" bash "$src/docs/examples/ci-job.sh" 2>&1)
	rc=$?
	expect_eq "ci-job.sh run $i exits 0" 0 $rc
	[ $rc -eq 0 ] || printf '%s\n' "$out" | tail -20
	expect_eq "and leaves nothing behind" "" "$(leftovers)"
done

e2e_done
