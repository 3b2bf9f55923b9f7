# SPDX-License-Identifier: GPL-2.0-or-later
"""A guest's output as the harness reads it: the guest programs' KTAP, each
suite's introduced by a "# suite: NAME" line (the boot suite's by none).
The harness (conftest.py), the LAVA comparison (lava_compare.py) and the
LAVA guest's own reading (scripts/guest/lava-init) agree on a case's
verdict; tests/scripts/test_lava_jobs.py holds the last to this one."""

import re

# A guest runs the suites one after the other, each introduced by this line.
SUITE_MARK = re.compile(r"^# suite: (\S+)$")
RESULT = re.compile(r"^(ok|not ok) (\d+) (\S+)(?: # (SKIP|TODO)\b ?(.*))?$")


def verdict(ok, directive):
    """pass, fail or skip: a SKIP directive skips whatever the line says."""
    if directive == "SKIP":
        return "skip"
    return "pass" if ok else "fail"


def verdicts(text):
    """{"SUITE.CASE": "pass" | "fail" | "skip"} of a guest's output, in order."""
    out, suite = {}, "boot"
    for line in text.splitlines():
        if m := SUITE_MARK.match(line):
            suite = m.group(1)
        elif m := RESULT.match(line):
            out[f"{suite}.{m.group(3)}"] = verdict(m.group(1) == "ok", m.group(4))
    return out
