#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a CTF trace written by `evring convert --format ctf` against the evring trace
it came from, through babeltrace2 (the reader users will use):

- every event of `evring dump --json` is in babeltrace2's output and nothing else: the
  same name, timestamp (babeltrace2 --clock-cycles == evring's ts in ns), cpu (packet
  context cpu_id), tid (event context vtid) and every field value;
- absolute times: babeltrace2 --clock-seconds == `evring dump --absolute`, per event;
- losses: the sum of babeltrace2's "discarded N events" warnings == the sum of the LOST
  counts in `evring dump --json`.

Field values are compared exactly as babeltrace2's text output can show them: integers,
pointers, bools (enum labels), strings (cut at their first NUL, as the converter does),
byte arrays; floating-point values as babeltrace2 prints them (C "%g"), compared with
the same formatting of evring's value.

Usage: check_ctf.py EVRING TRACE CTFDIR [--min-events N] [--expect-lost]
"""
import argparse
import json
import re
import subprocess
import sys

LINE_RE = re.compile(r'^\[(\d+(?:\.\d+)?)\] (?:[A-Z_]+ \(\d+\) )?(.+?): (\{ cpu_id = .*)$')
DISCARD_RE = re.compile(r'WARNING: Tracer discarded (\d+) events? between')


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Parser:
    """babeltrace2's pretty field syntax: { a = 1, b = "s" }, [ [0] = 1 ],
    ( "true" : container = 1 ), numbers, 0x hex, strings with C escapes."""

    ESC = {'\\': '\\', "'": "'", '"': '"', '?': '?', '0': '\0', 'a': '\a', 'b': '\b',
           't': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r'}

    def __init__(self, s):
        self.s, self.i = s, 0

    def eat(self, tok):
        if not self.s.startswith(tok, self.i):
            raise ValueError("expected %r at %d in %r" % (tok, self.i, self.s))
        self.i += len(tok)

    def peek(self, tok):
        return self.s.startswith(tok, self.i)

    def value(self):
        c = self.s[self.i]
        if c == '{':
            return self.struct()
        if c == '[':
            return self.array()
        if c == '(':
            self.eat('( ')
            label = self.string() if self.peek('"') else self.token()
            self.eat(' : container = ')
            self.token()
            self.eat(' )')
            return ('enum', label)
        if c == '"':
            return ('str', self.string())
        return ('num', self.token())

    def token(self):
        m = re.compile(r'[^ ,}\])]+').match(self.s, self.i)
        self.i = m.end()
        return m.group(0)

    def string(self):
        self.eat('"')
        out = []
        while True:
            c = self.s[self.i]
            self.i += 1
            if c == '"':
                return ''.join(out)
            if c != '\\':
                out.append(c)
                continue
            e = self.s[self.i]
            self.i += 1
            if e == 'x':
                out.append(chr(int(self.s[self.i:self.i + 2], 16)))
                self.i += 2
            else:
                out.append(self.ESC[e])

    def struct(self):
        self.eat('{ ')
        members = []
        if self.peek('}'):
            self.eat('}')
            return ('struct', members)
        while True:
            m = re.compile(r'[A-Za-z0-9_]+').match(self.s, self.i)
            self.i = m.end()
            self.eat(' = ')
            members.append((m.group(0), self.value()))
            if self.peek(', '):
                self.eat(', ')
                continue
            self.eat(' }')
            return ('struct', members)

    def array(self):
        self.eat('[ ')
        items = []
        if self.peek(']'):
            self.eat(']')
            return ('array', items)
        while True:
            self.eat('[%d] = ' % len(items))
            items.append(self.value())
            if self.peek(', '):
                self.eat(', ')
                continue
            self.eat(' ]')
            return ('array', items)


# babeltrace2 2.0.x shows an empty string field with the value the same field had in an
# earlier event (its field objects are reused and an empty string never resets one:
# https://review.lttng.org/c/babeltrace/+/4528, fixed after 2.0). The converter writes
# the empty string (one NUL byte); with those versions such a value cannot be checked.
BT_STALE_EMPTY_STRINGS = True


def bt_text(s):
    """A string as babeltrace2 printed it (bytes kept by surrogateescape) as evring's
    JSON shows it: invalid UTF-8 replaced by U+FFFD."""
    return s.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')


def ctf_name(name):
    """The field name babeltrace2 shows: the converter writes '_' + name with bytes
    outside [A-Za-z0-9_] replaced by '_', babeltrace2 removes the '_'."""
    return re.sub(r'[^A-Za-z0-9_]', '_', name.encode('utf-8', 'surrogateescape')
                  .decode('latin-1'))


def same_value(jv, bv, strict=False):
    kind, b = bv
    if kind == 'enum':
        return isinstance(jv, bool) and b == ('true' if jv else 'false')
    if kind == 'str':
        if not isinstance(jv, str):
            return False
        if jv.split('\0')[0] == '' and BT_STALE_EMPTY_STRINGS and not strict:
            return True
        return bt_text(b) == jv.split('\0')[0]
    if kind == 'array':
        if not isinstance(jv, str):
            return False
        return bytes.fromhex(jv) == bytes(int(x[1]) for x in b)
    # numbers
    if isinstance(jv, bool):
        return False
    if jv is None:
        return b.lstrip('-') in ('nan', 'inf')
    if isinstance(jv, str) and jv.startswith('0x'):
        return b.startswith('0x') and int(b, 16) == int(jv, 16)
    if isinstance(jv, int) and re.fullmatch(r'-?\d+', b):
        return int(b) == jv
    if isinstance(jv, (int, float)):
        return '%g' % jv == b
    return False


def same_fields(jfields, bfields, what, strict=False):
    """jfields: [(name, value)] from evring; bfields: babeltrace2's members.
    Return: None if they are equal, else why not."""
    # A byte array is preceded by its length field in CTF: check and drop it.
    members = []
    for k, (name, v) in enumerate(bfields):
        if k + 1 < len(bfields) and bfields[k + 1][1][0] == 'array':
            if v[0] != 'num' or int(v[1]) != len(bfields[k + 1][1][1]):
                return "%s: length field %s = %s does not match its array" % (what, name, v)
            continue
        members.append((name, v))
    if len(members) != len(jfields):
        return "%s: %d fields in babeltrace2, %d in evring" % (what, len(members), len(jfields))
    for (jn, jv), (bn, bv) in zip(jfields, members):
        if bn != ctf_name(jn) and not re.fullmatch(re.escape(ctf_name(jn)) + r'_\d+', bn):
            return "%s: field %r shows as %r" % (what, jn, bn)
        if not same_value(jv, bv, strict):
            return "%s: field %r: evring %r, babeltrace2 %r" % (what, jn, jv, bv)
    return None


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        fail("%s exited with %d: %s" % (' '.join(cmd), p.returncode,
                                          p.stderr.decode(errors='replace')[-2000:]))
    return (p.stdout.decode('utf-8', 'surrogateescape'),
            p.stderr.decode('utf-8', 'surrogateescape'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('evring')
    ap.add_argument('trace')
    ap.add_argument('ctf')
    ap.add_argument('--min-events', type=int, default=1)
    ap.add_argument('--expect-lost', action='store_true')
    a = ap.parse_args()
    global BT_STALE_EMPTY_STRINGS
    ver, _ = run(['babeltrace2', '--version'])
    m = re.search(r'(\d+)\.(\d+)\.(\d+)', ver)
    BT_STALE_EMPTY_STRINGS = not m or (int(m.group(1)), int(m.group(2))) <= (2, 0)

    # evring's side.
    out, _ = run([a.evring, 'dump', '--no-sandbox', '--json', a.trace])
    want, lost = [], 0
    for line in out.splitlines():
        o = json.loads(line, object_pairs_hook=list)
        d = dict(o)
        if d['type'] == 'lost':
            lost += d['count']
            continue
        if d['provider'] is None:
            name, fields = 'evring:unknown', [('rid', d['rid']), ('payload', d['payload'])]
        elif d['fields'] is None:
            name, fields = 'evring:unknown', None	# undecodable: only the bytes
        else:
            name, fields = d['provider'] + ':' + d['event'], d['fields']
        want.append((d['ts'], d['cpu'], d['tid'], name, fields, d.get('payload')))

    # babeltrace2's side.
    out, err = run(['babeltrace2', '--clock-cycles', '--no-delta', '--fields=loglevel',
                    a.ctf])
    got = []
    for line in out.splitlines():
        m = LINE_RE.match(line)
        if not m:
            fail("unexpected babeltrace2 line: %r" % line)
        p = Parser(m.group(3))
        ctx = p.value()
        p.eat(', ')
        ectx = p.value()
        p.eat(', ')
        payload = p.value()
        if p.i != len(p.s):
            fail("trailing text in babeltrace2 line: %r" % line)
        cpu = int(ctx[1][0][1][1])
        tid = int(ectx[1][0][1][1])
        got.append((int(m.group(1)), cpu, tid, m.group(2), payload[1]))
    bt_lost = sum(int(n) for n in DISCARD_RE.findall(err))

    if len(got) != len(want):
        fail("babeltrace2 shows %d events, evring dump %d" % (len(got), len(want)))
    if len(want) < a.min_events:
        fail("only %d events in the trace (expected at least %d)" % (len(want), a.min_events))
    if bt_lost != lost:
        fail("babeltrace2 reports %d discarded events, evring dump %d lost" % (bt_lost, lost))
    if a.expect_lost and lost == 0:
        fail("the trace has no losses to check")

    # Both are in time order; events with the same time may come in another order
    # (babeltrace2's muxer breaks ties its own way): compare per timestamp.
    def groups(seq):
        g = {}
        for e in seq:
            g.setdefault(e[0], []).append(e)
        return g
    gw, gg = groups(want), groups(got)
    if sorted(gw) != sorted(gg):
        ts = sorted(set(gw) ^ set(gg))[0]
        fail("timestamp %d is only in %s" % (ts, 'evring' if ts in gw else 'babeltrace2'))
    for ts, ws in gw.items():
        bs = list(gg[ts])
        # Exact matches first, so that an event whose empty string babeltrace2 cannot
        # show (BT_STALE_EMPTY_STRINGS) never takes the twin another event needs.
        rest = []
        for w in ws:
            for b in bs:
                if b[1:4] == w[1:4] and check_one(w, b, '', strict=True) is None:
                    bs.remove(b)
                    break
            else:
                rest.append(w)
        for w in rest:
            what = "event at %d (%s, cpu %d, tid %d)" % (ts, w[3], w[1], w[2])
            cand = [b for b in bs if b[1:4] == w[1:4]]
            if not cand:
                fail("%s is not in babeltrace2's output" % what)
            why = None
            for b in cand:
                why = check_one(w, b, what)
                if why is None:
                    bs.remove(b)
                    break
            if why is not None:
                fail(why if len(cand) == 1 else
                     "%s: no babeltrace2 event with the same fields (%s)" % (what, why))

    # Absolute times: the clock's offset makes them CLOCK_REALTIME.
    out, _ = run([a.evring, 'dump', '--no-sandbox', '--absolute', a.trace])
    abs_want = sorted(l.split(' ', 1)[0] for l in out.splitlines()
                      if l.split(' ')[2:3] != ['LOST'])
    out, _ = run(['babeltrace2', '--clock-seconds', '--no-delta', '--fields=loglevel', a.ctf])
    abs_got = sorted(LINE_RE.match(l).group(1) for l in out.splitlines())
    if abs_want != abs_got:
        diff = [(x, y) for x, y in zip(abs_want, abs_got) if x != y][:1]
        fail("absolute times differ: evring dump --absolute vs babeltrace2: %s" % diff)

    print("PASS: %d events and %d lost, names, times, cpus, tids and fields equal"
          % (len(want), lost))


def check_one(w, b, what, strict=False):
    """None if evring's event @w and babeltrace2's @b are equal, else why not.
    @strict: empty strings must show as empty, whatever babeltrace2's version."""
    if w[4] is None:
        # undecodable payload: evring:unknown with the raw bytes
        fields = dict((n, v) for n, v in b[4])
        if bytes(int(x[1]) for x in fields['payload'][1]) != bytes.fromhex(w[5]):
            return "%s: raw payload differs" % what
        return None
    return same_fields(w[4], b[4], what, strict)


if __name__ == '__main__':
    main()
