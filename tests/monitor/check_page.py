# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check what headless Chromium made of the monitor's counters page.

    python3 check_page.py SHOT.png DOM.html

The DOM after the page's script ran: #evr-status says "ok" with no error and at least one
refresh from /processes/PID/counters; one plot per counter, with points. The screenshot:
the plots are drawn, i.e. enough pixels have the plot line's colour (#1a73e8); the PNG is
decoded here, filters and all, with zlib only.
"""
import re
import struct
import sys
import zlib

LINE = (0x1a, 0x73, 0xe8)


def fail(msg):
    sys.exit("check_page: " + msg)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6) or interlace:
        fail("unexpected PNG layout (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                line[x] = (line[x] + paeth(a, b, c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    dom = open(sys.argv[2], encoding="utf-8").read()
    m = re.search(r'<div id="evr-status"([^>]*)>', dom)
    if not m:
        fail("no #evr-status in the DOM")
    attrs = dict(re.findall(r'([a-z-]+)="([^"]*)"', m.group(1)))
    if attrs.get("data-status") != "ok" or attrs.get("data-errors") != "0":
        fail("the page's script failed: %s" % attrs)
    if int(attrs.get("data-updates", "0")) < 1:
        fail("the page never refreshed its counters: %s" % attrs)
    plots = re.findall(r'<svg [^>]*data-counter="([^"]+)"', dom)
    for want in ("System.Runtime/gc-heap-size", "Process/cpu-usage", "Process/threads"):
        if want not in plots:
            fail("no plot of %s (plots: %s)" % (want, plots[:5]))
    drawn = re.findall(r'<polyline class="line" points="([^"]*)"', dom)
    if sum(1 for p in drawn if p.count(",") >= 2) < len(plots) // 2:
        fail("most plots have fewer than two points")
    # Axes (issue 28, item 10): each plot says its value range and its time scale, which
    # the script keeps current ("-24 s" ... "now" below, max and min at the left).
    svgs = re.findall(r'<svg [^>]*data-counter="[^"]+".*?</svg>', dom, re.S)
    for svg in svgs:
        labels = dict(re.findall(r'<text class="axis (\w+)"[^>]*>([^<]*)</text>', svg))
        if not all(labels.get(k) for k in ("ymax", "ymin", "t0", "t1")):
            fail("a plot without its axes' labels: %s" % svg[:300])
        if not re.fullmatch(r"\u2212\d+(\.\d)? (s|min)", labels["t0"]) or labels["t1"] != "now":
            fail("a plot's time scale: %s" % labels)
    if len(svgs) != len(plots):
        fail("%d plots, %d with axes" % (len(plots), len(svgs)))
    w, h, bpp, rows = pixels(sys.argv[1])
    blue = 0
    for row in rows:
        for x in range(0, w * bpp, bpp):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if abs(r - LINE[0]) < 40 and abs(g - LINE[1]) < 40 and abs(b - LINE[2]) < 40:
                blue += 1
    if blue < 2000:
        fail("only %d pixels of the plot colour: the plots are not drawn" % blue)
    print("check_page: %d plots, %d plot-coloured pixels, status %s" % (len(plots), blue, attrs))


main()
