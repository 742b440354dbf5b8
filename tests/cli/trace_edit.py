# SPDX-License-Identifier: LGPL-2.1-or-later
"""Damage evring trace files the ways disks, copies and people do, for the damaged-file tests
(format: docs/trace-format.md). Every edit writes a new file.

  trace_edit.py chunks FILE                       list: offset kind len seq
  trace_edit.py cut-before-end IN OUT             cut at the chunk boundary before the END chunk
  trace_edit.py remove-events IN OUT N            remove the Nth EVENTS chunk (from 1; 0: the last) that holds
                                                  events, renumber the rest, fix END's counts and
                                                  every CRC: only the END totals can tell
  trace_edit.py flip IN OUT KIND NTH BYTE MASK    XOR byte BYTE of the payload of the NTH chunk of
                                                  KIND (a name) with MASK (e.g. 0x10)
  trace_edit.py flip-last-desc IN OUT             XOR 0xff into the last event description of the
                                                  first METADATA chunk (beyond repair)
"""
import struct
import sys

KINDS = {"PROCESS": 1, "SESSION": 2, "METADATA": 3, "EVENTS": 4, "LOST": 5, "DISCARD": 6,
         "END": 7, "THREADS": 8, "SYNC": 9, "PAD": 16}
HDR = struct.Struct("<IHHIIII")

_table = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    _table.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _table[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def chunks(data):
    """(offset, kind, len, seq) of every chunk."""
    off, out = 64, []
    while off + HDR.size <= len(data):
        magic, kind, _flags, ln, seq, _dcrc, _hcrc = HDR.unpack_from(data, off)
        if magic != 0x43525645:
            raise SystemExit("trace_edit: no chunk at offset %d" % off)
        out.append((off, kind, ln, seq))
        off += HDR.size + ((ln + 7) & ~7)
    return out


def put_header(buf, off, kind, ln, seq, dcrc):
    head = struct.pack("<IHHIII", 0x43525645, kind, 0, ln, seq, dcrc)
    buf[off:off + HDR.size] = head + struct.pack("<I", crc32c(head))


def main(argv):
    cmd = argv[1]
    data = bytearray(open(argv[2], "rb").read())
    if cmd == "chunks":
        for c in chunks(data):
            print(*c)
        return
    out = argv[3]
    if cmd == "cut-before-end":
        end = [c for c in chunks(data) if c[1] == KINDS["END"]]
        data = data[:end[0][0]]
    elif cmd == "remove-events":
        nth = int(argv[4])
        events = [c for c in chunks(data) if c[1] == KINDS["EVENTS"] and c[2] > 200]
        off, _k, ln, _s = events[nth - 1]
        span = HDR.size + ((ln + 7) & ~7)
        data = data[:off] + data[off + span:]
        for coff, kind, cln, seq in chunks(data):
            if coff < off:
                continue
            payload = data[coff + HDR.size:coff + HDR.size + cln]
            if kind == KINDS["END"]:
                # events, lost, end times and flags stay; chunks and bytes follow the edit
                e = list(struct.unpack_from("<QQQQIIQQ", payload))
                e[6] -= 1
                e[7] -= span
                payload = struct.pack("<QQQQIIQQ", *e)
                data[coff + HDR.size:coff + HDR.size + cln] = payload
            put_header(data, coff, kind, cln, seq - 1, crc32c(payload))
    elif cmd == "flip":
        kind, nth, byte, mask = KINDS[argv[4]], int(argv[5]), int(argv[6]), int(argv[7], 0)
        sel = [c for c in chunks(data) if c[1] == kind]
        data[sel[nth - 1][0] + HDR.size + byte] ^= mask
    elif cmd == "flip-last-desc":
        off, _k, ln, _s = [c for c in chunks(data) if c[1] == KINDS["METADATA"]][0]
        p, last = off + HDR.size, None
        while p < off + HDR.size + ln:
            size, _kind = struct.unpack_from("<II", data, p)
            last = (p + 8, size)
            p += 8 + ((size + 7) & ~7)
        data[last[0] + last[1] // 2] ^= 0xFF
    else:
        raise SystemExit("trace_edit: unknown command " + cmd)
    open(out, "wb").write(data)


if __name__ == "__main__":
    main(sys.argv)
