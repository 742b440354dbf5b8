#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# convert --format speedscope, opened in speedscope itself: the `speedscope` npm package's
# page in headless Chromium, loading the file the way its own command-line tool does
# (#localProfilePath= a script that hands the file over). The page must import it (no
# "Something went wrong"), be titled with the profile's name, open on the busiest thread's
# profile (the main thread, not the napping one), and its Sandwich view must rank spin_hot
# first with its callers present. The file is also
# checked against the JSON schema the package ships, when python3-jsonschema is there.
# Skipped without chromium or the package (scripts/setup --optional installs both).
source "$(dirname "$0")/lib.sh"
need_python
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || skip "chromium is not installed (scripts/setup --optional)"
NPM_DIR=${EVR_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evring/npm}
PAGE=$NPM_DIR/node_modules/speedscope/dist/release/index.html
[[ -f $PAGE ]] || skip "the speedscope npm package is not in $NPM_DIR (scripts/setup --optional)"

"$EVRING" record --sample-cpu --providers Spin -o "$T/p.evtrace" -- "$BIN/stacks-spin" 200 \
	>/dev/null 2>"$T/rec.err" || {
	grep -q "perf_event_paranoid\|cpu-clock" "$T/rec.err" && skip "perf_events refused: $(cat "$T/rec.err")"
	fail "record failed: $(cat "$T/rec.err")"
}
"$EVRING" convert "$T/p.evtrace" --format speedscope -o "$T/p.speedscope.json" -q ||
	fail "convert --format speedscope failed"

# What speedscope's command-line tool writes for a file: a script calling its loader.
python3 - "$T/p.speedscope.json" "$T/load.js" <<'PY'
import base64, json, sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "w") as f:
    f.write("speedscope.loadFileFromBase64(%s, %s)" % (
        json.dumps("p.speedscope.json"), json.dumps(base64.b64encode(data).decode())))
PY

# How many rows the Sandwich table of the busiest thread must have: one per function that
# appears in that thread's samples.
want_rows=$(python3 - "$T/p.speedscope.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
busiest = max(d["profiles"], key=lambda p: sum(p.get("weights") or [0]))
print(len({f for s in busiest.get("samples", []) for f in s}))
PY
)
[[ $want_rows -ge 4 ]] || fail "the busiest profile has only $want_rows functions"

# A private profile, no network, bounded (virtual) time. speedscope's table is a virtual
# list that measures its own height in a requestAnimationFrame after it mounts and draws
# the rows that fit; now and then Chromium dumps the DOM before that frame ran, or after it
# measured a viewport still being laid out (the table is there with no rows, or only the
# first few). That is the browser's race, not the file's: load the page again, at most
# three times, until every row is drawn.
for attempt in 1 2 3; do
	rm -rf "$T/profile"
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/profile" --disable-extensions --proxy-server=127.0.0.1:9 \
		--allow-file-access-from-files --run-all-compositor-stages-before-draw \
		--virtual-time-budget=10000 --window-size=1280,4000 --dump-dom \
		"file://$PAGE#localProfilePath=$T/load.js&view=sandwich" >"$T/dom.html" 2>"$T/dom.log" ||
		fail "chromium --dump-dom: $(tail -3 "$T/dom.log")"
	rows=$({ grep -o '<td class="[^"]*"><span class="[^"]*" style="background-color' \
		"$T/dom.html" || true; } | wc -l)
	((rows >= want_rows)) && break
	echo "note: attempt $attempt: speedscope's table had drawn $rows of its $want_rows rows; loading again"
done

python3 - "$T/dom.html" "$T/p.evtrace" "$T/p.speedscope.json" "$(dirname "$PAGE")/file-format-schema.json" \
	"$want_rows" <<'PY'
import html, json, re, sys
dom, trace, path, schema, want = sys.argv[1:6]
page = open(dom).read()
text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
assert "Something went wrong" not in text, f"speedscope could not import the file: {text[:300]}"
title = re.search(r"<title>([^<]*)</title>", page)
assert title and html.unescape(title.group(1)) == f"{trace} - speedscope", \
    f"not loaded: title {title and title.group(1)!r}"
assert re.search(r"stacks-spin \(\d+\)", text), f"no thread profile in the toolbar: {text[:300]}"
# The Sandwich table: "Total Self Symbol Name", then rows "TOTAL (P%) SELF (P%) NAME",
# where P is a number, "<0.01" or ">99".
table = text.split("Symbol Name", 1)
assert len(table) == 2, f"no Sandwich table: {text[:400]}"
rows = re.findall(r"\S+ \(([\d.<>]+)%\) \S+ \(([\d.<>]+)%\) (\S+)", table[1])
assert len(rows) >= int(want), \
    f"the Sandwich table drew {len(rows)} of {want} rows: {table[1][:300]}"
names = [r[2] for r in rows]
assert names[0] == "spin_hot", f"speedscope ranks {names[0]} first: {rows[:4]}"
assert "spin_work" in names and "main" in names, names
print(f"speedscope: loaded, {len(rows)} functions, spin_hot first ({rows[0][1]}% self)")
try:
    import jsonschema
except ImportError:
    print("note: python3-jsonschema not installed: schema not checked")
else:
    jsonschema.validate(json.load(open(path)), json.load(open(schema)))
    print("speedscope JSON valid against the package's file-format-schema.json")
PY
echo PASS
