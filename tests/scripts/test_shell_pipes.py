# SPDX-License-Identifier: GPL-2.0-or-later
"""No script that runs under `set -o pipefail` pipes into a reader that
stops early (grep -q or -m, head, awk's exit, sed's q).

Bash writes a builtin's output line by line, so such a reader can exit
while the writer still has lines to write: the writer dies of SIGPIPE, the
pipeline fails under pipefail, and the script takes the failure for the
answer. On a loaded machine this happened: build-qaic's "is this file still
in the tree" check (printf | grep -qxF) said no to a source it had just
copied, deleted it, and the 7.3 module failed to build in CI with "No rule
to make target 'qaic_ssr.o'". A line that means to ignore the pipeline's
status says so with `|| true`."""
import pathlib
import re

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]

EARLY_READER = re.compile(
    r"(?<!\|)\|(?!\|)\s*(head\b|grep\s+-[A-Za-z]*[qm]|awk\b.*\bexit\b|sed\s+(-n\s+)?['\"]?[0-9]*q)")


def pipefail_scripts():
    candidates = [p for p in (TOP / "scripts").rglob("*") if p.is_file()]
    candidates += [TOP / ".ci" / "run"] + list((TOP / "tests").rglob("*.sh"))
    for path in sorted(candidates):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if re.search(r"^\s*set\s+-[a-z]*o\s+pipefail", text, re.M):
            yield path


def early_readers(text):
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        match = EARLY_READER.search(code)
        if match and "|| true" not in code[match.end():]:
            yield number, line.strip()


@pytest.mark.parametrize("path", list(pipefail_scripts()), ids=lambda p: str(p.relative_to(TOP)))
def test_no_pipe_into_an_early_reader(path):
    found = [f"{path.relative_to(TOP)}:{n}: {line}" for n, line in early_readers(path.read_text())]
    assert not found, "pipes into a reader that may exit before the writer:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    """printf '%s\\n' "${want[@]}" | grep -qxF "$rel" || rm -f "$f\"""",
    "x=$(apt-cache depends p | awk '/Depends/ { print $2; exit }')",
    "bdf=$(ls /sys/kernel/debug/accel | head -1)",
    "cmd | sed -n 1q",
])
def test_the_check_finds_each_early_reader(line):
    assert list(early_readers(line))


def test_the_check_lets_an_ignored_status_pass():
    assert not list(early_readers("core=$(ls -t dir/core* 2>/dev/null | head -1 || true)"))
