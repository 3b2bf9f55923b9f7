# SPDX-License-Identifier: GPL-2.0-or-later
"""A build started beside the tests (lib.sh's start_beside, as scripts/test
starts the debug kernel) and waited for by the harness
(tests/harness/beside.py): its status and seconds reach the harness through
the pipe, whenever it ends, and stopping it stops all it started. Stand-in
builds only; nothing of the host is changed."""
import os
import pathlib
import shlex
import subprocess
import textwrap

TOP = pathlib.Path(__file__).resolve().parents[2]

# In the shell that started the build, as pytest runs in scripts/test's.
HARNESS_SIDE = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from beside import BesideBuild
    pid, fd, log, act, limit = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6])
    build = BesideBuild(__import__("pathlib").Path(log))
    build.adopt(pid, fd)
    heard = []
    def tell(waited, last):
        heard.append(last)
        if last == os.environ.get("STOP_ON"):  # the build is where the test wants it
            build.stop()
    if act == "stop":
        build.wait(0.05, limit, tell)
        # Left unreaped (this process is the shell's parent) but not running.
        def running_in_group(stat):
            fields = stat.rsplit(")", 1)[1].split()
            return int(fields[2]) == pid and fields[0] != "Z"
        alive = []
        for p in os.listdir("/proc"):
            try:
                alive += [p] if p.isdigit() and running_in_group(open(f"/proc/{p}/stat").read()) else []
            except OSError:
                pass
        print("group alive" if alive else "group gone")
    else:
        build.wait(30, 600, lambda waited, last: heard.append(last))
    print(build.status, build.took, len(heard) > 0)
""")


def beside(tmp_path, build, act="wait", limit=0.2, stop_on=""):
    log = tmp_path / "build.log"
    env = dict(os.environ, AIC100_CACHE=str(tmp_path / "cache"), AIC100_BUILD=str(tmp_path / "build"),
               STOP_ON=stop_on)
    script = (f". {TOP}/scripts/lib.sh; start_beside b {log} bash -c {shlex.quote(build)}; "
              f"exec /usr/bin/python3 -c \"$1\" {TOP}/tests/harness \"$b_pid\" \"$b_fd\" {log} {act} {limit}")
    out = subprocess.run(["bash", "-c", script, "_", HARNESS_SIDE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n"), log


def test_the_harness_gets_the_builds_status(tmp_path):
    lines, log = beside(tmp_path, "echo building; exit 3")
    assert lines[0].split()[:2] == ["3", "0"]
    assert log.read_text() == "building\n"


def test_a_build_that_ended_before_the_harness_looked_is_still_heard(tmp_path):
    # The pipe keeps what the shell wrote: the harness may come much later.
    lines, _ = beside(tmp_path, "true", act="wait")
    assert lines[0].split()[:2] == ["0", "0"]


def test_the_harness_is_told_while_it_waits_and_stops_a_stuck_build(tmp_path):
    lines, log = beside(tmp_path, "echo started; sleep 300 & sleep 300", act="stop")
    assert lines[0] == "group gone"
    status, _, heard = lines[1].split()
    assert status == str(-9) and heard == "True"
    assert log.read_text() == "started\n"


# A process of the build that takes long to exit (1 GiB of its memory to
# give back) is still on its way out when the shell's end closes the pipe:
# stop() must return only once it has gone too.
SLOW_TO_EXIT = ("python3 -c 'import time; b = bytearray(1 << 30); b[::4096] = bytes([1]) * (1 << 18); "
                "print(\"touched\", flush=True); time.sleep(300)' & sleep 300")


def test_stopping_waits_for_every_process_of_the_build(tmp_path):
    lines, log = beside(tmp_path, SLOW_TO_EXIT, act="stop", limit=60, stop_on="touched")
    assert log.read_text() == "touched\n", "stopped by the limit before the memory was touched"
    assert lines[0] == "group gone"
