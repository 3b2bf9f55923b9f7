# SPDX-License-Identifier: GPL-2.0-or-later
"""Boots one guest per configuration (through scripts/vm-run), runs the
in-guest KTAP suites in it once (the boot suite, then the NNC, data-path and
health suites where the configuration asks for them), and hands the parsed
results to the tests."""

import contextlib
import dataclasses
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

import beside
import expectations
import kernels
import results
import shards
import configs
from configs import BUILD, CONFIGS, RACE_SUITES, TOP, Config, suite_commands
from ktap import RESULT as KTAP_RESULT, SUITE_MARK

ONLINE_NOTE = re.compile(r"# online (\S+) uptime=([\d.]+) now=([\d.]+)")
# Kernel trouble, and the guest's own set-up going wrong (mounts, modules).
# With the debug kernel's detectors: KASAN, KCSAN, lockdep's,
# DEBUG_ATOMIC_SLEEP's and DMA-API debugging's reports start "BUG:" or
# "WARNING:"; UBSAN, debug objects and kmemleak have their own.
ALARMING = re.compile(r"Oops|BUG:|WARNING:|Call Trace|general protection|Kernel panic"
                      r"|UBSAN: |ODEBUG: |suspected memory leak"
                      r"|^mount: |^modprobe: |^insmod: |aic100-guest: ")


@dataclasses.dataclass
class GuestRun:
    config: Config
    returncode: int
    output: str
    serial_log: str
    seconds: float
    online_after: dict = dataclasses.field(default_factory=dict)  # bdf -> s from QEMU start
    plans: dict = dataclasses.field(default_factory=dict)  # suite -> plan
    suite_results: dict = dataclasses.field(default_factory=dict)  # suite -> name -> (ok, directive, diag)

    @property
    def plan(self):
        return self.plans.get("boot", -1)

    @property
    def results(self):
        return self.suite_results.get("boot", {})

    @property
    def qemu_crashed(self):
        return self.returncode == VM_RUN_QEMU_CRASHED

    def crash_note(self):
        return "; ".join(m.group(0) for m in CRASH_EVIDENCE.finditer(self.output)) or "no evidence reported"

    def parse(self):
        diag, suite = [], "boot"
        for line in self.output.splitlines():
            if m := SUITE_MARK.match(line):
                suite, diag = m.group(1), []
            elif m := re.match(r"^1\.\.(\d+)$", line):
                self.plans[suite] = int(m.group(1))
            elif m := KTAP_RESULT.match(line):
                self.suite_results.setdefault(suite, {})[m.group(3)] = (
                    m.group(1) == "ok", m.group(4), "\n".join(diag))
                diag = []
            elif line.startswith("    #"):
                diag.append(line.strip())


_runs = {}
_pytest_config = None
# With nothing new from a guest for this long, say that it is still running.
HEARTBEAT_S = 20


def pytest_addoption(parser):
    parser.addoption("--cpu-hogs", type=int, default=int(os.environ.get("AIC100_CPU_HOGS", "0") or 0),
                     help="run N busy processes beside the guests for the whole session, as a loaded "
                          "machine would (default: $AIC100_CPU_HOGS or 0)")


def pytest_configure(config):
    global _pytest_config
    _pytest_config = config


@pytest.fixture(scope="session", autouse=True)
def cpu_hogs(request):
    """Busy loops beside the suite: everything it waits for must be waited
    for, not assumed to take as long as on an idle machine."""
    n = request.config.getoption("--cpu-hogs")
    # Each hog dies with the suite, even when the suite is killed.
    hog = ("import ctypes, os, signal\n"
           "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
           "if os.getppid() == 1:\n"
           "    raise SystemExit\n"
           "while True:\n"
           "    pass\n")
    hogs = [subprocess.Popen(["/usr/bin/python3", "-c", hog]) for _ in range(n)]
    if n:
        say(f"{n} CPU hog(s) running beside the suite (pids {' '.join(str(h.pid) for h in hogs)})")
    yield n
    for h in hogs:
        h.kill()
        h.wait()


def say(text):
    """A progress line on the terminal now, past pytest's output capture: a
    guest runs for minutes before the first of its items reports."""
    tr = _pytest_config.pluginmanager.get_plugin("terminalreporter") if _pytest_config else None
    if tr is None:
        print(text, flush=True)
        return
    capman = _pytest_config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        tr.write_line(text)
        tr.flush()


def _stamped_lines(stream, out):
    for line in stream:
        out.put((time.monotonic(), line))
    out.put((time.monotonic(), None))


# vm-run's status when QEMU died by a signal; it keeps the evidence.
VM_RUN_QEMU_CRASHED = 126
CRASH_EVIDENCE = re.compile(r"QEMU crashed: .*|evidence kept in \S+")
_qemu_crashes = []

# A report of QEMU's sanitizers (make SANITIZE=1: vm-run runs the ASan+UBSan
# QEMU, whose stderr is in the run's output): the first line of each.
SANITIZER_REPORT = re.compile(r"^.*(==\d+==\s*ERROR: (AddressSanitizer|LeakSanitizer)|"
                              r"\bruntime error: |SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer|"
                              r"LeakSanitizer)).*$", re.M)


def sanitizer_report(output):
    """The sanitizer report in a guest run's output (from its first line to
    QEMU's end), or None."""
    m = SANITIZER_REPORT.search(output)
    return output[m.start():] if m else None



# The kernels built from source (scripts/build-source-kernels), which
# scripts/test starts before the host-side tests (AIC100_KERNELS_PID and
# AIC100_KERNELS_FD: beside.py): the build is CPU work, and the host-side
# tests and the guests leave about half of two cores idle. A
# configuration that boots one waits for the build here.
KERNELS_LOG = BUILD / "logs" / "source-kernels.log"
# Far beyond any build seen (1,612 s on a slow day): only a stuck build.
KERNELS_WAIT_S = 5400


class SourceKernels(beside.BesideBuild):
    def __init__(self):
        super().__init__(KERNELS_LOG)
        self.told = False

    @property
    def seconds(self):
        """The build's seconds, for the shards' balance: none for kernels that were up to date."""
        built = self.ended.is_set() and "[build-kernel] build " in KERNELS_LOG.read_text(errors="replace")
        return self.took if built else 0

    def wait(self, name):
        status = super().wait(HEARTBEAT_S, KERNELS_WAIT_S, lambda waited, last: say(
            f"[{name}] waiting for the kernels built from source, {waited:.0f}s; last: {last[:120]}"))
        if not self.told:
            say(f"kernels built from source: exit {status} after {self.took}s (log: {KERNELS_LOG})")
            self.told = True
        return status


_source_kernels = SourceKernels()


@pytest.fixture(scope="session", autouse=True)
def source_kernels_beside():
    pid = os.environ.get("AIC100_KERNELS_PID")
    if pid and any(kernels.is_built(c.kernel) for c in CONFIGS):
        _source_kernels.adopt(int(pid), int(os.environ["AIC100_KERNELS_FD"]))
    yield
    _source_kernels.stop()


def await_source_kernel(config):
    """The configuration to run: `config` itself, or for one that boots a
    kernel built beside the guests, the table's entry once that kernel is
    built, which must be the collected one but for the paths of the modules
    it installed (under lib/modules/RELEASE, which collection could not
    know). Fails the configuration when the build failed."""
    if not _source_kernels.pid or not kernels.is_built(config.kernel):
        return config
    status = _source_kernels.wait(config.name)
    if status != 0:
        tail = "\n".join(KERNELS_LOG.read_text(errors="replace").splitlines()[-40:])
        pytest.fail(f"the kernels built from source failed (exit {status}; log: {KERNELS_LOG}):\n{tail}",
                    pytrace=False)
    now = {c.name: c for c in configs.selected_configs()}.get(config.name)
    if now is None or not configs.same_before_its_build(config, now):
        pytest.fail(f"{config.name} is not the configuration it was before its kernel was built (its tree "
                    "carries other patches than collection saw): run make test again", pytrace=False)
    return now


def guest_run(config: Config) -> GuestRun:
    """Runs the guest for `config` the first time it is asked for."""
    if config in _runs:
        return _runs[config]
    collected, config = config, await_source_kernel(config)
    log = BUILD / "vm" / f"serial-{config.name}.log"
    boot_module = configs.boot_module(config)
    assert boot_module is None or boot_module.exists(), f"{boot_module} missing: run 'make'"
    module = ["--module", str(boot_module) if boot_module else "none"]
    if config.card_opts:
        module += ["--card-opts", config.card_opts]
    if config.module_args:
        module += ["--module-args", config.module_args]
    for arg in config.kernel_args:
        module += ["--kernel-arg", arg]
    if config.frontend == "vfio-user":
        module += ["--vfio-user"]
    for command in suite_commands(config):
        for path in (command.program, *command.needs):
            assert Path(path).exists(), f"{path} missing: run 'make' first"
    script = configs.suite_script(config)
    cmd = [str(TOP / "scripts" / "vm-run"), "--kernel", config.kernel, "--cards", str(config.cards),
           "--card", config.card_types, "--msi", str(config.msi),
           *module, "--log", str(log), "--timeout", "900", "--", "bash", "-c", script]
    # vm-run starts QEMU at once; each output line is stamped on arrival so
    # the guest's "online ... uptime=U now=N" notes can be placed on the
    # host's clock: online at arrival - (N - U). A QEMU crash is a result
    # like any other: vm-run keeps its evidence and the configuration fails.
    start = time.monotonic()
    say(f"[{config.name}] booting the {kernels.label(config.kernel)} guest ({config.driver} qaic, {config.cards} card(s), "
        f"{config.msi} MSI, suites: {' '.join(config.suites())})")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1)
    lines, online = [], {}
    feed = queue.Queue()
    threading.Thread(target=_stamped_lines, args=(proc.stdout, feed), daemon=True).start()
    suite, last_said, last = "boot", time.monotonic(), "(no output yet)"
    while True:
        try:
            arrival, line = feed.get(timeout=HEARTBEAT_S)
        except queue.Empty:
            say(f"[{config.name}] {time.monotonic() - start:.0f}s, still running; last: {last}")
            continue
        if line is None:
            break
        lines.append(line)
        if m := ONLINE_NOTE.search(line):
            online[m.group(1)] = arrival - start - (float(m.group(3)) - float(m.group(2)))
        if m := SUITE_MARK.match(line.rstrip("\n")):
            suite = m.group(1)
        stripped = line.strip()
        if stripped:
            last = stripped[:120]
        # Each case as it ends, so a long suite shows how far it is.
        if KTAP_RESULT.match(line.rstrip("\n")) or time.monotonic() - last_said > HEARTBEAT_S:
            say(f"[{config.name}] {arrival - start:.0f}s {suite}: {last}")
            last_said = time.monotonic()
    proc.wait()
    run = GuestRun(config, proc.returncode, "".join(lines),
                   log.read_text(errors="replace") if log.exists() else "", time.monotonic() - start, online)
    run.parse()
    if run.qemu_crashed:
        _qemu_crashes.append(f"{config.name}: {run.crash_note()}")
        say(f"[{config.name}] QEMU CRASHED: {run.crash_note()}")
    print(f"\n[{config.name}] guest ran in {run.seconds:.1f}s, exit {run.returncode}")
    for bdf, secs in online.items():
        print(f"[{config.name}] {bdf}: QEMU start to ONLINE {secs:.2f}s")
    _runs[collected] = run
    return run


def pytest_generate_tests(metafunc):
    if "config" in metafunc.fixturenames and "case" in metafunc.fixturenames:
        params = [(c, s, n) for c in CONFIGS for s in c.suites() for n in c.expected_cases(s)]
        metafunc.parametrize(("config", "suite", "case"), params,
                             ids=[f"{c.name}:{n}" if s == "boot" else f"{c.name}:{s}:{n}" for c, s, n in params])
    elif "config" in metafunc.fixturenames:
        # A check that holds for some configurations names them (applies).
        applies = getattr(metafunc.function, "applies", lambda c: True)
        configs = [c for c in CONFIGS if applies(c)]
        metafunc.parametrize("config", configs, ids=[c.name for c in configs])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    params = getattr(getattr(item, "callspec", None), "params", {})
    config = params.get("config")
    if not isinstance(config, Config):
        return
    # An item counts once: by its call, or by its setup when that did not
    # pass. Suite "run" holds the checks on a guest's run as a whole (no
    # crash, complete suites, clean serial log, no sanitizer report).
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        suite = params.get("suite", "run")
        case = params.get("case") or item.originalname.removeprefix("test_")
        _judge(item, rep, config, suite, case)


# make test KERNEL_TREE=DIR judges its results against tests/expectations
# (expectations.py, the DRM CI style). Every run writes its results folder
# (results.py): build/results, or build/results/shard-K-of-N for make test
# SHARD=K/N, which runs only that shard's configurations (shards.py).
TREE_MODE = bool(os.environ.get("KERNEL_TREE"))
ALL_CONFIGS = list(CONFIGS)
SHARD = os.environ.get("AIC100_SHARD", "")
_NEEDS = shards.table()[1]
if SHARD:
    _k, _n, _names, _ = shards.shard_of(SHARD)
    CONFIGS = [c for c in ALL_CONFIGS if c.name in _names]
    RESULTS = BUILD / "results" / shards.folder(_k, _n)
elif os.environ.get("AIC100_FRONTEND") == "vfio-user":
    RESULTS = BUILD / "results" / "vfio-user"
else:
    RESULTS = BUILD / "results"
_expectations = {}
_junit = {}  # config name -> [(suite, case, verdict, reason, output)]
_seen = {}  # (driver, series) -> [(case id, verdict, reason)]


def case_driver(config, suite, case):
    """The driver a case ran: a reproducer's cases are named after their run."""
    runs = {"close_after_unbind": config.close_after_unbind, "status_padding": config.status_padding}.get(
        suite, config.race_runs(suite) if suite in RACE_SUITES else ())
    for label in sorted((label for label, _, _ in runs), key=len, reverse=True):
        if case.startswith(label + "_"):
            return label
    return config.driver


def _judge(item, rep, config, suite, case):
    """Applies the expectations (tree runs only) to the report, and records
    the verdict for the JUnit files."""
    driver, series = case_driver(config, suite, case), kernels.series(config.kernel)
    key = (driver, series)
    if key not in _expectations:
        _expectations[key] = (expectations.Expectations.load(driver, series) if TREE_MODE
                              else expectations.Expectations(driver, series, {k: {} for k in expectations.KINDS}))
    if rep.skipped:
        verdict, reason = "skip", str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else "skipped"
    else:
        verdict, reason = _expectations[key].judge(f"{suite}:{case}", rep.passed)
    output = rep.longreprtext if rep.failed else ""
    listed = f"{driver}-{series}-{{}}.txt ({reason})"
    if verdict == "xfail" or (verdict == "flake" and rep.failed):
        rep.outcome, rep.wasxfail = "skipped", listed.format("fails" if verdict == "xfail" else "flakes")
    elif verdict == "xpass":
        rep.outcome, rep.longrepr = "failed", f"listed in {listed.format('fails')} but passed: take it off the list"
    elif verdict == "skip" and not rep.skipped:
        rep.outcome, rep.longrepr = "skipped", (str(item.path), 0, f"Skipped: {listed.format('skips')}")
    _junit.setdefault(config.name, []).append((suite, case, verdict, reason, output))
    _seen.setdefault(key, []).append((f"{suite}:{case}", verdict, reason))


def pytest_sessionfinish(session):
    """The run's results folder (results.py): JUnit and KTAP per
    configuration that ran, the cases each driver did not pass, and the
    manifest; for a tree run also the fails lists this run would need,
    beside them (as DRM CI's update script writes)."""
    if not _junit:
        return
    ran = [c for c in CONFIGS if c.name in _junit]
    # scripts/test's foreground build, or the one beside the guests.
    built = int(os.environ.get("AIC100_KERNEL_BUILD_SECONDS") or 0) or _source_kernels.seconds
    manifest = {"shard": SHARD or None, "configs": [c.name for c in ALL_CONFIGS], "ran": [c.name for c in ran],
                # scripts/test ran the host-side tests before the guests.
                "host_checks": os.environ.get("AIC100_HOST_CHECKS") == "1", "tree_mode": TREE_MODE,
                "info": {c.name: {"kernel": kernels.label(c.kernel), "driver": c.driver, "suites": c.suites()}
                         for c in ran},
                "seconds": {c.name: round(_runs[c].seconds, 1) for c in ran if c in _runs},
                # The kernels this run built from source, and how long that took.
                "builds": {b: built for c in ran for b in _NEEDS.get(c.name, ())} if built else {}}
    results.write_folder(RESULTS, manifest,
                         {name: expectations.junit_xml(name, rows) for name, rows in _junit.items()},
                         {c.name: _runs[c].output for c in ran if c in _runs}, _seen)
    if TREE_MODE:
        (RESULTS / "expectations").mkdir(parents=True, exist_ok=True)
        for (driver, series), text in expectations.seen_lists(_seen).items():
            # A reproducer's run checks belong to all of its drivers ("a/b/c").
            name = driver.replace("/", "+")
            (RESULTS / "expectations" / f"{name}-{series}-fails.txt").write_text(text)


def result_matrix():
    """The matrix of the configurations that ran, as make test-report prints
    it: read back from the JUnit this run wrote."""
    folder = results.read_folder(RESULTS)
    return results.matrix([(n, folder.manifest["info"][n], results.outcomes(folder.suites[n]))
                           for n in folder.manifest["ran"] if n in folder.suites])


def pytest_terminal_summary(terminalreporter):
    """The kernel x driver x suite matrix, then boot timings of every guest
    that ran, after the test results."""
    if not _runs:
        return
    terminalreporter.section("aic100 matrix: kernel x driver x suite")
    for line in result_matrix():
        terminalreporter.write_line(line)
    terminalreporter.section("aic100 guests")
    for note in _qemu_crashes:
        terminalreporter.write_line("QEMU CRASHED " + note)
    for run in _runs.values():
        terminalreporter.write_line(f"{run.config.name}: guest ran {run.seconds:.1f}s, exit {run.returncode}")
        for bdf, secs in run.online_after.items():
            terminalreporter.write_line(f"{run.config.name}: {bdf} QEMU start to ONLINE {secs:.2f}s")
