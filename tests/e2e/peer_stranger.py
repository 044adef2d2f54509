#!/usr/bin/env python3
# A stranger at the peer port of a split subnet (tests/e2e/hostile_peer.sh):
# holds connections from the source addresses it is given and reopens each
# as soon as the daemon closes it, until killed. A connection marked
# "forge" answers the daemon's hello with one of its own naming a peer
# (the topology digest copied from the daemon's), which the daemon takes
# for a peer's until its AUTH, which never comes.
# usage: peer_stranger.py ADDR PORT PEER_NAME SOURCE:COUNT[:forge]...
#   forge: every other connection of that source forges its hello
import os
import selectors
import socket
import sys
import time

addr, port, peer = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
slots = []
for spec in sys.argv[4:]:
    source, count, *flags = spec.split(":")
    for i in range(int(count)):
        slots.append((source, "forge" in flags and i % 2 == 0))

sel = selectors.DefaultSelector()


def connect(slot):
    while True:
        s = socket.socket()
        try:
            s.bind((slot[0], 0))
            s.setblocking(False)
            s.connect_ex((addr, port))
            break
        except OSError:  # out of ports for a moment
            s.close()
            time.sleep(0.01)
    sel.register(s, selectors.EVENT_READ, {"slot": slot, "got": b"", "forged": False})


def forge(s, data):
    """Answers the daemon's hello (length, IBEMUSN1, version, name, digest,
    nonce) with the same naming PEER"""
    got = data["got"]
    if len(got) < 4:
        return
    n = int.from_bytes(got[:4], "big")
    if len(got) < 4 + n or n < 10:
        return
    body = got[4:4 + n]
    name = body[9]
    digest = body[10 + name:10 + name + 32]
    hello = body[:9] + bytes([len(peer)]) + peer + digest + os.urandom(32)
    data["forged"] = True
    try:
        s.send(len(hello).to_bytes(4, "big") + hello)
    except OSError:  # closed meanwhile: the next read says so
        pass


for slot in slots:
    connect(slot)
while True:
    for key, _ in sel.select(timeout=1):
        s, data = key.fileobj, key.data
        try:
            got = s.recv(4096)
        except OSError:
            got = b""
        if not got:  # closed by the daemon (or refused): again, at once
            sel.unregister(s)
            s.close()
            time.sleep(0.002)  # spare the machine's CPUs, not the daemon
            connect(data["slot"])
            continue
        if data["slot"][1] and not data["forged"]:
            data["got"] += got
            forge(s, data)
