# SPDX-License-Identifier: LGPL-2.1-or-later
"""A carbon plaintext receiver the Graphite tests control (loopback only).

Usage: receiver.py PORT OUT [--reset-after K] [--small-buffer] [--reset-at-once]
Accepts connections one after the other; prints "listening", then "connection N" for each
one and "line 20 of connection N" at its 20th line on stdout (line-buffered); appends every complete line it reads to OUT (a partial line
at the end of a connection is dropped, as carbon does), "#conn N" before each connection's.
--reset-after K: after K lines on the first connection, reset it (RST) and say "reset".
--small-buffer: a 4 KiB receive buffer, so that a receiver the test stops (SIGSTOP) soon
stops the sender too.
--reset-at-once: read nothing; reset each connection (RST) as soon as it is accepted, then
say "connection N" (so that the reset is out when the test sees it).
"""
import socket
import struct
import sys


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    reset_after = int(sys.argv[sys.argv.index("--reset-after") + 1]) if "--reset-after" in sys.argv else 0
    small = "--small-buffer" in sys.argv
    at_once = "--reset-at-once" in sys.argv
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if small:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ls.bind(("127.0.0.1", port))
    ls.listen(4)
    print("listening", flush=True)
    n = 0
    with open(out, "a") as f:
        while True:
            c, _ = ls.accept()
            n += 1
            if at_once:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.close()
                print("connection %d" % n, flush=True)
                continue
            print("connection %d" % n, flush=True)
            f.write("#conn %d\n" % n)
            f.flush()
            buf, lines = b"", 0
            while True:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
                *done, buf = buf.split(b"\n")
                for l in done:
                    f.write(l.decode() + "\n")
                    lines += 1
                    if lines == 20:
                        print("line 20 of connection %d" % n, flush=True)
                f.flush()
                if reset_after and n == 1 and lines >= reset_after:
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close()
                    print("reset", flush=True)
                    break
            c.close()


main()
