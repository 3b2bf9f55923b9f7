# SPDX-License-Identifier: GPL-2.0-or-later
"""A build started beside the tests (lib.sh's start_beside, as scripts/test
starts the debug kernel) and waited for by the harness
(tests/harness/beside.py): its status and seconds reach the harness through
the pipe, whenever it ends, and stopping it stops all it started. Stand-in
builds only; nothing of the host is changed."""
import os
import pathlib
import subprocess
import textwrap

TOP = pathlib.Path(__file__).resolve().parents[2]

# In the shell that started the build, as pytest runs in scripts/test's.
HARNESS_SIDE = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from beside import BesideBuild
    pid, fd, log, act = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    build = BesideBuild(__import__("pathlib").Path(log))
    build.adopt(pid, fd)
    heard = []
    if act == "stop":
        build.wait(0.05, 0.2, lambda waited, last: heard.append(last))
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


def beside(tmp_path, build, act="wait"):
    log = tmp_path / "build.log"
    env = dict(os.environ, AIC100_CACHE=str(tmp_path / "cache"), AIC100_BUILD=str(tmp_path / "build"))
    script = (f". {TOP}/scripts/lib.sh; start_beside b {log} bash -c {build!r}; "
              f"exec /usr/bin/python3 -c \"$1\" {TOP}/tests/harness \"$b_pid\" \"$b_fd\" {log} {act}")
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
