# SPDX-License-Identifier: GPL-2.0-or-later
"""Expected results in the DRM CI style, for runs on a user's kernel tree
(make test KERNEL_TREE=DIR), and the JUnit XML a CI engine reads.

tests/expectations/<driver>-<series>-fails.txt, -flakes.txt and -skips.txt
hold one case a line, "<suite>:<case>,<reason>" ("run:<check>" for a check
on the run as a whole), and comments after "#". A listed failure is an
expected result, a listed flake passes either way, a listed skip is not
judged; a failure that is not listed is red, and a listed failure that
passed is reported, with the lists as the run saw them written next to the
JUnit files, as DRM CI's update script does."""

import dataclasses
from pathlib import Path

import junit_xml as junit

TOP = Path(__file__).resolve().parents[2]
EXPECTATIONS = TOP / "tests" / "expectations"
KINDS = ("fails", "flakes", "skips")


def _read(path):
    entries = {}
    if not path.exists():
        return entries
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        case, sep, reason = line.partition(",")
        if not sep or ":" not in case or not reason.strip():
            raise ValueError(f"{path}:{n}: expected '<suite>:<case>,<reason>', got {raw!r}")
        entries[case.strip()] = reason.strip()
    return entries


@dataclasses.dataclass
class Expectations:
    driver: str
    series: str
    lists: dict  # kind -> case id -> reason

    @classmethod
    def load(cls, driver, series, folder=EXPECTATIONS):
        return cls(driver, series, {k: _read(folder / f"{driver}-{series}-{k}.txt") for k in KINDS})

    def judge(self, case_id, passed):
        """(verdict, reason): verdict is pass, fail, xfail (a listed
        failure), xpass (a listed failure that passed), flake or skip."""
        for kind, verdict in (("skips", "skip"), ("flakes", "flake")):
            if case_id in self.lists[kind]:
                return verdict, self.lists[kind][case_id]
        if case_id in self.lists["fails"]:
            return ("xpass" if passed else "xfail"), self.lists["fails"][case_id]
        return ("pass" if passed else "fail"), ""


def junit_xml(config_name, results):
    """JUnit XML for one configuration (python3-junit.xml). results:
    (suite, case, verdict, reason, output) in order; xfail and skip are
    skipped test cases with the reason, fail and xpass failures."""
    cases = []
    for suite, case, verdict, reason, output in results:
        tc = junit.TestCase(case, classname=f"{config_name}.{suite}")
        if verdict == "fail":
            tc.add_failure_info("failed", output)
        elif verdict == "xpass":
            tc.add_failure_info(f"a listed failure passed ({reason}): take it off the fails list", output)
        elif verdict == "xfail":
            tc.add_skipped_info(f"expected failure: {reason}")
        elif verdict == "skip":
            tc.add_skipped_info(f"skipped: {reason}")
        elif verdict == "flake" and output:
            # As the harness counts it: a listed flake that failed is skipped.
            tc.add_skipped_info(f"listed flake, failed this time: {reason}")
        cases.append(tc)
    return junit.to_xml_report_string([junit.TestSuite(config_name, cases)])


def seen_lists(results_by_driver):
    """The fails list each driver/series would need for this run to be
    green: {(driver, series): text}. results: (case_id, verdict, reason)."""
    out = {}
    for (driver, series), results in results_by_driver.items():
        lines = [f"# {driver} on {series}: the failures this run saw (make test KERNEL_TREE=...)"]
        for case_id, verdict, reason in results:
            if verdict in ("fail", "xfail"):
                lines.append(f"{case_id},{reason or 'new in this run: say why'}")
        out[(driver, series)] = "\n".join(lines) + "\n"
    return out
