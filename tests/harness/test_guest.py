# SPDX-License-Identifier: GPL-2.0-or-later
"""One pytest item per KTAP case of the in-guest suite, per configuration,
plus checks on the run as a whole."""

import pytest

from conftest import ALARMING, guest_run


def test_ktap_case(config, case):
    run = guest_run(config)
    assert case in run.results, (
        f"case {case} missing from the guest's KTAP output (exit {run.returncode}):\n{run.output[-3000:]}")
    ok, directive, diag = run.results[case]
    if directive == "SKIP":
        pytest.skip(diag or "skipped in the guest")
    assert ok, f"{case} failed in the guest:\n{diag}"


def test_suite_complete(config):
    run = guest_run(config)
    assert run.plan == len(run.results), f"plan 1..{run.plan} but {len(run.results)} results"
    unexpected = set(run.results) - set(config.expected_cases())
    assert not unexpected, f"cases the harness does not know: {sorted(unexpected)}"
    assert run.returncode == (0 if all(r[0] for r in run.results.values()) else 1), run.output[-2000:]


def test_serial_log_clean(config):
    run = guest_run(config)
    assert run.serial_log, "no serial log"
    bad = [line for line in run.serial_log.splitlines() if ALARMING.search(line)]
    assert not bad, "alarming kernel messages:\n" + "\n".join(bad[:20])
