# SPDX-License-Identifier: GPL-2.0-or-later
"""A run's results as a folder, and one report over any set of such folders
(make test-report DIRS="...").

make test writes build/results/, make test SHARD=K/N build/results/shard-K-of-N/:

  manifest.json      the shard, the whole configuration list, the
                     configurations this run ran (kernel, driver, suites,
                     seconds), whether it ran the host-side tests
  junit/NAME.xml     one JUnit file per configuration
  ktap/NAME.ktap     each configuration's guest output (its KTAP)
  seen.json          per driver and series, the cases that did not pass
                     (what a DRM CI style fails list would need)
  host/*.xml         the host-side tests' JUnit, host/seconds their time
                     (shard 1 only; scripts/test writes them)

The report of one unsharded run's folder and the merged report of its
shards' folders are the same text and the same files: both are made here,
from the folders alone, in the table's order.
"""

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import expectations

MANIFEST = "manifest.json"
SUITES = ("boot", "bootlog_race", "timesync_race", "bootlog_order", "close_after_unbind", "nnc", "data", "health",
          "hostile_dma", "status_padding")


# ---- writing: one run's folder ----------------------------------------------------

def write_folder(folder, manifest, junit_by_config, ktap_by_config, seen):
    """manifest: as read_folder returns it; seen: {(driver, series): [(case id,
    verdict, reason)]}."""
    folder = Path(folder)
    for sub in ("junit", "ktap"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for name, xml in junit_by_config.items():
        (folder / "junit" / f"{name}.xml").write_text(xml)
    for name, text in ktap_by_config.items():
        (folder / "ktap" / f"{name}.ktap").write_text(text)
    (folder / "seen.json").write_text(json.dumps(
        {f"{d}\t{s}": [list(r) for r in rs] for (d, s), rs in seen.items()}, indent=1) + "\n")
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


# ---- reading --------------------------------------------------------------------

@dataclasses.dataclass
class Folder:
    path: Path
    manifest: dict
    suites: dict  # config name -> its <testsuite> elements
    seen: dict  # (driver, series) -> [(case id, verdict, reason)]
    host: dict  # host file name -> <testsuites>/<testsuite> root
    host_seconds: float  # how long the host-side tests took (host/seconds)


def read_folder(path):
    path = Path(path)
    if not (path / MANIFEST).exists():
        raise FileNotFoundError(f"{path}: no {MANIFEST} (not a make test results folder)")
    manifest = json.loads((path / MANIFEST).read_text())
    suites = {}
    for name in manifest["ran"]:
        xml = path / "junit" / f"{name}.xml"
        if xml.exists():
            root = ET.parse(xml).getroot()
            suites[name] = [root] if root.tag == "testsuite" else list(root)
    seen_file = path / "seen.json"
    seen = {}
    if seen_file.exists():
        for key, rows in json.loads(seen_file.read_text()).items():
            driver, series = key.split("\t")
            seen[(driver, series)] = [tuple(r) for r in rows]
    host = {p.name: ET.parse(p).getroot() for p in sorted((path / "host").glob("*.xml"))}
    timed = path / "host" / "seconds"
    return Folder(path, manifest, suites, seen, host, float(timed.read_text()) if timed.exists() else 0)


def case_outcome(testcase):
    """passed, failed or skipped, as the harness counted the item."""
    if testcase.find("failure") is not None or testcase.find("error") is not None:
        return "failed"
    return "skipped" if testcase.find("skipped") is not None else "passed"


def outcomes(testsuites):
    """{suite: {outcome: count}} of one configuration's JUnit, suite "run"
    holding the checks on the run as a whole (classname CONFIG.SUITE)."""
    counts = {}
    for ts in testsuites:
        for tc in ts.iter("testcase"):
            suite = tc.get("classname", "").rsplit(".", 1)[-1]
            c = counts.setdefault(suite, {})
            o = case_outcome(tc)
            c[o] = c.get(o, 0) + 1
    return counts


def case_outcomes(testsuites):
    """{suite.case: outcome} of one configuration's JUnit."""
    return {f"{tc.get('classname', '').rsplit('.', 1)[-1]}.{tc.get('name')}": case_outcome(tc)
            for ts in testsuites for tc in ts.iter("testcase")}


# ---- the matrix -----------------------------------------------------------------

def cell(counts):
    if not counts:
        return "-"
    total = sum(counts.values())
    failed = counts.get("failed", 0)
    skipped = counts.get("skipped", 0)
    text = f"FAIL {failed}/{total}" if failed else f"pass {total - skipped}"
    return text + (f" ({skipped} skip)" if skipped else "")


def matrix(rows):
    """rows: (name, info, {suite: counts}) per configuration that ran, in the
    table's order; info has kernel, driver and suites. One line per row:
    kernel, driver, configuration, each suite's cell, the run checks."""
    suites = [s for s in SUITES if any(s in info["suites"] for _, info, _ in rows)]
    header = ("kernel", "driver", "configuration", *suites, "run checks")
    table = [header] + [(info["kernel"], info["driver"], name, *(cell(counts.get(s)) for s in suites),
                         cell(counts.get("run"))) for name, info, counts in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]


# ---- the report -----------------------------------------------------------------

@dataclasses.dataclass
class Report:
    lines: list  # what make test-report prints
    junit: str  # one JUnit file of every configuration and host test
    diff: str  # the expectations diff
    missing: list  # configurations (and "host-side tests") no folder has
    failed: int  # failed cases
    seconds: dict  # configuration -> measured seconds
    host_seconds: float
    builds: dict  # kernel built from source -> seconds its build took

    @property
    def ok(self):
        return not self.missing and not self.failed


def _expectations_diff(folders, tree_mode):
    """Per driver and series, the fails list the run saw against the one
    committed (make test KERNEL_TREE=... judges by those; other runs list
    none, so every failure shows): '+' a case to list, '-' one to take off."""
    seen = {}
    for f in folders:
        for key, rows in f.seen.items():
            seen.setdefault(key, set()).update((c, r) for c, v, r in rows if v in ("fail", "xfail"))
    out = []
    for driver, series in sorted(seen):
        listed = (expectations.Expectations.load(driver.replace("/", "+"), series).lists["fails"]
                  if tree_mode else {})
        now = {c: r or "new in this run: say why" for c, r in seen[(driver, series)]}
        lines = ([f"+{c},{now[c]}" for c in sorted(set(now) - set(listed))]
                 + [f"-{c},{listed[c]}" for c in sorted(set(listed) - set(now))])
        if lines:
            out += [f"--- {driver}-{series}-fails.txt (listed)", f"+++ {driver}-{series}-fails.txt (seen)", *lines]
    return "\n".join(out) + ("\n" if out else "")


def _host_lines(folders):
    lines, failed = [], 0
    for f in folders:
        for name, root in f.host.items():
            counts = {}
            for tc in root.iter("testcase"):
                o = case_outcome(tc)
                counts[o] = counts.get(o, 0) + 1
            failed += counts.get("failed", 0)
            lines.append(f"host {name.removesuffix('.xml')}: {cell(counts)}")
    return lines, failed


def report(paths):
    """The report of the folders' runs: they must all be of one table (the
    same configuration list)."""
    folders = [read_folder(p) for p in paths]
    if not folders:
        raise ValueError("make test-report: no results folders given (DIRS=\"build/results/shard-1-of-3 ...\")")
    table = folders[0].manifest["configs"]
    for f in folders[1:]:
        if f.manifest["configs"] != table:
            raise ValueError(f"{f.path}: another configuration list than {folders[0].path}'s "
                             "(shards of different commits?)")
    info, suites, seconds = {}, {}, {}
    for f in folders:
        for name in f.manifest["ran"]:
            if name in info:
                raise ValueError(f"{name} is in two folders ({f.path}): give each shard once")
            info[name] = f.manifest["info"][name]
            seconds[name] = f.manifest["seconds"].get(name)
            suites[name] = f.suites.get(name, [])
    ran = [n for n in table if n in info and suites[n]]
    missing = [n for n in table if n not in ran]
    if not any(f.manifest.get("host_checks") for f in folders):
        missing.append("host-side tests (shard 1)")
    rows = [(n, info[n], outcomes(suites[n])) for n in ran]
    failed = sum(c.get("failed", 0) for _, _, counts in rows for c in counts.values())
    host, host_failed = _host_lines(folders)
    tree_mode = any(f.manifest.get("tree_mode") for f in folders)
    diff = _expectations_diff(folders, tree_mode)
    lines = ["aic100 matrix: kernel x driver x suite", *matrix(rows), *host]
    lines += [f"missing: {m}" for m in missing]
    if diff:
        lines += ["expectations (what the fails lists would need):", *diff.rstrip("\n").split("\n")]
    total = sum(sum(c.values()) for _, _, counts in rows for c in counts.values())
    lines.append(f"{len(ran)} of {len(table)} configurations, {total} cases, {failed + host_failed} failed"
                 + (f", {len(missing)} missing" if missing else ""))
    merged = ET.Element("testsuites")
    for n in ran:
        merged.extend(suites[n])
    for f in folders:
        for root in f.host.values():
            merged.extend([root] if root.tag == "testsuite" else list(root))
    host_seconds = sum(f.host_seconds for f in folders)
    builds = {b: s for f in folders for b, s in f.manifest.get("builds", {}).items()}
    return Report(lines, ET.tostring(merged, encoding="unicode") + "\n", diff, missing, failed + host_failed,
                  seconds, host_seconds, dict(sorted(builds.items())))
