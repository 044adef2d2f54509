#!/usr/bin/env python3
"""One line per test suite from meson's testlog.json, tab-separated:
LABEL, suite, OK|SKIP|FAIL, and what the suite itself reported (its own
count of checks, or why it skipped). Exits 1 when the log is missing or
empty, so a run that died before writing it never counts as a pass.
usage: test_summary.py LABEL BUILD_DIR/meson-logs/testlog.json"""
import json
import re
import sys

label, path = sys.argv[1], sys.argv[2]
try:
    with open(path, encoding="utf-8") as f:
        tests = [json.loads(line) for line in f if line.strip()]
except (OSError, ValueError):
    sys.exit(1)
if not tests:
    sys.exit(1)

SCRIPT = re.compile(r"^[\w.-]+: (\d+) passed, (\d+) failed$")
CATCH_OK = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
CATCH_BAD = re.compile(r"test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed")
FUZZ_RUNS = re.compile(r"^stat::number_of_executed_units:\s*(\d+)")

for t in tests:
    result = t.get("result", "")
    state = {"OK": "OK", "SKIP": "SKIP"}.get(result, "FAIL")
    # libFuzzer writes its statistics to stderr
    out = ((t.get("stdout") or "") + "\n" + (t.get("stderr") or "")).splitlines()
    note = ""
    for line in reversed(out):
        m = SCRIPT.match(line.strip())
        if m:
            note = f"{m.group(1)} checks passed, {m.group(2)} failed"
            break
        m = CATCH_OK.search(line)
        if m:
            note = f"{m.group(2)} test cases, {m.group(1)} assertions"
            break
        m = CATCH_BAD.search(line)
        if m:
            note = f"{m.group(1)} test cases, {m.group(3)} failed"
            break
        m = FUZZ_RUNS.match(line.strip())
        if m:
            note = f"{m.group(1)} inputs run"
            break
    if state == "SKIP":
        note = next((l.strip() for l in reversed(out) if l.strip()), "skipped")
    elif state == "FAIL" and result != "FAIL":
        note = f"{result}; {note}" if note else result
    print(f"{label}\t{t.get('name', '?')}\t{state}\t{note}")
