#!/usr/bin/env python3
"""Splits a topology file over hosts: host= lines before each host's nodes.

--by leaves (the default): each switch that has CAs (a leaf) goes to the
next host in turn and takes its CAs (those cabled to it by their port 1)
with it; the other switches (spines) are dealt out in turn too.
--by cas: every switch stays with the first host, the CAs are dealt out
in turn by leaf (each host its HCAs, one host the switch fabric).
The records themselves are copied as they are.

usage: split_topology.py [--by leaves|cas] IN OUT NAME=ADDR:PORT...
"""
import re
import sys


def records(text):
    """(node id, type, record text) for each record, in file order"""
    out = []
    for block in re.split(r"\n\s*\n", text):
        m = re.search(r'^(Switch|Ca|Hca|Rt)\s+\d+\s+"([^"]+)"', block, re.M)
        if m:
            out.append((m.group(2), m.group(1), block.strip("\n")))
    return out


def main():
    args = sys.argv[1:]
    by = "leaves"
    if args[0] == "--by":
        by, args = args[1], args[2:]
    src, dst, hosts = args[0], args[1], [h.split("=", 1) for h in args[2:]]
    recs = records(open(src).read())
    kind = {nid: t for nid, t, _ in recs}
    owner, leaf_of = {}, {}
    for nid, t, block in recs:
        if t in ("Ca", "Hca"):
            m = re.search(r'^\[1\]\S*\s+"([^"]+)"', block, re.M)
            if m:
                leaf_of[nid] = m.group(1)
    leaves = [nid for nid, t, _ in recs if t == "Switch" and nid in leaf_of.values()]
    others = [nid for nid, t, _ in recs if t == "Switch" and nid not in leaves]
    for i, nid in enumerate(leaves):
        owner[nid] = i % len(hosts)
    for i, nid in enumerate(others):
        owner[nid] = i % len(hosts)
    for nid, t, _ in recs:
        if nid not in owner:
            owner[nid] = owner.get(leaf_of.get(nid), 0)
    if by == "cas":
        for nid in leaves + others:
            owner[nid] = 0
    with open(dst, "w") as f:
        for h, (name, addr) in enumerate(hosts):
            f.write(f'host="{name}" addr="{addr}"\n\n')
            for nid, _, block in recs:
                if owner[nid] == h:
                    f.write(block + "\n\n")


main()
