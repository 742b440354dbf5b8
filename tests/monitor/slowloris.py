#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Slowloris against evring monitor: COUNT connections from one stranger's address that
never finish their request's headers (one header line every DRIP seconds), while the
monitor's own user keeps asking for /processes over loopback.

usage: slowloris.py ADDR PORT MON_PID OWNER_URL COUNT DRIP MAX_THREADS MAX_FDS [--hold S]

Checks: every request of the owner gets 200 while the connections are held; the monitor's
threads and fds stay at most MAX_THREADS and MAX_FDS; every connection the monitor accepted
is closed by the monitor (the header deadline), none is left open. Prints the figures."""
import os
import socket
import sys
import time
import urllib.request

addr, port, pid, owner = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
count, drip = int(sys.argv[5]), float(sys.argv[6])
max_threads, max_fds = int(sys.argv[7]), int(sys.argv[8])
hold = float(sys.argv[10]) if len(sys.argv) > 10 and sys.argv[9] == "--hold" else None


def threads():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return -1


def fds():
    return len(os.listdir(f"/proc/{pid}/fd"))


def owner_ok():
    try:
        with urllib.request.urlopen(owner + "/processes", timeout=30) as r:
            return r.status
    except Exception as e:  # a refusal or a reset is what we look for
        return repr(e)


base_t, base_f = threads(), fds()
socks = []
for i in range(count):
    s = socket.create_connection((addr, port), timeout=30)
    s.sendall(b"GET /processes HTTP/1.1\r\nHost: " + addr.encode() + b"\r\n")
    socks.append(s)
    s.setblocking(False)

open_socks = list(socks)
peak_t = peak_f = 0
owner_results = []
start = time.monotonic()
rounds = 0
while open_socks:
    rounds += 1
    peak_t, peak_f = max(peak_t, threads()), max(peak_f, fds())
    owner_results.append(owner_ok())
    still = []
    for s in open_socks:
        try:
            data = s.recv(4096)
            if not data:
                s.close()
                continue
        except BlockingIOError:
            pass
        except (ConnectionResetError, BrokenPipeError):
            s.close()
            continue
        try:
            s.send(b"X-Slow-%d: x\r\n" % rounds)
        except BlockingIOError:
            pass
        except (ConnectionResetError, BrokenPipeError):
            s.close()
            continue
        still.append(s)
    open_socks = still
    if hold is not None and time.monotonic() - start > hold:
        break
    if time.monotonic() - start > 600:
        print(f"slowloris: {len(open_socks)} connections still open after 600 s", file=sys.stderr)
        sys.exit(1)
    time.sleep(drip)

bad = [r for r in owner_results if r != 200]
print(f"slowloris: {count} half-sent requests, one header line every {drip:g}s: monitor threads "
      f"{base_t} -> peak {peak_t}, fds {base_f} -> peak {peak_f}; owner's /processes: "
      f"{len(owner_results) - len(bad)}/{len(owner_results)} answered 200; "
      f"{len(open_socks)} left open by the monitor after {time.monotonic() - start:.0f}s")
ok = True
if bad:
    print(f"slowloris: the owner's requests failed: {bad[:5]}", file=sys.stderr)
    ok = False
if peak_t > max_threads or peak_f > max_fds:
    print(f"slowloris: threads {peak_t} (at most {max_threads}) or fds {peak_f} "
          f"(at most {max_fds})", file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
