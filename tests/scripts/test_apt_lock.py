# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/lib.sh's apt_get waits, bounded, for a package lock another job holds.

apt-get update on a lists folder of the test's own (no sources: no network,
nothing of the host's touched) while a child process holds that folder's
lock, as another apt job would.
"""
import fcntl
import os
import pathlib
import subprocess
import sys
import time

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]


def hold_lock(path, seconds):
    """A child that takes the lock (fcntl, as apt does), then prints 'held'."""
    code = ("import fcntl, sys, time\n"
            f"f = open({str(path)!r}, 'w')\n"
            "fcntl.lockf(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            f"time.sleep({seconds})\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def apt_update(lists, timeout):
    env = dict(os.environ, AIC100_APT_LOCK_TIMEOUT=str(timeout), AIC100_BUILD=str(lists.parent / "build"))
    script = (f". {TOP}/scripts/lib.sh; apt_get -o Dir::State::Lists={lists} "
              "-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=- "
              "update")
    start = time.monotonic()
    run = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    return run, time.monotonic() - start


@pytest.fixture
def lists(tmp_path):
    d = tmp_path / "lists"
    (d / "partial").mkdir(parents=True)
    return d


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update locks only as root")
def test_waits_for_a_lock_another_job_holds(lists):
    holder = hold_lock(lists / "lock", 4)
    run, took = apt_update(lists, 60)
    holder.wait()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "waiting for it" in run.stderr
    assert "held by process" in run.stderr
    assert took >= 2


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update locks only as root")
def test_gives_up_after_its_bound_and_says_why(lists):
    holder = hold_lock(lists / "lock", 30)
    try:
        run, took = apt_update(lists, 3)
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode != 0
    assert "Could not get lock" in run.stdout + run.stderr
    assert took < 25
