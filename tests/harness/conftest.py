# SPDX-License-Identifier: GPL-2.0-or-later
"""Boots one guest per configuration (through scripts/vm-run), runs the
in-guest KTAP suite in it once, and hands the parsed results to the tests."""

import dataclasses
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AIC100_BUILD", TOP / "build"))
GUEST_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-guest-tests"


UPSTREAM_MODULE = BUILD / "upstream" / "qaic.ko"


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    cards: int
    msi: int
    upstream: bool = False  # upstream Linux's qaic instead of ours

    def expected_cases(self):
        names = ["cards_enumerated", "cards_online"]
        for i in range(self.cards):
            names += [f"card{i}_{c}" for c in (
                "pci_ids", "bars", "interrupts", "pcie_link", "driver_bound",
                "accel_node", "bootlog", "loopback", "bar0_registers", "dbc_registers")]
        if self.cards > 1:
            names.append("serial_numbers_distinct")
        names += ["syserr_recovery", "pci_reset_recovery", "unbind_bind_cycles", "bad_firmware",
                  "module_reload_cycles", "dmesg_clean"]
        return names


CONFIGS = [Config("1card-1msi", 1, 1), Config("2cards-32msi", 2, 32),
           Config("upstream-1card-32msi", 1, 32, upstream=True)]

ONLINE_NOTE = re.compile(r"# online (\S+) uptime=([\d.]+) now=([\d.]+)")
KTAP_RESULT = re.compile(r"^(ok|not ok) (\d+) (\S+)(?: # (SKIP|TODO)\b ?(.*))?$")
# Kernel trouble, and the guest's own set-up going wrong (mounts, modules).
ALARMING = re.compile(r"Oops|BUG:|WARNING:|Call Trace|general protection|Kernel panic"
                      r"|^mount: |^modprobe: |^insmod: |aic100-guest: ")


@dataclasses.dataclass
class GuestRun:
    config: Config
    returncode: int
    output: str
    serial_log: str
    seconds: float
    online_after: dict = dataclasses.field(default_factory=dict)  # bdf -> s from QEMU start
    plan: int = -1
    results: dict = dataclasses.field(default_factory=dict)  # name -> (ok, directive, diag)

    def parse(self):
        diag = []
        for line in self.output.splitlines():
            if m := re.match(r"^1\.\.(\d+)$", line):
                self.plan = int(m.group(1))
            elif m := KTAP_RESULT.match(line):
                self.results[m.group(3)] = (m.group(1) == "ok", m.group(4), "\n".join(diag))
                diag = []
            elif line.startswith("    #"):
                diag.append(line.strip())


_runs = {}


def guest_run(config: Config) -> GuestRun:
    """Runs the guest for `config` the first time it is asked for."""
    if config in _runs:
        return _runs[config]
    assert GUEST_TESTS.exists(), f"{GUEST_TESTS} missing: run 'make' first"
    log = BUILD / "vm" / f"serial-{config.name}.log"
    module = []
    guest_args = ["--cards", str(config.cards), "--msi", str(config.msi)]
    if config.upstream:
        assert UPSTREAM_MODULE.exists(), f"{UPSTREAM_MODULE} missing: run 'make'"
        module = ["--module", str(UPSTREAM_MODULE)]
        guest_args += ["--upstream", "1"]
    cmd = [str(TOP / "scripts" / "vm-run"), "--cards", str(config.cards), "--msi", str(config.msi),
           *module, "--log", str(log), "--timeout", "900", "--", str(GUEST_TESTS), *guest_args]
    # vm-run starts QEMU at once; each output line is stamped on arrival so
    # the guest's "online ... uptime=U now=N" notes can be placed on the
    # host's clock: online at arrival - (N - U).
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1)
    lines, online = [], {}
    for line in proc.stdout:
        lines.append(line)
        if m := ONLINE_NOTE.search(line):
            arrival = time.monotonic() - start
            online[m.group(1)] = arrival - (float(m.group(3)) - float(m.group(2)))
    proc.wait()
    run = GuestRun(config, proc.returncode, "".join(lines),
                   log.read_text(errors="replace") if log.exists() else "", time.monotonic() - start,
                   online)
    run.parse()
    print(f"\n[{config.name}] guest ran in {run.seconds:.1f}s, exit {run.returncode}")
    for bdf, secs in online.items():
        print(f"[{config.name}] {bdf}: QEMU start to ONLINE {secs:.2f}s")
    _runs[config] = run
    return run


def pytest_generate_tests(metafunc):
    if "config" in metafunc.fixturenames and "case" in metafunc.fixturenames:
        params = [(c, n) for c in CONFIGS for n in c.expected_cases()]
        metafunc.parametrize(("config", "case"), params, ids=[f"{c.name}:{n}" for c, n in params])
    elif "config" in metafunc.fixturenames:
        metafunc.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])


def pytest_terminal_summary(terminalreporter):
    """Boot timings of every guest that ran, after the test results."""
    if not _runs:
        return
    terminalreporter.section("aic100 guests")
    for run in _runs.values():
        terminalreporter.write_line(f"{run.config.name}: guest ran {run.seconds:.1f}s, exit {run.returncode}")
        for bdf, secs in run.online_after.items():
            terminalreporter.write_line(f"{run.config.name}: {bdf} QEMU start to ONLINE {secs:.2f}s")
