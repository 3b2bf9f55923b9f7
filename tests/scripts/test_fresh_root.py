# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/fresh-root: a pristine root per run, the command's status, and
nothing left behind (copies, mounts, processes) after success, failure,
timeout or interruption. Needs root; the first run makes the cached Debian
base (about a minute)."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
RUNNER = TOP / "scripts" / "fresh-root"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="fresh-root needs root")


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4].replace("\\040", " ") for line in f]
    return [p for p in points if p == str(path) or p.startswith(f"{path}/")]


def host_release():
    with open("/etc/os-release") as f:
        fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    return fields["VERSION_CODENAME"].strip('"')


def other_release():
    return {"bookworm": "trixie", "trixie": "bookworm"}[host_release()]


def processes_rooted_under(path):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/root").startswith(f"{path}/"):
                    found.append(int(pid))
            except OSError:
                pass
    return found


def as_from_a_terminal():
    """SIGINT as a shell at a terminal leaves it to a command: a suite run
    in the background of a non-interactive shell (nohup ... &) inherits it
    ignored, and a shell cannot trap a signal ignored on entry, so the
    runner would sleep through the interrupt test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def runner(tmp_path):
    """Runs fresh-root with its copies in a folder of this test; checks,
    whatever the outcome, that the run left nothing behind."""
    work = tmp_path / "runs"
    log = tmp_path / "run.log"

    def start(*args, timeout=None, popen=False, release=None, options=()):
        cmd = [str(RUNNER), "--workdir", str(work), "--log", str(log), *options,
               *(["--timeout", str(timeout)] if timeout else []),
               *(["--release", release] if release else []), "--", *args]
        if popen:
            return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True, preexec_fn=as_from_a_terminal)
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                              preexec_fn=as_from_a_terminal)

    start.work, start.log = work, log
    yield start
    assert not mounts_under(work), f"mounts left: {mounts_under(work)}"
    assert not processes_rooted_under(work), f"processes left: {processes_rooted_under(work)}"
    assert not list(work.iterdir()), f"copies left: {list(work.iterdir())}"


def test_command_sees_a_pristine_clone_and_success_cleans_up(runner):
    head = subprocess.run(["git", "-C", str(TOP), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    probe = (f'test "$(git rev-parse HEAD)" = {head} && test -f README.md && test "$PWD" = /root/aic100-virt'
             ' && ! command -v gcc && ! command -v qemu-system-x86_64 && test ! -e /root/.cache'
             ' && test ! -e build && grep -q " /proc proc " /proc/mounts && test -c /dev/null'
             f' && . /etc/os-release && test "$VERSION_CODENAME" = {host_release()} && echo PRISTINE')
    res = runner("sh", "-c", probe)
    assert res.returncode == 0, res.stdout
    assert "PRISTINE" in runner.log.read_text()
    assert f"log: {runner.log}" in res.stdout


def test_other_release_is_a_root_of_that_release_with_its_own_suites(runner):
    other, host = other_release(), host_release()
    probe = (f'. /etc/os-release && test "$VERSION_CODENAME" = {other}'
             f' && grep -rqw {other} /etc/apt/sources.list.d /etc/apt/sources.list 2>/dev/null'
             f' && ! grep -rqw {host} /etc/apt/sources.list.d /etc/apt/sources.list 2>/dev/null'
             ' && apt-get -q update >/dev/null && apt-cache show debootstrap >/dev/null && echo OTHER-RELEASE')
    res = runner("sh", "-c", probe, release=other)
    assert res.returncode == 0, res.stdout
    assert "OTHER-RELEASE" in runner.log.read_text()


def test_runs_given_one_kernel_folder_share_the_kernels_built_from_source(runner, tmp_path):
    """.ci/run's two releases build the debug kernel once: what the first
    root's build-kernel left in the cache's ksrc/ and kbuild/ is the
    second's, and nothing else of the cache is shared."""
    shared = tmp_path / "kernels"
    options = ("--share-kernels", str(shared))
    cache = "/root/.cache/aic100-virt"
    first = runner("sh", "-c", f"echo built >{cache}/kbuild/stamp && echo src >{cache}/ksrc/tree && "
                   f"mkdir {cache}/ccache-kernel", options=options)
    assert first.returncode == 0, first.stdout
    second = runner("sh", "-c", f'test "$(cat {cache}/kbuild/stamp)" = built && test -f {cache}/ksrc/tree && '
                    f'test ! -e {cache}/ccache-kernel && echo SHARED', options=options, release=other_release())
    assert second.returncode == 0, second.stdout
    assert "SHARED" in runner.log.read_text()
    assert (shared / "kbuild" / "stamp").read_text() == "built\n"


def test_failing_command_gives_its_status(runner):
    res = runner("sh", "-c", "echo about to fail; exit 7")
    assert res.returncode == 7, res.stdout
    assert "about to fail" in runner.log.read_text()


def test_timeout_stops_even_a_command_that_ignores_sigterm(runner):
    began = time.monotonic()
    res = runner("sh", "-c", "trap '' TERM; sleep 600", timeout=3)
    assert res.returncode == 124, res.stdout
    assert "timed out" in res.stdout
    assert time.monotonic() - began < 120


def test_daemon_and_mount_left_by_the_command_are_removed(runner):
    res = runner("sh", "-c", "mount -t tmpfs none /mnt && setsid sleep 600 </dev/null >/dev/null 2>&1 & sleep 1")
    assert res.returncode == 0, res.stdout


def test_interrupt_stops_the_command_and_cleans_up(runner):
    proc = runner("sleep", "600", popen=True)
    output = []
    for line in proc.stdout:
        output.append(line)
        if "running in the copy" in line:
            break
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(output) + rest
    assert "interrupted" in rest


def test_bad_options_are_refused(runner):
    res = subprocess.run([str(RUNNER), "--timeout", "soon", "--", "true"], capture_output=True, text=True)
    assert res.returncode != 0
    assert "--timeout" in res.stderr
    res = subprocess.run([str(RUNNER), "--release", "sid", "--", "true"], capture_output=True, text=True)
    assert res.returncode != 0
    assert "--release: bookworm or trixie" in res.stderr
    runner.work.mkdir(exist_ok=True)
