# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/profile_summary.py on a bench/profile-requests folder made here,
with round numbers: the shares below are worked out by hand."""

import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SUMMARY = TOP / "bench" / "profile_summary.py"
SPAN_NS = 10_000_000_000


def write_run(d):
    # tid, name, ns on a CPU, ns runnable (schedstat's first two fields).
    (d / "threads-before").write_text("100\tCPU 0/TCG\t1000 2000\n101\taic100-worker\t0 0\n102\tworker\t5 5\n")
    (d / "threads-after").write_text(
        f"100\tCPU 0/TCG\t{1000 + 6_000_000_000} {2000 + 3_000_000_000}\n"
        f"101\taic100-worker\t2000000000 500000000\n"
        "102\tworker\t5 5\n"
        "103\tnew thread\t9 9\n")
    (d / "loadavg").write_text("2.50 2.00 1.50 3/100 1234\n")
    (d / "guest-stat-before").write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\n"
                                         "cpu1 0 0 0 100 0 0 0 0 0 0\n")
    (d / "guest-stat-after").write_text("cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 40 0 40 100 0 0 0 0 0 0\n"
                                        "cpu1 25 0 0 175 0 0 0 0 0 0\n")
    irq = ("           CPU0       CPU1\n"
           " 33:        {a}        {b}  IR-PCI-MSI-0000:01:00.0 1-edge      qaic_dbc\n"
           " 40:        {a}        {a}  IR-PCI-MSI-0000:00:03.0 1-edge      virtio0\n"
           "RES:        {a}        {b}   Rescheduling interrupts\n")
    (d / "guest-irq-before").write_text(irq.format(a=10, b=20))
    (d / "guest-irq-after").write_text(irq.format(a=110, b=20))
    (d / "guest-loop.txt").write_text("configuration: ...\n         4        30000     0.00            0\n")


def summarize(d):
    p = subprocess.run([sys.executable, str(SUMMARY), str(d), str(SPAN_NS)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_each_thread_running_runnable_and_asleep_over_the_interval(tmp_path):
    write_run(tmp_path)
    out = summarize(tmp_path)
    assert "host load average at the end: 2.50 2.00 1.50" in out
    lines = out.splitlines()
    # Busiest first; a thread idle over the interval and one born in it are left out.
    cpu = lines.index(next(x for x in lines if x.startswith("CPU 0/TCG")))
    assert lines[cpu].split()[-3:] == ["60.0%", "30.0%", "10.0%"]
    assert lines[cpu + 1].split()[-3:] == ["20.0%", "5.0%", "75.0%"]
    assert not any(x.startswith("worker ") or x.startswith("new thread") for x in lines)
    assert any(x.startswith("all threads") and "80.0%" in x for x in lines)


def test_guest_cpus_and_the_cards_interrupts_over_the_loop(tmp_path):
    write_run(tmp_path)
    out = summarize(tmp_path)
    # cpu0: 60 busy of 80 jiffies; cpu1: 25 of 100.
    assert "cpu0: busy 75.0%" in out
    assert "cpu1: busy 25.0%" in out
    assert "33: IR-PCI-MSI-0000:01:00.0 1-edge qaic_dbc: 100 0" in out
    assert "RES: Rescheduling interrupts: 100 0" in out
    assert "virtio0" not in out
    assert "4        30000" in out
