#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a paced stream of 4 MiB writes costs through the page cache, with and without
write-behind, and with O_DIRECT (docs/recorder.md, "Through the page cache").

Usage: bench/pagecache-behind.py MODE MB_PER_S SECONDS [WINDOW_MIB] [DIR]
  MODE: plain (write()), drop (write(), the writeback of each block started at once, and the
  blocks WINDOW_MIB (default 256) behind the end waited for and dropped, as the trace
  writer's write-behind does), direct (O_DIRECT, one write at a time).
Prints the rate achieved, the system time per byte, the median and longest step (a write
and its write-behind calls) and how far behind the pace the writer fell at worst.
The file, DIR/pagecache-behind.bin (default DIR: .), is removed at the end.
"""
import ctypes
import mmap
import os
import resource
import sys
import time

libc = ctypes.CDLL("libc.so.6", use_errno=True)
sfr = libc.sync_file_range
sfr.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
WAIT_BEFORE, WRITE, WAIT_AFTER = 1, 2, 4
BLOCK = 4 << 20

if len(sys.argv) < 4 or sys.argv[1] not in ("plain", "drop", "direct"):
    sys.exit(__doc__)
mode, rate, secs = sys.argv[1], float(sys.argv[2]) * 1e6, float(sys.argv[3])
window = (int(sys.argv[4]) if len(sys.argv) > 4 else 256) << 20
path = os.path.join(sys.argv[5] if len(sys.argv) > 5 else ".", "pagecache-behind.bin")
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if mode == "direct" else 0)
fd = os.open(path, flags, 0o600)
buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
buf.write(b"x" * BLOCK)
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.monotonic()
off, steps, behind = 0, [], 0.0
while time.monotonic() - t0 < secs:
    due = t0 + off / rate
    now = time.monotonic()
    if now < due:
        time.sleep(due - now)
    a = time.monotonic()
    os.write(fd, buf)
    if mode == "drop":
        sfr(fd, off, BLOCK, WRITE)
        if off >= window:
            sfr(fd, off - window, BLOCK, WAIT_BEFORE | WRITE | WAIT_AFTER)
            os.posix_fadvise(fd, off - window, BLOCK, os.POSIX_FADV_DONTNEED)
    off += BLOCK
    steps.append(time.monotonic() - a)
    behind = max(behind, time.monotonic() - t0 - off / rate)
r1 = resource.getrusage(resource.RUSAGE_SELF)
elapsed = time.monotonic() - t0
os.close(fd)
os.unlink(path)
steps.sort()
sys_s = r1.ru_stime - r0.ru_stime
print(f"{mode} window={window >> 20}M: {off / elapsed / 1e6:.0f} MB/s of {rate / 1e6:.0f}, "
      f"sys {sys_s:.2f} s ({sys_s / off * 1e9:.2f} ns/B), step median "
      f"{steps[len(steps) // 2] * 1e3:.1f} ms, longest {steps[-1] * 1e3:.0f} ms, "
      f"at most {behind * 1e3:.0f} ms behind")
