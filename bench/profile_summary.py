#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The summary of one bench/profile-requests folder: per QEMU thread, the
share of the sampled interval it ran, waited runnable for a host CPU, and
slept; per guest CPU, its busy and idle shares; the card's interrupts per
guest CPU; the requests the guest's loop reported.

    bench/profile_summary.py DIR INTERVAL_NS
"""
import os
import re
import sys


def threads(path):
    """tid -> (name, ns on a CPU, ns runnable waiting)."""
    out = {}
    with open(path) as f:
        for line in f:
            tid, name, sched = line.rstrip("\n").split("\t")
            run, wait = (int(x) for x in sched.split())
            out[tid] = (name, run, wait)
    return out


def cpu_times(path):
    """cpuN -> (busy jiffies, idle jiffies); idle includes iowait."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"(cpu\d+) (.*)", line)
            if not m:
                continue
            v = [int(x) for x in m.group(2).split()]
            idle = v[3] + v[4]
            out[m.group(1)] = (sum(v[:8]) - idle, idle)
    return out


def irqs(path):
    """name -> per-CPU counts, for the card's vectors and the IPIs."""
    out = {}
    with open(path) as f:
        cpus = len(f.readline().split())
        for line in f:
            parts = line.split()
            if not parts:
                continue
            name = " ".join(parts[cpus + 1:])
            if "qaic" in name or "mhi" in name or parts[0] in ("CAL:", "RES:", "LOC:"):
                counts = [int(x) for x in parts[1:cpus + 1] if x.isdigit()]
                out[f"{parts[0]} {name}".strip()] = counts
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench/profile_summary.py DIR INTERVAL_NS")
    d, span = sys.argv[1], int(sys.argv[2])
    a, b = threads(os.path.join(d, "threads-before")), threads(os.path.join(d, "threads-after"))
    with open(os.path.join(d, "loadavg")) as f:
        print(f"host load average at the end: {f.read().strip()}")
    print(f"QEMU's threads over {span / 1e9:.1f} s (schedstat):")
    print(f"{'thread':<22} {'running':>8} {'runnable':>9} {'asleep':>7}")
    rows = []
    for tid, (name, run, wait) in b.items():
        if tid not in a:
            continue
        dr, dw = run - a[tid][1], wait - a[tid][2]
        rows.append((dr, name, dw))
    total = 0
    for dr, name, dw in sorted(rows, reverse=True):
        total += dr
        if dr + dw < span / 1000:
            continue
        print(f"{name:<22} {dr / span:8.1%} {dw / span:9.1%} {max(0, span - dr - dw) / span:7.1%}")
    print(f"{'all threads':<22} {total / span:8.1%} (of {os.cpu_count()} host CPUs)")

    before, after = os.path.join(d, "guest-stat-before"), os.path.join(d, "guest-stat-after")
    if os.path.exists(before) and os.path.exists(after):
        ca, cb = cpu_times(before), cpu_times(after)
        print("guest CPUs over the loop (/proc/stat):")
        for cpu in sorted(cb):
            busy, idle = cb[cpu][0] - ca[cpu][0], cb[cpu][1] - ca[cpu][1]
            print(f"  {cpu}: busy {busy / max(1, busy + idle):.1%}")
        ia, ib = irqs(os.path.join(d, "guest-irq-before")), irqs(os.path.join(d, "guest-irq-after"))
        print("guest interrupts over the loop, per CPU:")
        for name, counts in ib.items():
            delta = [c - p for c, p in zip(counts, ia.get(name, [0] * len(counts)))]
            if any(delta):
                print(f"  {name}: {' '.join(str(x) for x in delta)}")
    loop = os.path.join(d, "guest-loop.txt")
    if os.path.exists(loop):
        with open(loop) as f:
            rates = [line.strip() for line in f if re.match(r"\s+\d+\s+\d+", line)]
        print("the guest's loop (submitters, card req/s, x 1 DBC, NVMe req/s, ...), per pass:")
        for r in rates:
            print("  " + r[:100])


if __name__ == "__main__":
    main()
