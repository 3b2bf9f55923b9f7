# SPDX-License-Identifier: GPL-2.0-or-later
"""make test SHARD=K/N and make test-report: the shards partition the
configuration table for every N, the same inputs give the same shards, a
bad SHARD gets one line, and the merged report of N shards is the report of
one unsharded run on the same results."""
import dataclasses
import json
import os
import pathlib
import random
import subprocess
import sys

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
import expectations  # noqa: E402
import report  # noqa: E402
import results  # noqa: E402
import shards  # noqa: E402


@pytest.fixture(scope="module")
def table():
    """The configuration table make test runs here, and the committed durations."""
    names, needs = shards.table()
    return names, needs, shards.load_durations()


def test_every_n_partitions_the_table(table):
    names, needs, durations = table
    for n in range(1, len(names) + 1):
        plan = shards.plan(names, durations, n, needs)
        assert len(plan) == n
        flat = [c for shard in plan for c in shard]
        assert sorted(flat) == sorted(names), f"N={n}: not each configuration exactly once"
        assert len(flat) == len(set(flat))
        for shard in plan:
            assert shard == [c for c in names if c in shard], f"N={n}: a shard out of the table's order"


def test_every_configuration_is_timed(table):
    names, _, durations = table
    assert not set(names) - set(durations["configs"]), "configurations missing from tests/harness/durations.json"


def test_the_same_inputs_give_the_same_shards(table):
    names, needs, durations = table
    shuffled = dict(random.Random(1).sample(sorted(durations["configs"].items()), len(durations["configs"])))
    again = {**durations, "configs": shuffled}
    for n in (2, 3, 5):
        assert shards.plan(names, durations, n, needs) == shards.plan(names, again, n, needs)


def test_shards_are_balanced_by_time():
    durations = {"configs": {"a": 100, "b": 90, "c": 50, "d": 40, "e": 10}, "builds": {}, "host": 0}
    assert shards.plan(list("abcde"), durations, 2) == [["a", "d", "e"], ["b", "c"]]


def test_shard_1_starts_with_the_host_side_tests():
    durations = {"configs": {"a": 100, "b": 100, "c": 100}, "builds": {}, "host": 150}
    assert shards.plan(["a", "b", "c"], durations, 2) == [["c"], ["a", "b"]]
    assert shards.plan(["a", "b", "c"], {**durations, "host": 0}, 2) == [["a", "c"], ["b"]]


def test_a_kernel_build_is_paid_once_where_a_second_is_no_faster():
    names = ["k1", "p1", "k2", "p2", "k3"]
    durations = {"configs": {"p1": 700, "p2": 700, "k1": 60, "k2": 60, "k3": 60},
                 "builds": {"kernel-debug": 600}, "host": 0}
    needs = {n: ("kernel-debug",) for n in names if n.startswith("k")}
    assert shards.plan(names, durations, 3, needs) == [["p1"], ["p2"], ["k1", "k2", "k3"]]
    # Long configurations are worth a second build; short ones are not.
    long = {**durations, "configs": {**durations["configs"], "k1": 700, "k2": 700}}
    assert shards.plan(names, long, 3, needs) == [["k1", "k3"], ["p1", "p2"], ["k2"]]
    even = {**durations, "configs": dict.fromkeys(names, 60)}
    assert shards.plan(names, even, 3, needs) != shards.plan(names, even, 3)


def test_an_untimed_configuration_counts_as_the_median():
    durations = {"configs": {"a": 10, "b": 30, "c": 500}, "builds": {}, "host": 0}
    assert shards.plan(["a", "b", "c", "new"], durations, 2) == [["c"], ["a", "b", "new"]]


@pytest.mark.parametrize("spec", ["0/3", "4/3", "3", "a/b", "1/0", "-1/3", "1/3/4", ""])
def test_a_bad_shard_is_refused_with_one_line(spec):
    with pytest.raises(shards.ShardError, match=r"^SHARD=.*"):
        shards.parse(spec, 10)


def test_more_shards_than_configurations_is_refused(table):
    names = table[0]
    assert shards.parse(f"{len(names)}/{len(names)}", len(names)) == (len(names), len(names))
    out = subprocess.run([sys.executable, str(TOP / "tests" / "harness" / "shards.py"), "check",
                          f"1/{len(names) + 1}"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"make test: SHARD=1/{len(names) + 1}: N must be at most {len(names)}, the number of guest configurations"]


@pytest.mark.parametrize("spec", ["0/3", "4/3", "x", "2/"])
def test_make_refuses_a_bad_shard_before_building(spec):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "AIC100_SHARD")}
    out = subprocess.run(["make", "--no-print-directory", "-n", "test", f"SHARD={spec}"], cwd=TOP, env=env,
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert "expected K/N with 1 <= K <= N" in out.stderr
    assert not out.stdout.strip(), "make went on to plan the build"


def test_a_shard_without_the_host_tests_builds_what_its_guests_run():
    """Shards 2..N build the guest-suites target alone (scripts/build):
    every program of the host C++ build that the configurations name must
    be one of its inputs, or such a shard boots guests without it."""
    import configs
    cmake = configs.BUILD / "cmake"
    if not (cmake / "build.ninja").exists():
        pytest.skip("the host C++ is not configured yet (make build)")
    # Its own inputs (-t query) and, through them, everything below (-t inputs).
    built = set()
    for tool in ("query", "inputs"):
        out = subprocess.run(["ninja", "-C", str(cmake), "-t", tool, "guest-suites"],
                             capture_output=True, text=True, check=True)
        built |= {(cmake / line).resolve() for line in out.stdout.split() if not line.endswith(":")}
    named = {v.resolve() for v in vars(configs).values()
             if isinstance(v, pathlib.Path) and cmake in v.parents}
    assert named, "the table names no program of the host C++ build"
    for path in sorted(named):
        assert path in built or any(path in b.parents for b in built), f"guest-suites does not build {path}"


def test_a_configuration_collected_before_its_kernel_was_built_is_known_after(monkeypatch):
    """The debug guests are collected before the harness builds their
    kernel: their upstream modules' paths hold no release yet."""
    import configs
    import kernels

    def table(release):
        monkeypatch.setattr(kernels, "release", lambda kernel: release)
        return {c.name: c for c in configs.selected_configs() if kernels.is_built(c.kernel)}
    before, now = table("(not built)"), table("7.3.4-aic100-debug")
    monkeypatch.undo()
    if not now:
        pytest.skip("no configuration boots a kernel built from source (DEBUG_GUESTS=0)")
    assert any(repr(before[n]) != repr(c) for n, c in now.items()), "no module path depends on the release"
    monkeypatch.setattr(kernels, "release", lambda kernel: "7.3.4-aic100-debug")
    assert all(configs.same_before_its_build(before[n], c) for n, c in now.items())
    assert all(configs.same_before_its_build(c, c) for c in now.values())
    name, config = next(iter(now.items()))
    other = dataclasses.replace(before[name], health_known_bugs=("execute-unwind",))
    assert not configs.same_before_its_build(other, config)


def test_durations_change_only_past_the_tolerance():
    old = {"configs": {"a": 100, "b": 100}, "builds": {"kernel-debug": 700}, "host": 200}
    new = shards.refresh(old, {"a": 110.4, "b": 140.2, "c": 33.3}, host=100, builds={"kernel-debug": 800})
    assert new == {"configs": {"a": 100, "b": 140, "c": 33}, "builds": {"kernel-debug": 700}, "host": 100}
    assert shards.refresh(old, {}, builds={"kernel-debug": 1612})["builds"] == {"kernel-debug": 1612}


# ---- the report ---------------------------------------------------------------------

NAMES = [f"cfg{i}" for i in range(7)]


def _run(name):
    """One configuration's results as the harness records them: (suite, case,
    verdict, reason, output) rows, its KTAP and the cases it did not pass."""
    rng = random.Random(name)
    rows = [("boot", f"case{j}", rng.choice(["pass"] * 6 + ["skip", "xfail"]), "why", "") for j in range(12)]
    rows += [("run", check, "pass", "", "") for check in ("qemu_did_not_crash", "serial_log_clean")]
    driver = "ours" if int(name[-1]) % 2 else "upstream"
    seen = [(f"{s}:{c}", v, r) for s, c, v, r, _ in rows if v in ("fail", "xfail")]
    return rows, f"KTAP version 1\n1..12\n# {name}\n", (driver, "7.3"), seen


def _write(folder, table, ran, shard, host, failing=()):
    seen = {}
    junit, ktap = {}, {}
    for name in ran:
        rows, text, key, s = _run(name)
        if name in failing:
            rows = rows[:-1] + [("run", "serial_log_clean", "fail", "", "Oops")]
            s = s + [("run:serial_log_clean", "fail", "")]
        junit[name] = expectations.junit_xml(name, rows)
        ktap[name] = text
        seen.setdefault(key, []).extend(s)
    manifest = {"shard": shard, "configs": table, "ran": ran, "host_checks": host, "tree_mode": False,
                "info": {n: {"kernel": "7.3", "driver": _run(n)[2][0], "suites": ["boot"]} for n in ran},
                "seconds": {n: 10.0 + NAMES.index(n) for n in ran}}
    results.write_folder(folder, manifest, junit, ktap, seen)
    if host:
        (folder / "host").mkdir()
        (folder / "host" / "unit.xml").write_text(expectations.junit_xml("unit", [("t", "a", "pass", "", "")]))
        (folder / "host" / "seconds").write_text("42\n")
    return folder


def _same(a, b):
    assert a.lines == b.lines
    assert a.junit == b.junit
    assert a.diff == b.diff
    assert (a.missing, a.failed, a.seconds, a.host_seconds, a.builds) == \
        (b.missing, b.failed, b.seconds, b.host_seconds, b.builds)


def test_merged_shards_report_what_one_run_reports(tmp_path):
    whole = results.report([_write(tmp_path / "whole", NAMES, NAMES, None, True)])
    assert whole.ok and not whole.missing
    durations = {"configs": {n: 10 * (i + 1) for i, n in enumerate(NAMES)}, "builds": {}, "host": 42}
    for n in range(1, len(NAMES) + 1):
        plan = shards.plan(NAMES, durations, n)
        dirs = [_write(tmp_path / f"n{n}" / shards.folder(k, n), NAMES, part, f"{k}/{n}", k == 1)
                for k, part in enumerate(plan, 1)]
        _same(results.report(list(reversed(dirs))), whole)


def test_a_failed_case_fails_the_report_in_either_form(tmp_path):
    whole = results.report([_write(tmp_path / "whole", NAMES, NAMES, None, True, failing={"cfg3"})])
    plan = shards.plan(NAMES, {"configs": {}, "builds": {}, "host": 0}, 3)
    dirs = [_write(tmp_path / shards.folder(k, 3), NAMES, part, f"{k}/3", k == 1, failing={"cfg3"})
            for k, part in enumerate(plan, 1)]
    merged = results.report(dirs)
    _same(merged, whole)
    assert merged.failed == 1 and not merged.ok
    assert any(line.startswith("run:serial_log_clean") or "+run:serial_log_clean" in line for line in merged.lines)
    assert report.main([*map(str, dirs), "--out", str(tmp_path / "out"), "--no-durations"]) == 1


def test_a_missing_shard_is_named(tmp_path, capsys):
    plan = shards.plan(NAMES, {"configs": {}, "builds": {}, "host": 0}, 3)
    dirs = [_write(tmp_path / shards.folder(k, 3), NAMES, part, f"{k}/3", k == 1) for k, part in enumerate(plan, 1)]
    rep = results.report(dirs[1:])
    assert rep.missing == [*plan[0], "host-side tests (shard 1)"]
    assert report.main([*map(str, dirs[1:]), "--out", str(tmp_path / "out"), "--no-durations"]) == 1
    out = capsys.readouterr().out
    for name in plan[0]:
        assert f"missing: {name}" in out
    assert report.main([*map(str, dirs), "--out", str(tmp_path / "out"), "--no-durations"]) == 0
    assert json.loads(json.dumps(rep.seconds))  # plain data


def test_a_configuration_without_its_junit_is_missing(tmp_path):
    folder = _write(tmp_path / "whole", NAMES, NAMES, None, True)
    (folder / "junit" / "cfg2.xml").unlink()
    assert results.report([folder]).missing == ["cfg2"]


def test_folders_of_two_tables_are_refused(tmp_path):
    a = _write(tmp_path / "a", NAMES, NAMES[:3], "1/2", True)
    b = _write(tmp_path / "b", NAMES[:-1], NAMES[3:-1], "2/2", False)
    with pytest.raises(ValueError, match="another configuration list"):
        results.report([a, b])
    with pytest.raises(ValueError, match="in two folders"):
        results.report([a, _write(tmp_path / "c", NAMES, NAMES[:1], "2/2", False)])
    assert report.main([str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2


def test_a_complete_report_refreshes_the_durations(tmp_path, monkeypatch):
    path = tmp_path / "durations.json"
    shards.save_durations({"configs": {n: 1000 for n in NAMES}, "builds": {}, "host": 0}, path)
    monkeypatch.setattr(shards, "DURATIONS", path)
    monkeypatch.setattr(shards.load_durations, "__defaults__", (path,))
    monkeypatch.setattr(shards.save_durations, "__defaults__", (path,))
    folder = _write(tmp_path / "whole", NAMES, NAMES, None, True)
    assert report.main([str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    saved = json.loads(path.read_text())
    assert saved["configs"]["cfg0"] == 10 and saved["host"] == 42
    assert os.path.exists(tmp_path / "out" / "junit.xml")
