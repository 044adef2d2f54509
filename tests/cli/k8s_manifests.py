#!/usr/bin/env python3
"""The Kubernetes example (docs/examples/kubernetes) against the binaries
it names: every ibemud option the DaemonSet passes exists, the host name
comes from the node, the key is private, the device plugin hands out the
nodes ibemud makes, and the example pod asks for that resource. No
cluster runs here (docs/multihost.md says what was not run).

usage: k8s_manifests.py IBEMUD DOCS_EXAMPLES_KUBERNETES_DIR"""
import pathlib
import re
import subprocess
import sys

import yaml

ibemud, folder = sys.argv[1], pathlib.Path(sys.argv[2])
failed = 0
checks = 0


def check(what, ok, detail=""):
    global failed, checks
    checks += 1
    if not ok:
        failed += 1
        print(f"FAIL {what}" + (f": {detail}" if detail else ""))


docs = {}
for f in sorted(folder.glob("*.yaml")):
    for d in yaml.safe_load_all(f.read_text()):
        docs[(d["kind"], d["metadata"]["name"])] = d

ds = docs[("DaemonSet", "ibemud")]["spec"]["template"]["spec"]
c = ds["containers"][0]
helptext = subprocess.run([ibemud, "--help"], capture_output=True, text=True).stdout
for arg in c["args"]:
    opt = arg.split("=", 1)[0]
    check(f"ibemud knows {opt}", re.search(rf"\s{re.escape(opt)}\b", helptext) is not None)
args = dict(a.split("=", 1) if "=" in a else (a, "") for a in c["args"])
check("the daemons share the host network", ds.get("hostNetwork") is True)
env = {e["name"]: e for e in c.get("env", [])}
check("--host is the node's name", args.get("--host") == "$(NODE_NAME)" and
      env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName")
mounts = {m["name"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in ds["volumes"]}
check("the topology comes from the ConfigMap",
      args["--topology"].startswith(mounts["topology"]["mountPath"] + "/") and "configMap" in vols["topology"])
check("the key comes from the Secret, readable by its owner only (ibemud refuses others)",
      args["--subnet-key"].startswith(mounts["key"]["mountPath"] + "/") and
      vols["key"]["secret"]["defaultMode"] & 0o077 == 0)
check("devices and sysfs reach the node", args.get("--transport") == "cuse" and "--global" in args and
      mounts["dev"].get("mountPropagation") == "Bidirectional" and
      mounts["sys"].get("mountPropagation") == "Bidirectional")
check("privileged (mounts, CUSE)", c["securityContext"].get("privileged") is True)

plugin = docs[("DaemonSet", "ibemu-device-plugin")]["spec"]["template"]["spec"]["containers"][0]
pargs = plugin["args"]
domain = next(a.split("=", 1)[1] for a in pargs if a.startswith("--domain="))
device = yaml.safe_load(pargs[pargs.index("--device") + 1])
paths = [p["path"] for g in device["groups"] for p in g["paths"]]
for node in ("/dev/infiniband/uverbs0", "/dev/infiniband/umad0", "/dev/infiniband/rdma_cm"):
    check(f"the plugin hands out {node}", any(pathlib.PurePath(node).match(p) for p in paths))
resource = f"{domain}/{device['name']}"

pod = docs[("Pod", "rdma-client")]["spec"]
pc = pod["containers"][0]
check(f"the pod asks for {resource}", resource in pc["resources"]["limits"])
pm = {m["mountPath"] for m in pc["volumeMounts"]}
for d in ("/sys/class/infiniband", "/sys/class/infiniband_verbs", "/sys/class/infiniband_mad"):
    check(f"the pod sees {d}", d in pm)

print(f"k8s-manifests: {checks - failed} passed, {failed} failed")
sys.exit(1 if failed or not checks else 0)
