#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the time of one small request goes, from a QEMU trace log.

QEMU's "log" trace backend writes lines such as
  1234@1764150000.123456:aic100_mmio_write bar2 addr 0x20004 size 4 val 0x7
Each event of the card (its BAR accesses, its MSIs) or of QEMU's NVMe (its
doorbells, commands, completions, MSI-X) is named (REQTP write, RSPTP read,
...) and the steps between consecutive events are summed per kind: how
many per request and their median and mean length in microseconds (host
time). The guest's accesses to the card mark where its driver is, so the
gaps between them are guest time; the gap from a doorbell to the card's
MSI is the card's (and QEMU's event loop's).

  bench/request_timeline.py TRACE_LOG [--device aic100|nvme]
Requests are counted by doorbells (REQTP writes, or NVMe I/O SQ doorbells);
the card's trace is cut into parts at its test mailbox's accesses (the
bench reads the card's counters between its parts), each part reported.
"""
import argparse
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^\d+@(\d+\.\d+):(\w+) ?(.*)$")
DBC_REGS = {0: "REQHP", 4: "REQTP", 8: "RSPHP", 12: "RSPTP"}


def name_aic100(ev, args):
    if ev == "aic100_msi":
        return "card MSI"
    if ev == "pci_cfg_write":
        return "config write %s" % args.split()[0] if args.startswith("aic100") else None
    m = re.match(r"bar(\d) addr 0x([0-9a-f]+) size (\d+)", args)
    if not m:
        return None
    bar, addr = int(m.group(1)), int(m.group(2), 16)
    rw = "read" if ev == "aic100_mmio_read" else "write"
    if bar == 2 and addr >= 0x20000:
        reg = DBC_REGS.get(addr & 0xfff, "0x%x" % (addr & 0xfff))
        return "%s %s" % (reg, rw), (addr - 0x20000) >> 12
    return "bar%d 0x%x %s" % (bar, addr, rw)


def name_nvme(ev, args):
    if ev == "pci_cfg_write":
        return "config write %s" % args.split()[0] if args.startswith("nvme") else None
    if ev == "pci_nvme_mmio_doorbell_sq":
        return "SQ doorbell" if not args.startswith("sqid 0 ") else None
    if ev == "pci_nvme_mmio_doorbell_cq":
        return "CQ doorbell" if not args.startswith("cqid 0 ") else None
    if ev == "pci_nvme_read":
        return "card reads (null-co)"
    if ev == "pci_nvme_enqueue_req_completion":
        return "completion queued"
    if ev == "pci_nvme_irq_msix":
        return "card MSI-X"
    if ev in ("pci_nvme_mmio_read", "pci_nvme_mmio_write"):
        m = re.match(r"addr 0x([0-9a-f]+)", args)
        return ("mmio %s 0x%s" % (ev.rsplit("_", 1)[1], m.group(1))) if m else None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--device", choices=("aic100", "nvme"), default="aic100")
    a = ap.parse_args()
    namer = name_aic100 if a.device == "aic100" else name_nvme
    bell = "REQTP write" if a.device == "aic100" else "SQ doorbell"
    events = []
    with open(a.log, errors="replace") as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            if a.device == "nvme" and m.group(3).startswith("addr ") and "doorbell" not in m.group(2):
                # Doorbell writes also appear as plain MMIO writes: keep
                # them once, as doorbells.
                addr = int(re.match(r"addr 0x([0-9a-f]+)", m.group(3)).group(1), 16)
                if addr >= 0x1000:
                    continue
            n = namer(m.group(2), m.group(3))
            if isinstance(n, tuple):
                events.append((float(m.group(1)), n[0], n[1]))
            elif n:
                events.append((float(m.group(1)), n, None))
    # The bench reads the card's test mailbox (BAR4) between its parts and
    # alternates windows of the card and of the NVMe: the trace is cut at
    # mailbox accesses and at pauses of more than 50 ms, and the windows
    # with one DBC and those with several are reported apart.
    parts, cur = [], []
    for e in events:
        if e[1].startswith("bar4") or (cur and e[0] - cur[-1][0] > 0.05):
            parts.append(cur)
            cur = []
        if not e[1].startswith("bar4"):
            cur.append(e)
    parts.append(cur)
    groups = defaultdict(list)
    for part in parts:
        if sum(1 for e in part if e[1] == bell) < 10:
            continue
        dbcs = {e[2] for e in part if e[1] == bell}
        groups["one DBC" if len(dbcs) <= 1 else "%d DBCs" % len(dbcs)].append(part)
    if not groups:
        sys.exit("no part with ten requests or more (%s) in %s" % (bell, a.log))
    for name, g in sorted(groups.items(), key=lambda x: x[0] != "one DBC"):
        report(name if a.device == "aic100" else "NVMe", g, bell)


def report(name, parts, bell):
    steps = defaultdict(list)
    counts = defaultdict(int)
    requests, total = 0, 0.0
    for events in parts:
        # Only the steady state: from the first doorbell to the last.
        first = next(i for i, e in enumerate(events) if e[1] == bell)
        last = max(i for i, e in enumerate(events) if e[1] == bell)
        events = events[first:last + 1]
        requests += sum(1 for e in events if e[1] == bell) - 1
        for e0, e1 in zip(events, events[1:]):
            steps[(e0[1], e1[1])].append((e1[0] - e0[0]) * 1e6)
        for e in events[:-1]:
            counts[e[1]] += 1
        total += (events[-1][0] - events[0][0]) * 1e6
    print("\n%s: %d requests in %d windows, %.1f us each (doorbell to doorbell, host time)" %
          (name, requests, len(parts), total / requests))
    print("accesses and events per request:")
    for n, c in sorted(counts.items(), key=lambda x: -x[1]):
        if c / requests >= 0.005:
            print("  %-24s %6.2f" % (n, c / requests))
    print("steps (from -> to): per request, median us, mean us, share of the time")
    rows = sorted(steps.items(), key=lambda x: -sum(x[1]))
    for (a0, a1), v in rows:
        share = sum(v) / total
        if share < 0.005:
            continue
        print("  %-22s -> %-22s %5.2f %8.1f %8.1f %5.1f%%" %
              (a0, a1, len(v) / requests, statistics.median(v), statistics.mean(v), 100 * share))

if __name__ == "__main__":
    main()
