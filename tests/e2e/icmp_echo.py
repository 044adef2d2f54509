#!/usr/bin/env python3
# One ICMP echo to an address, from a raw socket (ping may not be
# installed): prints "reply" or "no reply" and exits 0 or 1.
# usage: icmp_echo.py ADDRESS [SECONDS]
import socket
import struct
import sys


def checksum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


dst = sys.argv[1]
wait = float(sys.argv[2]) if len(sys.argv) > 2 else 5
payload = b'ibemu ipoib echo'
head = struct.pack('!BBHHH', 8, 0, 0, 0x1b1b, 1)
echo = struct.pack('!BBHHH', 8, 0, checksum(head + payload), 0x1b1b, 1) + payload
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(wait)
s.sendto(echo, (dst, 0))
try:
    while True:
        r = s.recv(2048)
        ihl = (r[0] & 15) * 4
        if r[ihl] == 0 and r[ihl + 4:] == echo[4:]:
            print('reply')
            sys.exit(0)
except socket.timeout:
    print('no reply')
    sys.exit(1)
