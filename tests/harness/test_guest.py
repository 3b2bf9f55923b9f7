# SPDX-License-Identifier: GPL-2.0-or-later
"""One pytest item per KTAP case of the in-guest suites, per configuration,
plus checks on the run as a whole."""

import pytest

from conftest import ALARMING, guest_run, sanitizer_report


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


def test_serial_log_clean(config):
    run = guest_run(config)
    assert run.serial_log, "no serial log"
    bad = [line for line in run.serial_log.splitlines() if ALARMING.search(line)]
    assert not bad, "alarming kernel messages:\n" + "\n".join(bad[:20])


def test_no_sanitizer_report(config):
    """QEMU ran clean: with make SANITIZE=1 it is the ASan+UBSan build, which
    stops at its first report; the whole report is shown here."""
    run = guest_run(config)
    report = sanitizer_report(run.output)
    assert report is None, f"QEMU's sanitizers reported (exit {run.returncode}):\n{report[:12000]}"
