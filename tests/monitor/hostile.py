# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hostile and broken HTTP clients against a running monitor, on raw sockets.

    python3 hostile.py HOST PORT MONITOR_PID

Each case sends something malformed or abusive and checks that the monitor answers with a
clear error status or closes the connection, and that a well-formed request still gets 200
afterwards. Idle connections: 200 of them open at once do not stop a new request, and the
monitor closes idle ones after its --idle-timeout (2 s in the test). Every socket operation
has a timeout; prints one line per case and exits 1 on the first failure.
"""
import socket
import sys
import time

HOST, PORT, MON = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HOSTHDR = "%s:%d" % (HOST, PORT)


def fail(msg):
    sys.exit("hostile: FAIL: " + msg)


def conn(timeout=30):
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    return s


def read_all(s, limit=1 << 20):
    data = b""
    try:
        while len(data) < limit:
            b = s.recv(65536)
            if not b:
                break
            data += b
            if b"\r\n\r\n" in data and b"Content-Length: " in data:
                head, _, body = data.partition(b"\r\n\r\n")
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
    except (ConnectionResetError, BrokenPipeError):
        pass
    return data


def status_of(resp):
    if not resp:
        return None  # closed without an answer
    line = resp.split(b"\r\n", 1)[0]
    if not line.startswith(b"HTTP/1."):
        fail("not an HTTP answer: %r" % line[:80])
    return int(line.split()[1])


def still_serving(what):
    s = conn()
    s.sendall(("GET /info HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % HOSTHDR).encode())
    st = status_of(read_all(s))
    s.close()
    if st != 200:
        fail("after %s, GET /info answered %s" % (what, st))


def case(name, payload, allowed, close_after_send=False):
    s = conn()
    try:
        s.sendall(payload)
        if close_after_send:
            s.shutdown(socket.SHUT_WR)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the monitor closed on us mid-send: a close is an allowed answer
    st = status_of(read_all(s))
    s.close()
    if st not in allowed:
        fail("%s: answered %s, want one of %s" % (name, st, allowed))
    still_serving(name)
    print("hostile: %s -> %s" % (name, st if st else "closed"))


def threads():
    for line in open("/proc/%d/status" % MON):
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def main():
    h = HOSTHDR.encode()
    case("garbage request line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 garbage\r\n\r\n",
         {400, None})
    case("no HTTP version", b"GET /info\r\n\r\n", {400, 505, None})
    case("unknown method", b"FROB /info HTTP/1.1\r\nHost: " + h + b"\r\n\r\n", {404, 405, 501})
    case("bad version", b"GET /info HTTP/9.9\r\nHost: " + h + b"\r\n\r\n", {400, 505, None})
    case("no Host (HTTP/1.1)", b"GET /info HTTP/1.1\r\n\r\n", {400, 421, None})
    case("huge header", b"GET /info HTTP/1.1\r\nHost: " + h + b"\r\nX-Big: " + b"a" * 200000 +
         b"\r\n\r\n", {413, 414, 431, None})
    case("many headers", b"GET /info HTTP/1.1\r\nHost: " + h + b"\r\n" +
         b"".join(b"X-H%d: v\r\n" % i for i in range(20000)) + b"\r\n", {413, 431, None})
    case("huge URL", b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: " + h + b"\r\n\r\n",
         {413, 414, 431, None})
    case("control bytes in path", b"GET /pro\x01cesses HTTP/1.1\r\nHost: " + h + b"\r\n\r\n",
         {400, 404, None})
    case("body shorter than announced", b"POST /processes/1/traces HTTP/1.1\r\nHost: " + h +
         b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":",
         {400, None}, close_after_send=True)
    case("bad chunked body", b"POST /processes/1/traces HTTP/1.1\r\nHost: " + h +
         b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
         {400, None})

    # A slow client: the request trickles in over ~2 s while others are served.
    s = conn()
    req = ("GET /info HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % HOSTHDR).encode()
    for i, b in enumerate(req):
        s.sendall(bytes([b]))
        if i % 8 == 0:
            still_serving("a slow client's byte %d" % i)
            time.sleep(0.05)  # the trickle itself, not a synchronisation
    st = status_of(read_all(s))
    s.close()
    if st != 200:
        fail("slow client: answered %s" % st)
    print("hostile: slow client -> 200, others served meanwhile")

    # 200 idle connections at once: a new request is still answered.
    before = threads()
    idle = [conn() for _ in range(200)]
    still_serving("200 idle connections")
    print("hostile: 200 idle connections open, a new request answered (%d threads)" % threads())
    # The monitor closes idle connections itself (--idle-timeout 2s): each reads EOF.
    closed = 0
    for s in idle:
        s.settimeout(30)
        try:
            if s.recv(1) == b"":
                closed += 1
        except (ConnectionResetError, socket.timeout):
            closed += isinstance(sys.exc_info()[1], ConnectionResetError)
        s.close()
    if closed != len(idle):
        fail("the monitor closed %d of %d idle connections within 30 s" % (closed, len(idle)))
    # Their threads are gone again (bounded wait for the thread count itself).
    deadline = time.monotonic() + 30
    while threads() > before + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    if threads() > before + 2:
        fail("threads: %d before the idle connections, %d after" % (before, threads()))
    print("hostile: idle connections closed by the monitor; threads %d -> %d" % (before, threads()))
    still_serving("the idle connections")


main()
