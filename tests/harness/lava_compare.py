# SPDX-License-Identifier: GPL-2.0-or-later
"""Compares a LAVA run's test cases with what the latest make test reported
for the same configurations, case by case: scripts/lava-local's proof that
the matrix runs on LAVA with the same verdicts as here.

    lava_compare.py [--results DIR] [--build DIR] [CONFIG...]

DIR/<config>.yaml (default build/lava/results) is `lavacli results JOB
--yaml` for the configuration's job; with no CONFIG, every file there is
compared. make test's verdicts come from the configuration's KTAP in the
results folders (build/results/ktap/<config>.ktap or
build/results/shard-*/ktap/<config>.ktap, the newest), read by ktap.py as
the harness reads them.

LAVA 2023.01 records a monitor's cases under a test suite named after the
monitor (its name lowercased, spaces as '-', no index prefix: the
generator names it after the configuration with '.' as '_'), and each
case's name as the reported id lowercased with every run of non-word
characters as '_' (lava_dispatcher/actions/test/monitor.py): 'nnc.echo'
becomes 'nnc_echo'. Both sides are compared under that name. Its own
suite, 'lava', holds the job's actions and is not compared.

Every difference is printed (a case on one side only, a result that
differs, an unexpected suite); exit 1 if there is any, 0 if none, 2 if a
side is missing altogether."""

import argparse
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[1]


def lava_case_name(case_id):
    """The name LAVA's monitor gives a reported case id."""
    return re.sub(r"\W+", "_", case_id.strip().lower())


def lava_suite_name(config):
    """The suite a configuration's monitor records its cases under."""
    return config.replace(".", "_").replace(" ", "-").lower()


def expected_cases(verdicts):
    """make test's {case: verdict} under LAVA's case names; two ids that
    LAVA would merge are a difference of their own."""
    cases, clashes = {}, []
    for case_id, verdict in sorted(verdicts.items()):
        name = lava_case_name(case_id)
        if name in cases:
            clashes.append(f"make test's cases {cases[name][0]} and {case_id} are both {name} in LAVA")
        cases[name] = (case_id, verdict)
    return cases, clashes


def lava_cases(results, config):
    """{case: result} of a configuration's monitor suite from `lavacli
    results --yaml`, and the suites that are neither it nor LAVA's own."""
    want = lava_suite_name(config)
    cases, others = {}, set()
    for row in results or []:
        suite = str(row.get("suite", ""))
        if suite == "lava":
            continue
        if suite != want:
            others.add(suite)
            continue
        cases[str(row["name"])] = str(row["result"])
    return cases, sorted(others)


def differences(config, verdicts, results):
    """Every difference between make test's verdicts and LAVA's results
    for one configuration, as lines."""
    expected, out = expected_cases(verdicts)
    got, others = lava_cases(results, config)
    out = [f"{config}: {line}" for line in out]
    out += [f"{config}: unexpected LAVA test suite {s} (expected {lava_suite_name(config)})" for s in others]
    for name in sorted(set(expected) | set(got)):
        if name not in got:
            case_id, verdict = expected[name]
            out.append(f"{config}: {case_id}: make test {verdict}, missing in LAVA")
        elif name not in expected:
            out.append(f"{config}: {name}: LAVA {got[name]}, missing in make test")
        elif got[name] != expected[name][1]:
            case_id, verdict = expected[name]
            out.append(f"{config}: {case_id}: make test {verdict}, LAVA {got[name]}")
    return out


def latest_ktap(build, config):
    """The newest KTAP of a configuration among the results folders."""
    found = [p for p in [build / "results" / "ktap" / f"{config}.ktap",
                         *(build / "results").glob(f"shard-*/ktap/{config}.ktap")] if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def make_test_verdicts(build, config):
    ktap = latest_ktap(build, config)
    if ktap is None:
        return None, None
    return ktap_module().verdicts(ktap.read_text(errors="replace")), ktap


def ktap_module():
    """The harness's reading of a guest's KTAP (tests/harness/ktap.py)."""
    sys.path.insert(0, str(HERE))
    import ktap
    return ktap


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=TOP / "build" / "lava" / "results")
    ap.add_argument("--build", type=Path, default=TOP / "build")
    ap.add_argument("configs", nargs="*")
    args = ap.parse_args(argv)
    configs = args.configs or sorted(p.stem for p in args.results.glob("*.yaml"))
    if not configs:
        print(f"lava_compare: no LAVA results in {args.results}", file=sys.stderr)
        return 2
    diffs, cases, missing = [], 0, 0
    for config in configs:
        path = args.results / f"{config}.yaml"
        verdicts, ktap = make_test_verdicts(args.build, config)
        if not path.is_file() or verdicts is None:
            print(f"{config}: no {'LAVA results ' + str(path) if not path.is_file() else 'make test KTAP'}")
            missing += 1
            continue
        results = yaml.safe_load(path.read_text())
        found = differences(config, verdicts, results)
        cases += len(verdicts)
        print(f"{config}: {len(verdicts)} cases (make test: {ktap}), {len(found)} differences")
        diffs += found
    for line in diffs:
        print(line)
    print(f"lava_compare: {len(configs)} configurations, {cases} cases, {len(diffs)} differences")
    if missing:
        return 2
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
