# SPDX-License-Identifier: GPL-2.0-or-later
"""One pytest item per KTAP case of the in-guest suites, per configuration,
plus checks on the run as a whole."""

import re

import pytest

import kernels
from configs import RACE_SUITES, guest_known_reports
from conftest import ALARMING, guest_run, sanitizer_report


# Kernel trouble that is a known bug of upstream's driver: the failure says
# which and where it is written up.
KNOWN_UPSTREAM_BUGS = [
    (re.compile(r"Workqueue: qaic_bootlog bootlog_log|bootlog_log\+0x"),
     "upstream qaic's boot-log teardown race (docs/upstream-bugs.md; patches/linux/0001-*)"),
    (re.compile(r"Workqueue: qaic_ts qaic_boot_timesync_worker|qaic_boot_timesync_worker\+0x"),
     "upstream qaic's boot-timesync teardown race (docs/upstream-bugs.md; patches/linux/0003-*)"),
    (re.compile(r"cleanup_srcu_struct\+0x"),
     "upstream qaic's use after free at a close() after unbind (docs/upstream-bugs.md; "
     "patches/linux/0005-*, 0006-*)"),
    (re.compile(r"ce_count_show\+0x"),
     "upstream qaic's PCI drvdata cleared by a close() after a rebind (docs/upstream-bugs.md; "
     "patches/linux/0007-*)"),
    (re.compile(r"refcount_t: underflow; use-after-free.*(?:\n.*){0,40}__qaic_execute_bo_ioctl"),
     "upstream qaic's EXECUTE_BO error path taking back BOs that an SSR or reset took off the DBC's queue "
     "(docs/upstream-bugs.md; patches/linux/0008-*)"),
]

# The health suite's ssr_execute_unwind, run with --known-bug execute-unwind,
# makes upstream's bug happen between these lines and checks the kernel log
# there itself (the bug's WARNING allowed, nothing else).
EXECUTE_UNWIND_MARKS = ("aic100-test: execute-unwind reproducer armed", "aic100-test: execute-unwind reproducer done")


def without_expected_unwind_bug(config, log):
    """The serial log without the known bug's reproduction, where the
    configuration expects it: from the armed line to the done line, when
    both are there."""
    if "execute-unwind" not in config.health_known_bugs:
        return log
    start, end = (log.find(m) for m in EXECUTE_UNWIND_MARKS)
    if start < 0 or end < start:
        return log
    return log[:start] + log[end:]


def known_reports():
    """name -> (first line, a line it must hold, last line) of each detector
    report of a known upstream bug, allowed where a configuration names it
    (Config.known_reports): the guest programs' own table, whose lines are
    found here as the lines that end with its markers."""
    def line_ending(text):
        return re.compile(r"^.*" + re.escape(text) + r"$", re.M)
    return {name: (line_ending(r.first), r.holds, line_ending(r.last)) for name, r in guest_known_reports().items()}


# kmemleak reports of known upstream leaks: every object's allocation trace
# holds this function (the objects are in the run's output).
KNOWN_LEAKS = {
    # Upstream's qaic as it is (docs/upstream-bugs.md, "Open: kmemleak ..."):
    # its SSR worker's MEMORY_READ requests, a control message of the
    # padded-STATUS run that times out, and the reason of its deferred probe.
    "upstream-leaks": (("ssr_worker+", "msg_xfer+", "device_set_deferred_probe_reason+"), ""),
}
# A leak of the kernel's driver core, whatever driver a guest runs: the
# reason string of a probe deferred because device_add() had not finished
# (docs/upstream-bugs.md, "Open: the driver core's deferred-probe reason").
DRIVER_CORE_LEAKS = ("device_set_deferred_probe_reason+",)
KMEMLEAK_LINE = re.compile(r"^.*kmemleak: \d+ new suspected memory leaks.*$", re.M)


def only_known_leaks(config, output):
    """Whether each object kmemleak reported is a known leak the
    configuration names."""
    if KMEMLEAK_MARK not in output:
        return False
    objects = output[output.find(KMEMLEAK_MARK):].split("unreferenced object")[1:]
    signs = [sign for n in config.known_reports if n in KNOWN_LEAKS for sign in KNOWN_LEAKS[n][0]]
    signs += DRIVER_CORE_LEAKS
    return bool(objects) and all(any(sign in o for sign in signs) for o in objects)


def without_known_reports(config, log, output=""):
    """The serial log without each report that the configuration expects
    (the first of each: lockdep and most detectors report once), and
    without kmemleak's line when every leak it found is a known one."""
    if only_known_leaks(config, output):
        log = KMEMLEAK_LINE.sub("", log)
    reports = known_reports()
    for name in (n for n in config.known_reports if n in reports):
        start_re, must, end_re = reports[name]
        start = start_re.search(log)
        end = end_re.search(log, start.end()) if start else None
        if start and end and must in log[start.start():end.end()]:
            log = log[:start.start()] + log[end.end():]
    return log


def test_ktap_case(config, suite, case):
    run = guest_run(config)
    results = run.suite_results.get(suite, {})
    assert case in results, (
        f"{suite} case {case} missing from the guest's KTAP output (exit {run.returncode}):\n{run.output[-3000:]}")
    ok, directive, diag = results[case]
    if directive == "SKIP":
        pytest.skip(diag or "skipped in the guest")
    assert ok, f"{case} failed in the guest:\n{diag}"


def test_qemu_did_not_crash(config):
    run = guest_run(config)
    assert not run.qemu_crashed, f"QEMU crashed: {run.crash_note()}\n{run.output[-3000:]}"


def test_suite_complete(config):
    run = guest_run(config)
    for suite in config.suites():
        results = run.suite_results.get(suite, {})
        plan = run.plans.get(suite, -1)
        assert plan == len(results), f"{suite}: plan 1..{plan} but {len(results)} results"
        unexpected = set(results) - set(config.expected_cases(suite))
        assert not unexpected, f"{suite}: cases the harness does not know: {sorted(unexpected)}"
    all_ok = all(r[0] for s in run.suite_results.values() for r in s.values())
    assert run.returncode == (0 if all_ok else 1), run.output[-2000:]


# The guest's init prints kmemleak's report after this line (scripts/guest/init).
KMEMLEAK_MARK = "aic100-guest: kmemleak reports:"


def test_serial_log_clean(config):
    run = guest_run(config)
    assert run.serial_log, "no serial log"
    log = run.serial_log
    for suite, (_, what) in RACE_SUITES.items():
        oops_runs = [label for label, _, expect in config.race_runs(suite) if expect == "oops"]
        if oops_runs:
            # The reproducer's run of a driver with the known bug ends in its
            # oops (its outcome case checks that oops); before it, all is clean.
            marker = f"aic100-test: {oops_runs[0]}: {what} race reproducer armed"
            assert marker in log, f"no '{marker}' in the serial log"
            log = log[:log.index(marker)]
    oops_runs = [label for label, _, expect in config.close_after_unbind if expect == "oops"]
    if oops_runs:
        # The same for the close-after-unbind reproducer's upstream run.
        marker = f"aic100-test: {oops_runs[0]}: close-after-unbind reproducer armed"
        assert marker in log, f"no '{marker}' in the serial log"
        log = log[:log.index(marker)]
    log = without_expected_unwind_bug(config, log)
    log = without_known_reports(config, log, run.output)
    bad = [line for line in log.splitlines() if ALARMING.search(line)]
    known = [what for pattern, what in KNOWN_UPSTREAM_BUGS if pattern.search(log)]
    # kmemleak's objects and their allocation traces are in the run's output.
    leaks = run.output[run.output.find(KMEMLEAK_MARK):][:12000] if KMEMLEAK_MARK in run.output else ""
    assert not bad, ("known bug: " + "; ".join(known) + "\n" if known else "") + \
        "alarming kernel messages:\n" + "\n".join(bad[:20]) + ("\n" + leaks if leaks else "")


def test_no_sanitizer_report(config):
    """QEMU ran clean: with make SANITIZE=1 it is the ASan+UBSan build, which
    stops at its first report; the whole report is shown here."""
    run = guest_run(config)
    report = sanitizer_report(run.output)
    assert report is None, f"QEMU's sanitizers reported (exit {run.returncode}):\n{report[:12000]}"


# The kernel's bug detectors (scripts/build-kernel --config debug or kcsan).
# KASAN's reports start "BUG: KASAN:", but a NULL pointer is its shadow's
# fault: "general protection fault ... KASAN: null-ptr-deref in range".
DETECTOR_REPORT = re.compile(r"KASAN: |BUG: KCSAN: |WARNING: possible (?:circular|recursive) locking|"
                             r"WARNING: suspicious RCU usage|BUG: sleeping function called|DMA-API: \S+ \S+: |UBSAN: |"
                             r"ODEBUG: |suspected memory leak")


def expected_bug_markers(config):
    """The armed lines of the reproducer runs that expect the driver's bug."""
    marks = [f"aic100-test: {label}: {what} race reproducer armed"
             for suite, (_, what) in RACE_SUITES.items()
             for label, _, expect in config.race_runs(suite) if expect == "oops"]
    marks += [f"aic100-test: {label}: close-after-unbind reproducer armed"
              for label, _, expect in config.close_after_unbind if expect == "oops"]
    return marks


def test_detectors_name_known_bugs(config):
    """With the detectors on, a reproducer's run of a driver with the bug
    shows it as a detector's report after its armed line: proof that they
    are on and reach the driver."""
    log = guest_run(config).serial_log
    for mark in expected_bug_markers(config):
        assert mark in log, f"no '{mark}' in the serial log"
        after = log[log.index(mark):]
        assert DETECTOR_REPORT.search(after), f"no detector report after '{mark}':\n{after[-3000:]}"


test_detectors_name_known_bugs.applies = lambda config: (kernels.detectors(config.kernel)
                                                          and bool(expected_bug_markers(config)))
