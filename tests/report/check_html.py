# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check what headless Chromium made of `evring report --html`.

    python3 check_html.py SHOT.png DOM.html

The screenshot: a PNG of the window's size with enough different pixels not to be blank.
The DOM after the page ran: its error recorder (#evr-status) says "ok" with no error, and
the report's plots and tables are there.
"""
import re
import struct
import sys
import zlib


def fail(msg):
    sys.exit("check_html: " + msg)


def png_pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return w, h, len(data), zlib.decompress(idat)


def main():
    w, h, size, raw = png_pixels(sys.argv[1])
    if (w, h) != (1280, 2400):
        fail("screenshot is %dx%d" % (w, h))
    # Blank pages compress to almost nothing and hold a handful of byte values.
    distinct = len(set(raw[::7]))
    if size < 20000 or distinct < 32:
        fail("screenshot looks blank (%d bytes, %d distinct values)" % (size, distinct))
    dom = open(sys.argv[2], encoding="utf-8").read()
    m = re.search(r'<div id="evr-status"([^>]*)>', dom)
    if not m:
        fail("no #evr-status in the DOM")
    attrs = m.group(1)
    if 'data-errors="0"' not in attrs or 'data-status="ok"' not in attrs:
        errs = re.findall(r'<div class="evr-error">([^<]*)', dom)
        fail("page script errors: %s (%s)" % (errs, attrs))
    # Issue 28 item 10: the status says nothing when all is well.
    if "without errors" in dom or "did not run" in dom:
        fail("the page shows its script's status: %s" % m.group(0))
    if dom.count("<svg") < 2 or dom.count("<polyline") < 2:
        fail("plots missing")
    for want in ("Events per provider", "Counters", "System.Runtime", "MiniRT",
                 "Lost events per CPU", "Busiest threads", "GC Heap Size"):
        if want not in dom:
            fail("%r is not on the page" % want)
    print("html: %dx%d screenshot, %d bytes, %d plots, no script errors"
          % (w, h, size, dom.count("<svg")))


main()
