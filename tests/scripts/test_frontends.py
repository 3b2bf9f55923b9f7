# SPDX-License-Identifier: GPL-2.0-or-later
"""tests/harness/frontends.py: each vfio-user row is judged case by case
against its in-QEMU twin, and the twin table names real twins."""
import pathlib
import subprocess
import sys

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
import configs  # noqa: E402
import results  # noqa: E402

ROW, TWIN = next(iter(configs.VFIO_USER_TWINS.items()))


def junit(config, cases):
    """cases: {suite.case: passed|failed|skipped}"""
    body = ""
    for case, verdict in cases.items():
        suite, name = case.split(".")
        inner = {"passed": "", "failed": "<failure message='x'/>", "skipped": "<skipped/>"}[verdict]
        body += f'<testcase name="{name}" classname="{config}.{suite}">{inner}</testcase>'
    return f'<testsuites><testsuite name="{config}">{body}</testsuite></testsuites>'


def folder(path, config, cases):
    manifest = {"shard": None, "configs": [config], "ran": [config], "host_checks": False, "tree_mode": False,
                "info": {}, "seconds": {}, "builds": {}}
    results.write_folder(path, manifest, {config: junit(config, cases)}, {}, {})
    return path


def run(qemu, vfio):
    out = subprocess.run([sys.executable, str(TOP / "tests" / "harness" / "frontends.py"), str(qemu), str(vfio)],
                         capture_output=True, text=True, timeout=60)
    return out.returncode, out.stdout


CASES = {"boot.cards_online": "passed", "data.partial_execute": "passed", "data.dmabuf_import": "skipped"}


def test_same_verdicts_are_the_same(tmp_path):
    rc, out = run(folder(tmp_path / "q", TWIN, CASES), folder(tmp_path / "v", ROW, CASES))
    assert f"{ROW} / {TWIN}: same, 3 cases" in out
    assert rc == 2  # the other pair was not run: named, not judged
    assert "not judged" in out


def test_a_verdict_that_differs_fails_and_is_named(tmp_path):
    vfio = dict(CASES, **{"data.partial_execute": "failed"})
    rc, out = run(folder(tmp_path / "q", TWIN, CASES), folder(tmp_path / "v", ROW, vfio))
    assert rc == 1
    assert "  data.partial_execute: in QEMU passed, behind vfio-user failed" in out


def test_a_case_one_side_lacks_is_a_difference(tmp_path):
    qemu = dict(CASES, **{"health.ssr_devcoredump": "passed"})
    rc, out = run(folder(tmp_path / "q", TWIN, qemu), folder(tmp_path / "v", ROW, CASES))
    assert rc == 1
    assert "  health.ssr_devcoredump: in QEMU passed, behind vfio-user absent" in out


def test_a_suite_the_row_does_not_run_is_left_out(tmp_path):
    qemu = dict(CASES, **{"status_padding.upstream_loaded": "passed"})
    assert "status_padding" not in next(c for c in configs.VFIO_USER_CONFIGS if c.name == ROW).suites()
    rc, out = run(folder(tmp_path / "q", TWIN, qemu), folder(tmp_path / "v", ROW, CASES))
    assert f"{ROW} / {TWIN}: same, 3 cases" in out


def test_an_unreadable_folder_is_one_line_and_status_2(tmp_path):
    rc, out = run(tmp_path / "none", tmp_path / "none2")
    assert rc == 2 and out.startswith("frontends: ")


def test_each_twin_is_an_in_qemu_row_of_the_same_guest():
    table = {c.name: c for c in configs.DEBIAN_CONFIGS}
    rows = {c.name: c for c in configs.VFIO_USER_CONFIGS}
    assert rows.keys() == configs.VFIO_USER_TWINS.keys()
    for row, twin in configs.VFIO_USER_TWINS.items():
        a, b = table[twin], rows[row]
        assert (a.kernel, a.driver, a.cards, a.msi, a.card_types) == (b.kernel, b.driver, b.cards, b.msi, b.card_types)
        assert set(b.suites()) <= set(a.suites()), (row, twin)
