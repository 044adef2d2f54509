#!/usr/bin/env bash
# The Kubernetes example's image and DaemonSet, run the way this machine
# allows: no cluster (no kubelet in Debian bookworm), so podman runs the
# DaemonSet's container as kubelet would on node "b" of a subnet split over
# three hosts (tests/data/split3.topo; network namespaces as in
# e2e-multihost): the image from tools/image.sh, the container's command,
# args, env and volume mounts read from ibemu-daemonset.yaml, the host
# network of node b (its namespace), the topology as a ConfigMap volume and
# the key as a Secret volume with the manifest's mode. Hosts a and c are
# daemons outside containers.
#
# What differs from a cluster, because this kernel has no CUSE: the
# container runs with --transport=fuse instead of --transport=cuse
# --global, and without the /dev and /sys host mounts that only those
# need (the CUSE and --global paths run in the VM suite, outside a
# container).
#
# usage: k8s_image.sh IBEMU_BINARY DATA_DIR KUBERNETES_EXAMPLES_DIR
set -u
ibemu=$1
data=$2
manifests=$3
build=$(cd "$(dirname "$ibemu")/.." && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/lib.sh"
e2e_setup k8s-image
for tool in podman runc mmdebstrap ip nsenter; do
	command -v $tool >/dev/null || {
		echo "k8s-image: needs $tool (tools/install-deps.sh test)"
		exit 1
	}
done

. "$(dirname "$0")/netns.sh"
tag=k8s$$
image=localhost/ibemu-e2e-$tag:latest
ctr=ibemu-e2e-$tag-b
cleanup_all() {
	podman rm -f -t 0 "$ctr" >/dev/null 2>&1
	podman rmi -f "$image" >/dev/null 2>&1
	e2e_cleanup
	netns_cleanup
}
trap cleanup_all EXIT
netns_hosts "$tag" a b c || {
	echo "k8s-image: cannot make network namespaces with a bridge"
	exit 1
}

out=$("$src/tools/image.sh" "$build" --tag "$image" --archive "$work/image.tar" 2>&1)
expect_eq "tools/image.sh builds the image" 0 $?
[ $fail -eq 0 ] || { printf '%s\n' "$out"; exit 1; }
out=$(tar -xOf "$work/image.tar" index.json | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])')
expect_eq "... and saves it as an OCI archive, under the name a cluster's runtime gives it" "$image" "$out"

mkdir -p "$work/node-b-run"
head -c 32 /dev/urandom | base64 >"$work/subnet.key"
chmod 600 "$work/subnet.key"

# the container of the DaemonSet's pod, as podman arguments, one per
# line; the ConfigMap (the topology) and the Secret (the key) laid out as
# kubelet projects them into volumes: the file in ..data, a link to it
spec=$(python3 - "$manifests/ibemu-daemonset.yaml" b "$work" "$data/split3.topo" <<'EOF'
import os, re, shutil, sys, yaml
path, node, work, topo = sys.argv[1:]

def project(vol, src, name, mode):
    os.makedirs(f"{vol}/..data")
    shutil.copy(src, f"{vol}/..data/{name}")
    os.chmod(f"{vol}/..data/{name}", mode)
    os.symlink(f"..data/{name}", f"{vol}/{name}")
    return vol

ds = next(d for d in yaml.safe_load_all(open(path)) if d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = pod["containers"][0]
if pod.get("hostNetwork") is not True:
    sys.exit("the DaemonSet's pods must use the host network (the addr= of the topology)")
env = {}
for e in c.get("env", []):
    ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    env[e["name"]] = node if ref == "spec.nodeName" else e.get("value", "")
expand = lambda s: re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), s)
args = [expand(a) for a in c.get("args", [])]
# no CUSE on this kernel: FUSE files, no standard names (see the top)
args = ["--transport=fuse" if a == "--transport=cuse" else a for a in args if a != "--global"]
out = ["--privileged"] if c.get("securityContext", {}).get("privileged") else []
for k, v in env.items():
    out += ["--env", f"{k}={v}"]
vols = {v["name"]: v for v in pod["volumes"]}
for m in c["volumeMounts"]:
    v = vols[m["name"]]
    ro = ":ro" if m.get("readOnly") else ""
    if "configMap" in v:
        vol = project(f"{work}/configmap", topo, "subnet.topo", v["configMap"].get("defaultMode", 0o644))
        out += ["--volume", f"{vol}:{m['mountPath']}{ro}"]
    elif "secret" in v:
        vol = project(f"{work}/secret", f"{work}/subnet.key", "subnet.key", v["secret"].get("defaultMode", 0o644))
        out += ["--volume", f"{vol}:{m['mountPath']}{ro}"]
    elif v.get("hostPath", {}).get("path") == "/run/ibemu":
        out += ["--volume", f"{work}/node-b-run:{m['mountPath']}"]
    elif v.get("hostPath", {}).get("path") not in ("/dev", "/sys"):
        sys.exit(f"volume {m['name']}: not one this test knows how to give")
    # /dev and /sys: only for CUSE and --global (see the top)
out += ["--entrypoint", c["command"][0]]
print(pod.get("terminationGracePeriodSeconds", 30))
print("\n".join(out + ["IMAGE"] + c["command"][1:] + args))
EOF
)
expect_eq "the manifest's container reads" 0 $?
grace=$(head -1 <<<"$spec")
mapfile -t podargs < <(sed -e 1d -e "s|^IMAGE\$|$image|" <<<"$spec")
printf '  podman run %s\n' "${podargs[*]}"

I=e2e-k8s-$tag
up_host() { # HOST: that host's daemon, outside containers
	nsenter --net="/run/netns/${NS[$1]}" "$ibemu" up --instance "$I-$1" --topology "$work/configmap/subnet.topo" \
		--host "$1" --subnet-key "$work/subnet.key" 2>&1
}
for h in a c; do
	out=$(up_host $h)
	expect_eq "up host $h" 0 $?
done
# kubelet's part: the pod on node b, in its host network. Limits that
# this machine lets a container have (podman's defaults are above them and
# root here may not raise a limit)
podman run --detach --name "$ctr" --runtime runc --log-driver k8s-file --network "ns:/run/netns/${NS[b]}" \
	--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096 \
	"${podargs[@]}" >/dev/null
expect_eq "the DaemonSet's container starts on node b" 0 $?
status_in_pod() { # PYTHON-EXPR over `ibemu status --json` inside the pod, as s
	podman exec "$ctr" ibemu status --instance k8s --json |
		python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}
end=$((SECONDS + 60))
while [ "$(status_in_pod 'sum(p["state"] == "up" for p in s["split"]["peers"])')" != 2 ] && [ $SECONDS -lt $end ]; do
	sleep 0.5
done
expect_eq "in the pod, ibemu status: host b, both peers up" "b 2" \
	"$(status_in_pod 's["split"]["host"] + " " + str(sum(p["state"] == "up" for p in s["split"]["peers"]))')"
# (the pod's PIDs are not the node's, so `ibemu status` on the node
# cannot tell the daemon is alive; its run directory is there)
expect_eq "on the node, the pod's run directory is in the /run/ibemu hostPath" yes \
	"$([ -S "$work/node-b-run/k8s/control.sock" ] && echo yes)"

start_opensm "$I-a" 0x0002c90300000101
port_state() { inst "$I-a" smpquery -G portinfo 0x0002c90300000201 1 | sed -n 's/^LinkState:\.*//p'; }
end=$((SECONDS + 90))
while [ "$(port_state)" != Active ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
expect_eq "OpenSM in a brings the pod's HCA port (host2) to Active" Active "$(port_state)"
out=$(inst "$I-c" ibnetdiscover)
expect_match "ibnetdiscover in c sees the pod's switch" '^Switch.*"ibemu-sw2"' "$out"
expect_match "... and the pod's HCA" '^Ca.*"ibemu-host2 HCA-1"' "$out"
out=$(podman exec "$ctr" ibemu exec --instance k8s -- cat /sys/class/infiniband/ibemu0/ports/1/state 2>&1)
expect_eq "in the pod, its HCA's port is Active in sysfs" "4: ACTIVE" "$out"
# the libraries ibemu opens only when a command needs them are in the image
out=$(podman exec "$ctr" ibemu topo show --instance k8s --format svg 2>&1)
expect_match "in the pod, ibemu draws the fabric (Graphviz, opened to draw)" '^<svg' "$out"
out=$(podman exec "$ctr" sh -c 'timeout -s INT 2 ibemu capture --instance k8s -w /tmp/c.pcap 2>/dev/null; od -An -tx1 -N4 /tmp/c.pcap')
expect_eq "... and writes a capture file (libpcap, opened to write it)" " d4 c3 b2 a1" "$out"

sw1p7() { inst "$I-a" smpquery -G portinfo 0x0002c90200000001 7 | sed -n 's/^PhysLinkState:\.*//p'; }
expect_eq "sw1's cable to b is up in a" LinkUp "$(sw1p7)"

# deleting the pod: kubelet's SIGTERM (and its grace period), then the
# cables to b are pulled
podman stop -t "$grace" "$ctr" >/dev/null
expect_eq "the pod's ibemud exits 0 on SIGTERM" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$ctr")"
podman logs "$ctr" >"$work/pod.log" 2>&1
expect_match "... and said why in its log" 'signal 15: shutting down' "$(cat "$work/pod.log")"
no_sanitizer_report "the pod's ibemud" "$work/pod.log"
end=$((SECONDS + 30))
while [ "$(sw1p7)" != Polling ] && [ $SECONDS -lt $end ]; do sleep 0.5; done
expect_eq "... and sw1's cable to b is down in a" Polling "$(sw1p7)"

down_inst "$I-a"
down_inst "$I-c"
finished=1
echo "k8s-image: $pass checks passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
