# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in for journald's native socket (loopback only, a path the test owns).

Usage: journal_socket.py SOCKET OUT
Binds a SOCK_DGRAM Unix socket at SOCKET, prints "listening", then decodes every datagram
with journald's native protocol (KEY=value lines, or KEY, newline, a 64-bit little-endian
length, the bytes, newline) and appends one JSON object per entry to OUT (values as
strings; a repeated key becomes a list). A datagram that does not parse is written as
{"_BAD": reason} so the test fails on it. Stops at SIGTERM.
"""
import json
import os
import socket
import struct
import sys


def parse(d):
    e, i = {}, 0
    while i < len(d):
        nl = d.find(b"\n", i)
        if nl < 0:
            raise ValueError("no newline after byte %d" % i)
        line = d[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            if nl + 9 > len(d):
                raise ValueError("binary field %r without its length" % k)
            n = struct.unpack("<Q", d[nl + 1:nl + 9])[0]
            v = d[nl + 9:nl + 9 + n]
            if len(v) != n or d[nl + 9 + n:nl + 10 + n] != b"\n":
                raise ValueError("binary field %r cut" % k)
            i = nl + 10 + n
        k, v = k.decode(), v.decode("utf-8", "replace")
        if k in e:
            e[k] = (e[k] if isinstance(e[k], list) else [e[k]]) + [v]
        else:
            e[k] = v
    return e


def main():
    path, out = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    print("listening", flush=True)
    with open(out, "a") as f:
        while True:
            d = s.recv(1 << 20)
            try:
                e = parse(d)
            except ValueError as x:
                e = {"_BAD": str(x)}
            f.write(json.dumps(e) + "\n")
            f.flush()


main()
