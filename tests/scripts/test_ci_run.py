# SPDX-License-Identifier: GPL-2.0-or-later
""".ci/run's order: the runner's tests start at once, beside the first root;
the other release's root starts once the first root has built the kernels
from source, and runs beside the rest of it; a failure of either root or of
the runner's tests fails the run with its status, and a failing first root
stops the others. The roots and make are stand-ins (AIC100_CI_FRESH_ROOT) that write what
they do to an event file; the real runner has its own tests
(test_fresh_root.py)."""

import os
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]

# Arguments as .ci/run gives them; the role is the other release's when
# --release is among them. HOST_BUILDS=1: the host root builds a kernel
# (a build-kernel stamp in the shared folder) and then waits, at most 60 s,
# for the other root to start. OTHER_HANGS=1: the other root runs until it
# is stopped.
FAKE_ROOT = r"""#!/bin/bash
ev=$EVENTS share=""
role=host
while [ $# -gt 0 ]; do
	case "$1" in
	--release) role=other; shift 2 ;;
	--share-kernels) share=$2; shift 2 ;;
	--) shift; break ;;
	*) shift ;;
	esac
done
echo "$role start: $*" >>"$ev"
if [ $role = host ]; then
	if [ "$HOST_BUILDS" = 1 ]; then
		mkdir -p "$share/kbuild/k" && echo built >"$share/kbuild/k/.stamp"
		echo "host kernel built" >>"$ev"
		for _ in $(seq 600); do grep -q '^other start' "$ev" && break; sleep 0.1; done
	fi
	echo "host end" >>"$ev"
	exit "$HOST_RC"
fi
trap 'echo "other stopped" >>"$ev"; exit 143' TERM
if [ "$OTHER_HANGS" = 1 ]; then
	while :; do sleep 0.1; done
fi
echo "other end" >>"$ev"
exit "$OTHER_RC"
"""


# make test-fresh-root: ends with RUNNER_RC, or with MAKE_HANGS=1 runs
# until it is stopped.
MAKE = r"""#!/bin/bash
echo "make $*" >>"$EVENTS"
trap 'echo "make stopped" >>"$EVENTS"; exit 143' TERM
if [ "$MAKE_HANGS" = 1 ]; then
	while :; do sleep 0.1; done
fi
echo "make end" >>"$EVENTS"
exit "$RUNNER_RC"
"""


@pytest.fixture
def ci(tmp_path):
    root = tmp_path / "fresh-root"
    root.write_text(FAKE_ROOT)
    root.chmod(0o755)
    make = tmp_path / "make"
    make.write_text(MAKE)
    make.chmod(0o755)
    events = tmp_path / "events"

    def run(host_rc=0, other_rc=0, host_builds=True, other_hangs=False, runner_rc=0, runner_hangs=False):
        env = dict(os.environ, AIC100_CI_FRESH_ROOT=str(root), AIC100_CI_MAKE=str(make),
                   AIC100_BUILD=str(tmp_path / "build"), TMPDIR=str(tmp_path), EVENTS=str(events),
                   HOST_RC=str(host_rc), OTHER_RC=str(other_rc), HOST_BUILDS=str(int(host_builds)),
                   OTHER_HANGS=str(int(other_hangs)), RUNNER_RC=str(runner_rc),
                   MAKE_HANGS=str(int(runner_hangs)))
        res = subprocess.run([str(TOP / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120)
        run.events = [line.split(":")[0] for line in events.read_text().splitlines()]
        run.lines = events.read_text().splitlines()
        return res

    yield run
    assert not list(tmp_path.glob("aic100-ci.*")), "the run's work folder is left behind"


def test_the_other_root_starts_once_the_kernels_are_built_beside_the_first(ci):
    res = ci()
    assert res.returncode == 0, res.stdout + res.stderr
    at = {e: i for i, e in enumerate(ci.events)}
    assert at["host kernel built"] < at["other start"] < at["host end"]
    assert "other end" in at
    assert "[ci] all passed" in res.stdout


def test_the_runners_tests_run_beside_the_first_root(ci):
    res = ci(runner_hangs=False)
    assert res.returncode == 0, res.stdout + res.stderr
    at = {e: i for i, e in enumerate(ci.events)}
    assert at["make test-fresh-root"] < at["host end"] and "make end" in at
    assert "[ci] the runner's tests: passed" in res.stdout


def test_the_roots_run_the_whole_suite_and_one_shard(ci):
    ci()
    starts = [line for line in ci.lines if " start: " in line]
    assert starts[0] == "host start: make test"
    assert starts[1].startswith("other start: make test SHARD=")
    shard = starts[1].split("SHARD=")[1]
    k, n = map(int, shard.split("/"))
    assert 1 <= k <= n


def test_without_kernels_to_build_the_other_root_follows_the_first(ci):
    res = ci(host_builds=False)
    assert res.returncode == 0, res.stdout + res.stderr
    at = {e: i for i, e in enumerate(ci.events)}
    assert at["host end"] < at["other start"]
    assert "other end" in at


def test_a_failing_first_root_fails_the_run_and_stops_the_others(ci):
    res = ci(host_rc=3, other_hangs=True, runner_hangs=True)
    assert res.returncode == 3, res.stdout + res.stderr
    assert {"other stopped", "make stopped"} <= set(ci.events)
    assert "FAILED (exit 3)" in res.stdout


def test_failing_runners_tests_fail_the_run_with_their_status(ci):
    res = ci(runner_rc=4)
    assert res.returncode == 4, res.stdout + res.stderr
    assert "the runner's tests (make test-fresh-root): FAILED (exit 4)" in res.stdout


def test_a_failing_second_root_fails_the_run_with_its_status(ci):
    res = ci(other_rc=5)
    assert res.returncode == 5, res.stdout + res.stderr
    assert "SHARD=" in res.stdout and "FAILED (exit 5)" in res.stdout
