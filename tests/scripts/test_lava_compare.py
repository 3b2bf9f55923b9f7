# SPDX-License-Identifier: GPL-2.0-or-later
"""tests/harness/lava_compare.py, which scripts/lava-local's proof rests on:
it reports a result that differs, a case on one side only and a suite of
another name, finds nothing when the two agree, and its exit status says
which."""
import os
import pathlib
import sys

import yaml

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
import lava_compare  # noqa: E402

CONFIG = "k7.3-1card-1msi-crc"
SUITE = "k7_3-1card-1msi-crc"  # the monitor's name: '.' as '_'
VERDICTS = {"boot.probe": "pass", "nnc.echo": "pass", "data.crc-check": "fail", "health.ssr": "skip"}


def lava_rows(verdicts, suite=SUITE):
    """What `lavacli results --yaml` gives for these verdicts: LAVA's own
    suite first, then the monitor's cases under the names LAVA makes."""
    rows = [{"suite": "lava", "name": "job", "result": "pass"}]
    rows += [{"suite": suite, "name": lava_compare.lava_case_name(c), "result": r,
              "metadata": {"extra": [{"test_case_id": c}]}} for c, r in verdicts.items()]
    return rows


def test_equal():
    assert lava_compare.differences(CONFIG, VERDICTS, lava_rows(VERDICTS)) == []


def test_result_differs():
    got = dict(VERDICTS, **{"nnc.echo": "fail"})
    assert lava_compare.differences(CONFIG, VERDICTS, lava_rows(got)) == [
        f"{CONFIG}: nnc.echo: make test pass, LAVA fail"]


def test_case_missing_in_lava():
    got = {c: r for c, r in VERDICTS.items() if c != "health.ssr"}
    assert lava_compare.differences(CONFIG, VERDICTS, lava_rows(got)) == [
        f"{CONFIG}: health.ssr: make test skip, missing in LAVA"]


def test_case_extra_in_lava():
    got = dict(VERDICTS, **{"nnc.extra": "pass"})
    assert lava_compare.differences(CONFIG, VERDICTS, lava_rows(got)) == [
        f"{CONFIG}: nnc_extra: LAVA pass, missing in make test"]


def test_other_suite_is_reported():
    diffs = lava_compare.differences(CONFIG, VERDICTS, lava_rows(VERDICTS, suite="0_" + SUITE))
    assert f"{CONFIG}: unexpected LAVA test suite 0_{SUITE} (expected {SUITE})" in diffs
    assert len(diffs) == 1 + len(VERDICTS)


def test_ids_lava_would_merge_are_reported():
    verdicts = {"a.b_c": "pass", "a_b.c": "pass"}
    assert lava_compare.differences(CONFIG, verdicts, lava_rows({"a.b_c": "pass"})) == [
        f"{CONFIG}: make test's cases a.b_c and a_b.c are both a_b_c in LAVA"]


def test_main_reads_the_newest_ktap(tmp_path, capsys):
    """Through the files, with the harness's KTAP reading: exit 0 on
    agreement, 1 on a difference, 2 without results; the newest of two
    results folders' KTAP wins."""
    ktap = "\n".join(["KTAP version 1", "1..1", "ok 1 probe", "# suite: nnc", "KTAP version 1", "1..3",
                      "ok 1 echo", "not ok 2 status", "ok 3 reset # SKIP no card", ""])
    verdicts = lava_compare.ktap_module().verdicts(ktap)
    assert verdicts == {"boot.probe": "pass", "nnc.echo": "pass", "nnc.status": "fail", "nnc.reset": "skip"}
    old = tmp_path / "results" / "shard-1-of-2" / "ktap" / f"{CONFIG}.ktap"
    new = tmp_path / "results" / "ktap" / f"{CONFIG}.ktap"
    for p in (old, new):
        p.parent.mkdir(parents=True)
    old.write_text("KTAP version 1\n# suite: other\nKTAP version 1\n1..1\nok 1 gone\n")
    new.write_text(ktap)
    os.utime(old, (1, 1))
    results = tmp_path / "lava"
    results.mkdir()
    args = ["--results", str(results), "--build", str(tmp_path), CONFIG]
    assert lava_compare.main(args) == 2
    (results / f"{CONFIG}.yaml").write_text(yaml.safe_dump(lava_rows(verdicts)))
    assert lava_compare.main(args) == 0
    case = sorted(verdicts)[0]
    flipped = dict(verdicts, **{case: "skip" if verdicts[case] != "skip" else "pass"})
    (results / f"{CONFIG}.yaml").write_text(yaml.safe_dump(lava_rows(flipped)))
    capsys.readouterr()
    assert lava_compare.main(args) == 1
    assert f"{CONFIG}: {case}: make test {verdicts[case]}, LAVA {flipped[case]}" in capsys.readouterr().out
