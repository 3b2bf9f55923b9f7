# SPDX-License-Identifier: GPL-2.0-or-later
"""make kcidb: a run's results folders as a KCIDB I/O schema v5.3 document.
The document meets the schema's required fields and types (checked here:
PyPI's kcidb-io is not reachable), its objects link up, one folder and the
same results split into shards give the same document, and bad input gets
one line."""
import copy
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
sys.path.insert(0, str(TOP / "tests" / "scripts"))
import expectations  # noqa: E402
import kcidb  # noqa: E402
import shards  # noqa: E402
from test_shards import NAMES, _run, _write  # noqa: E402  (the synthetic runs of the shard tests)

COMMIT = subprocess.run(["git", "-C", str(TOP), "rev-parse", "HEAD"], capture_output=True, text=True,
                        check=True).stdout.strip()


# ---- the schema's facts (KCIDB I/O v5.3) ---------------------------------------------

STATUSES = {"FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"}
ORIGIN = re.compile(r"[a-z0-9_]+")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
# kind -> (required fields, every field it may have)
FIELDS = {
    "checkouts": ({"id", "origin"},
                  {"id", "origin", "tree_name", "git_repository_url", "git_commit_hash", "git_commit_name",
                   "git_repository_branch", "patchset_hash", "patchset_files", "start_time", "message_id",
                   "comment", "log_url", "log_excerpt", "valid", "misc"}),
    "builds": ({"id", "origin", "checkout_id"},
               {"id", "origin", "checkout_id", "comment", "start_time", "duration", "architecture", "command",
                "compiler", "input_files", "output_files", "config_name", "config_url", "log_url",
                "log_excerpt", "status", "misc"}),
    "tests": ({"id", "origin", "build_id"},
              {"id", "origin", "build_id", "path", "comment", "log_url", "log_excerpt", "status", "number",
               "start_time", "duration", "environment", "input_files", "output_files", "misc"}),
}
STRINGS = {"id", "origin", "checkout_id", "build_id", "tree_name", "git_repository_url", "git_commit_name",
           "architecture", "config_name", "compiler", "comment", "log_excerpt", "path"}


def _field_problems(kind, obj):
    required, known = FIELDS[kind]
    where = f"{kind} {obj.get('id')!r}"
    problems = [f"{where}: no {f}" for f in sorted(required - set(obj))]
    problems += [f"{where}: unknown field {f}" for f in sorted(set(obj) - known)]
    problems += [f"{where}: {f} is not a string" for f in sorted(STRINGS & set(obj)) if not isinstance(obj[f], str)]
    if "misc" in obj and not isinstance(obj["misc"], dict):
        problems.append(f"{where}: misc is not an object")
    if "status" in obj and obj["status"] not in STATUSES:
        problems.append(f"{where}: status {obj['status']!r}")
    if "duration" in obj and (isinstance(obj["duration"], bool) or not isinstance(obj["duration"], (int, float))
                              or obj["duration"] < 0):
        problems.append(f"{where}: duration {obj['duration']!r}")
    if "start_time" in obj and not (isinstance(obj["start_time"], str) and RFC3339.fullmatch(obj["start_time"])):
        problems.append(f"{where}: start_time {obj['start_time']!r} is not RFC 3339")
    if "git_commit_hash" in obj and not re.fullmatch(r"[0-9a-f]{40}", str(obj["git_commit_hash"])):
        problems.append(f"{where}: git_commit_hash {obj['git_commit_hash']!r}")
    return problems


def _test_problems(obj):
    where = f"tests {obj.get('id')!r}"
    problems = []
    if "path" in obj and not re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*", str(obj["path"])):
        problems.append(f"{where}: path {obj['path']!r} is not dotted")
    env = obj.get("environment", {})
    if not isinstance(env, dict) or set(env) - {"comment", "compatible", "misc"}:
        problems.append(f"{where}: environment {env!r}")
    elif not isinstance(env.get("comment", ""), str) or not isinstance(env.get("misc", {}), dict):
        problems.append(f"{where}: environment's comment or misc of the wrong type")
    if len(obj.get("log_excerpt", "")) > kcidb.LOG_EXCERPT_MAX:
        problems.append(f"{where}: log_excerpt longer than {kcidb.LOG_EXCERPT_MAX}")
    return problems


def schema_problems(doc):
    """What in `doc` breaks KCIDB I/O v5.3, one line each; [] when nothing."""
    problems = []
    if doc.get("version") != {"major": 5, "minor": 3}:
        problems.append(f"version {doc.get('version')!r}")
    problems += [f"unknown top-level {k}" for k in sorted(set(doc) - {"version", *FIELDS})]
    ids = {}
    for kind in FIELDS:
        if not isinstance(doc.get(kind, []), list):
            problems.append(f"{kind} is not a list")
            continue
        for obj in doc.get(kind, []):
            problems += _field_problems(kind, obj) + (_test_problems(obj) if kind == "tests" else [])
            origin, oid = str(obj.get("origin")), str(obj.get("id"))
            if not ORIGIN.fullmatch(origin) or not oid.startswith(origin + ":"):
                problems.append(f"{kind} {oid!r}: id not prefixed by its origin {origin!r}")
            if oid in ids.setdefault(kind, set()):
                problems.append(f"{kind} {oid!r}: id twice")
            ids[kind].add(oid)
    links = (("builds", "checkout_id", "checkouts"), ("tests", "build_id", "builds"))
    for kind, field, target in links:
        problems += [f"{kind} {o.get('id')!r}: {field} {o.get(field)!r} names no {target[:-1]}"
                     for o in doc.get(kind, []) if o.get(field) not in ids.get(target, set())]
    return problems


# ---- helpers -------------------------------------------------------------------------

def _document(tmp_path, dirs, *extra, name="kcidb.json"):
    out = tmp_path / name
    assert kcidb.main([*map(str, dirs), "--out", str(out), "--commit", COMMIT, *extra]) == 0
    return json.loads(out.read_text())


def _whole(tmp_path, **kw):
    return _write(tmp_path / "whole", NAMES, NAMES, None, True, **kw)


def _shards(tmp_path, n, **kw):
    plan = shards.plan(NAMES, {"configs": {}, "builds": {}, "host": 0}, n)
    return [_write(tmp_path / f"n{n}" / shards.folder(k, n), NAMES, part, f"{k}/{n}", k == 1, **kw)
            for k, part in enumerate(plan, 1)], plan


def _rewrite_junit(folder, name, rows):
    (folder / "junit" / f"{name}.xml").write_text(expectations.junit_xml(name, rows))


def _by_path(doc, config):
    return {t["path"]: t for t in doc["tests"] if t["environment"]["comment"] == config}


# ---- the schema checker itself -------------------------------------------------------

def test_the_schema_checker_catches_each_break(tmp_path):
    good = _document(tmp_path, [_whole(tmp_path)])
    assert schema_problems(good) == []

    def broken(change):
        doc = copy.deepcopy(good)
        change(doc)
        return schema_problems(doc)
    assert broken(lambda d: d["tests"][0].update(status="OK"))
    assert broken(lambda d: d["tests"][0].pop("build_id"))
    assert broken(lambda d: d["builds"][0].pop("checkout_id"))
    assert broken(lambda d: d["checkouts"][0].pop("origin"))
    assert broken(lambda d: d["tests"][0].update(id="elsewhere:" + d["tests"][0]["id"]))
    assert broken(lambda d: d["tests"][1].update(id=d["tests"][0]["id"]))
    assert broken(lambda d: d["tests"][0].update(build_id=d["tests"][0]["build_id"] + "x"))
    assert broken(lambda d: d["builds"][0].update(checkout_id="aic100_virt:nothing"))
    assert broken(lambda d: d["tests"][0].update(duration="3"))
    assert broken(lambda d: d["tests"][0].update(start_time="2026-12-06 10:00"))
    assert broken(lambda d: d["tests"][0].update(path="qaic..boot"))
    assert broken(lambda d: d["tests"][0].update(environment={"configuration": "x"}))
    assert broken(lambda d: d["tests"][0].update(result="PASS"))
    assert broken(lambda d: d.update(version={"major": 4, "minor": 3}))


# ---- the document --------------------------------------------------------------------

def test_one_folder_gives_a_valid_document(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path)])
    assert schema_problems(doc) == []
    assert list(doc) == ["version", "checkouts", "builds", "tests"]
    assert len(doc["checkouts"]) == 1
    assert len(doc["tests"]) == len(NAMES) * len(_run(NAMES[0])[0])


def test_the_checkout_is_this_commit(tmp_path):
    checkout = _document(tmp_path, [_whole(tmp_path)])["checkouts"][0]
    assert checkout["id"] == f"aic100_virt:{COMMIT}"
    assert checkout["git_commit_hash"] == COMMIT and checkout["tree_name"] == "aic100-virt"
    assert checkout["misc"]["kernels"] == ["7.3"]
    assert checkout["misc"]["missing_configurations"] == []


def test_every_ktap_case_and_run_check_is_a_test(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path)])
    for name in NAMES:
        tests = _by_path(doc, name)
        expected = {f"qaic.{suite}.{case}" for suite, case, *_ in _run(name)[0]}
        assert set(tests) == expected
        assert {"qaic.boot.case0", "qaic.run.qemu_did_not_crash", "qaic.run.serial_log_clean"} <= set(tests)
        env = tests["qaic.boot.case0"]["environment"]
        assert env["comment"] == name
        assert env["misc"]["configuration"] == name and env["misc"]["kernel"] == "7.3"
        assert env["misc"]["driver"] == _run(name)[2][0]


def test_builds_are_one_per_kernel_and_driver(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path)])
    builds = {(b["misc"]["kernel"], b["misc"]["driver"]): b for b in doc["builds"]}
    assert set(builds) == {("7.3", "upstream"), ("7.3", "ours")}
    for build in builds.values():
        assert build["architecture"] == "x86_64" and build["config_name"] == "debian"
        assert build["checkout_id"] == doc["checkouts"][0]["id"]
    for test in doc["tests"]:
        driver = test["environment"]["misc"]["driver"]
        assert test["build_id"] == builds[("7.3", driver)]["id"]


def test_a_kernels_configuration_names_the_build(tmp_path):
    assert kcidb.config_name("7.3-debug") == "debug"
    assert kcidb.config_name("linux-next-plain") == "plain"
    assert kcidb.config_name("6.12") == kcidb.config_name("7.3") == "debian"


def test_outcomes_map_to_statuses(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path)])
    for name in NAMES:
        tests = _by_path(doc, name)
        for suite, case, verdict, _, _ in _run(name)[0]:
            want = {"pass": "PASS", "skip": "SKIP", "xfail": "SKIP"}[verdict]
            assert tests[f"qaic.{suite}.{case}"]["status"] == want, (name, case, verdict)
            if verdict == "xfail":
                assert tests[f"qaic.{suite}.{case}"]["misc"]["message"].startswith("expected failure")


def test_a_failed_case_is_fail_with_its_output(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path, failing={"cfg3"})])
    failed = [t for t in doc["tests"] if t["status"] == "FAIL"]
    assert [(t["environment"]["comment"], t["path"]) for t in failed] == [("cfg3", "qaic.run.serial_log_clean")]
    assert failed[0]["log_excerpt"] == "Oops"
    assert schema_problems(doc) == []


def test_a_case_the_guest_never_reported_is_miss(tmp_path):
    folder = _whole(tmp_path)
    rows = _run("cfg1")[0]
    rows[2] = (*rows[2][:2], "fail", "", f"boot case {rows[2][1]} {kcidb.NEVER_REPORTED} (exit 1):\n...")
    _rewrite_junit(folder, "cfg1", rows)
    tests = _by_path(_document(tmp_path, [folder]), "cfg1")
    assert tests[f"qaic.boot.{rows[2][1]}"]["status"] == "MISS"
    assert [t["status"] for t in tests.values()].count("MISS") == 1


def test_duration_and_start_time_come_from_the_junit(tmp_path):
    folder = _whole(tmp_path)
    xml = folder / "junit" / "cfg0.xml"
    root = ET.parse(xml).getroot()
    root.find("testsuite").set("timestamp", "2026-12-06T10:00:00+01:00")
    for i, testcase in enumerate(root.iter("testcase")):
        testcase.set("time", f"{i / 4:.2f}")
    xml.write_text(ET.tostring(root, encoding="unicode"))
    doc = _document(tmp_path, [folder])
    tests = _by_path(doc, "cfg0")
    assert tests["qaic.boot.case2"]["duration"] == 0.5
    assert tests["qaic.boot.case2"]["start_time"] == "2026-12-06T10:00:00+01:00"
    assert all("duration" not in t and "start_time" not in t for t in _by_path(doc, "cfg1").values())
    assert schema_problems(doc) == []


def test_a_naive_junit_timestamp_becomes_rfc3339():
    stamp = kcidb.rfc3339("2026-12-06T10:00:00")
    assert RFC3339.fullmatch(stamp)
    assert datetime.datetime.fromisoformat(stamp).replace(tzinfo=None) == datetime.datetime(2026, 12, 6, 10)
    assert kcidb.rfc3339("yesterday") is None and kcidb.rfc3339(None) is None


def test_a_known_configuration_carries_its_cards(tmp_path):
    import configs
    config = configs.CONFIGS[0]
    folder = _write(tmp_path / "real", [config.name], [], None, False)
    rows = [("boot", "online", "pass", "", "")]
    _rewrite_junit(folder, config.name, rows)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.update(ran=[config.name], info={config.name: {"kernel": config.kernel, "driver": config.driver,
                                                           "suites": ["boot"]}})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    misc = _document(tmp_path, [folder])["tests"][0]["environment"]["misc"]
    assert (misc["cards"], misc["msi"], misc["card_types"]) == (config.cards, config.msi, config.card_types)


# ---- ids -----------------------------------------------------------------------------

def test_ids_carry_the_origin_commit_and_configuration(tmp_path):
    doc = _document(tmp_path, [_whole(tmp_path)], "--origin", "lab_1")
    assert schema_problems(doc) == []
    for kind in ("checkouts", "builds", "tests"):
        assert all(o["id"].startswith(f"lab_1:{COMMIT}") and o["origin"] == "lab_1" for o in doc[kind])
    assert all(f":{t['environment']['comment']}:" in t["id"] for t in doc["tests"])


def test_a_run_id_tells_two_runs_of_one_commit_apart(tmp_path):
    folder = _whole(tmp_path)
    one = _document(tmp_path, [folder], "--run-id", "4711", name="a.json")
    two = _document(tmp_path, [folder], "--run-id", "4712", name="b.json")
    assert all(o["id"].startswith(f"aic100_virt:{COMMIT}:4711") for o in one["tests"] + one["builds"])
    assert not {t["id"] for t in one["tests"]} & {t["id"] for t in two["tests"]}


def test_the_same_run_gives_the_same_document(tmp_path):
    folder = _whole(tmp_path)
    assert _document(tmp_path, [folder], name="a.json") == _document(tmp_path, [folder], name="b.json")


def test_merged_shards_give_the_unsharded_document(tmp_path):
    whole = _document(tmp_path, [_whole(tmp_path)], name="whole.json")
    for n in (1, 2, 3, len(NAMES)):
        dirs, _ = _shards(tmp_path, n)
        merged = _document(tmp_path, reversed(dirs), name=f"n{n}.json")
        assert schema_problems(merged) == []
        assert merged == whole, f"N={n}"


def test_merged_shards_with_a_failure_give_the_unsharded_document(tmp_path):
    whole = _document(tmp_path, [_whole(tmp_path, failing={"cfg5"})], name="whole.json")
    dirs, _ = _shards(tmp_path, 3, failing={"cfg5"})
    assert _document(tmp_path, dirs, name="merged.json") == whole


def test_a_missing_shard_is_named_in_the_checkout(tmp_path):
    dirs, plan = _shards(tmp_path, 3)
    doc = _document(tmp_path, dirs[1:])
    assert doc["checkouts"][0]["misc"]["missing_configurations"] == plan[0]
    assert not {t["environment"]["comment"] for t in doc["tests"]} & set(plan[0])
    assert schema_problems(doc) == []


# ---- refusals ------------------------------------------------------------------------

@pytest.mark.parametrize("origin", ["", "Lab", "my-lab", "lab:1", "lab 1", "läb"])
def test_a_bad_origin_is_refused_with_one_line(tmp_path, capsys, origin):
    out = tmp_path / "kcidb.json"
    assert kcidb.main([str(_whole(tmp_path)), "--out", str(out), "--origin", origin]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"make kcidb: ORIGIN={origin!r}: ")
    assert not out.exists()


def test_a_missing_folder_is_refused_with_one_line(tmp_path, capsys):
    out = tmp_path / "kcidb.json"
    assert kcidb.main([str(tmp_path / "nothing"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no manifest.json" in err
    assert not out.exists()


def test_unreadable_junit_is_refused_with_one_line(tmp_path, capsys):
    folder = _whole(tmp_path)
    (folder / "junit" / "cfg2.xml").write_text("<testsuites><testsuite>")
    assert kcidb.main([str(folder), "--out", str(tmp_path / "kcidb.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_folders_of_two_tables_are_refused(tmp_path, capsys):
    a = _write(tmp_path / "a", NAMES, NAMES[:3], "1/2", True)
    b = _write(tmp_path / "b", NAMES[:-1], NAMES[3:-1], "2/2", False)
    assert kcidb.main([str(a), str(b), "--out", str(tmp_path / "kcidb.json")]) == 2
    assert "another configuration list" in capsys.readouterr().err


# ---- make kcidb ----------------------------------------------------------------------

def _make(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "ORIGIN")}
    return subprocess.run(["make", "--no-print-directory", "kcidb", *args], cwd=TOP, env=env,
                          capture_output=True, text=True)


def test_make_kcidb_writes_the_merged_shards(tmp_path):
    dirs, _ = _shards(tmp_path, 3)
    out = tmp_path / "out" / "kcidb.json"
    made = _make(f"DIRS={' '.join(map(str, dirs))}", f"OUT={out}", "ORIGIN=lab_x")
    assert made.returncode == 0, made.stderr
    doc = json.loads(out.read_text())
    assert schema_problems(doc) == [] and doc["checkouts"][0]["origin"] == "lab_x"
    assert len(doc["tests"]) == len(NAMES) * len(_run(NAMES[0])[0])


def test_make_kcidb_refuses_a_bad_origin(tmp_path):
    made = _make(f"DIRS={_whole(tmp_path)}", f"OUT={tmp_path / 'kcidb.json'}", "ORIGIN=Bad-Origin")
    assert made.returncode != 0
    assert "make kcidb: ORIGIN='Bad-Origin'" in made.stderr
