# SPDX-License-Identifier: GPL-2.0-or-later
"""The pieces of make test KERNEL_TREE=DIR that need no kernel build: the
DRM CI style expectations, the JUnit files, the naming of built kernels and
scripts/build-kernel's refusals."""
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
import expectations  # noqa: E402
import kernels  # noqa: E402


@pytest.fixture
def lists(tmp_path):
    (tmp_path / "upstream-7.3-fails.txt").write_text(
        "# known\nclose_after_unbind:upstream_close_after_unbind,use after free (0005)\n")
    (tmp_path / "upstream-7.3-flakes.txt").write_text("data:pipelined,slow host\n")
    (tmp_path / "upstream-7.3-skips.txt").write_text("health:ssr_crash_loop,takes too long  # comment\n")
    return expectations.Expectations.load("upstream", "7.3", tmp_path)


def test_a_listed_failure_that_fails_is_expected(lists):
    assert lists.judge("close_after_unbind:upstream_close_after_unbind", False) == ("xfail", "use after free (0005)")


def test_a_listed_failure_that_passes_is_reported(lists):
    assert lists.judge("close_after_unbind:upstream_close_after_unbind", True)[0] == "xpass"


def test_an_unlisted_failure_is_red(lists):
    assert lists.judge("nnc:card_online", False) == ("fail", "")
    assert lists.judge("nnc:card_online", True) == ("pass", "")


def test_flakes_pass_either_way_and_skips_are_not_judged(lists):
    assert lists.judge("data:pipelined", False)[0] == "flake"
    assert lists.judge("data:pipelined", True)[0] == "flake"
    assert lists.judge("health:ssr_crash_loop", False) == ("skip", "takes too long")


def test_a_line_without_a_reason_is_refused(tmp_path):
    (tmp_path / "ours-7.3-fails.txt").write_text("nnc:card_online\n")
    with pytest.raises(ValueError, match=r"ours-7.3-fails.txt:1"):
        expectations.Expectations.load("ours", "7.3", tmp_path)


def test_missing_lists_expect_everything_to_pass(tmp_path):
    e = expectations.Expectations.load("ours", "6.12", tmp_path)
    assert e.judge("boot:cards_online", False) == ("fail", "")


def test_junit_counts_failures_and_skips():
    xml = expectations.junit_xml("tree-2cards", [
        ("boot", "a", "pass", "", ""), ("boot", "b", "fail", "", "diag"),
        ("nnc", "c", "xfail", "known", ""), ("nnc", "d", "xpass", "known", ""), ("run", "e", "skip", "why", "")])
    suite = ET.fromstring(xml).find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == \
        ("tree-2cards", "5", "2", "2")
    assert suite.find("testcase[@name='b']/failure").text == "diag"
    assert suite.find("testcase[@name='a']").get("classname") == "tree-2cards.boot"


def test_seen_lists_hold_what_failed():
    text = expectations.seen_lists({("upstream", "7.3"): [("nnc:a", "pass", ""), ("nnc:b", "fail", ""),
                                                          ("nnc:c", "xfail", "known")]})[("upstream", "7.3")]
    assert text.splitlines()[1:] == ["nnc:b,new in this run: say why", "nnc:c,known"]


@pytest.fixture
def built(tmp_path):
    k = tmp_path / "linux-next-1a2b3c4d-debug"
    k.mkdir()
    (k / "release").write_text("7.4.0-rc1-aic100-debug\n")
    (k / "series").write_text("7.4\n")
    (k / "source").write_text("/src/linux-next\n")
    return str(k)


def test_a_built_kernel_is_named_by_its_tree_and_configuration(built):
    assert kernels.is_built(built) and not kernels.is_built("7.3")
    assert kernels.label(built) == "linux-next-1a2b3c4d-debug"
    assert kernels.series(built) == "7.3"  # newer than 6.12: judged as 7.3
    assert kernels.detectors(built) and not kernels.detectors("7.3")


def test_a_built_kernels_modules_are_its_own(built):
    assert kernels.upstream_module(built) == pathlib.Path(built) / \
        "root/lib/modules/7.4.0-rc1-aic100-debug/kernel/drivers/accel/qaic/qaic.ko"
    assert kernels.our_module(built).parts[-5] == "kernel-linux-next-1a2b3c4d-debug"
    assert kernels.test_module(built, "qaic_exec_gate").parent.name == "kmod-linux-next-1a2b3c4d-debug"
    assert kernels.test_module("6.12", "qaic_exec_gate") == TOP / "tests/guest/kmod/qaic_exec_gate.ko"


def build_kernel(*args):
    env = dict(os.environ, AIC100_CACHE=os.environ.get("AIC100_CACHE", str(pathlib.Path.home() / ".cache/aic100-virt")))
    return subprocess.run([str(TOP / "scripts" / "build-kernel"), *args], capture_output=True, text=True, env=env)


def test_build_kernel_refuses_an_unknown_configuration():
    r = build_kernel("--config", "fast")
    assert r.returncode != 0 and "--config fast: plain, debug or kcsan" in r.stderr


def test_build_kernel_refuses_a_folder_that_is_no_linux_tree(tmp_path):
    r = build_kernel("--source", str(tmp_path))
    assert r.returncode != 0 and "not a Linux source tree" in r.stderr


def test_build_kernel_names_its_output_by_tree_and_configuration():
    r = build_kernel("--source", "7.3", "--config", "debug", "--print-dir")
    assert r.returncode == 0, r.stderr
    assert pathlib.Path(r.stdout.strip()).name.startswith("linux-source-7.3-")
    assert r.stdout.strip().endswith("-debug")


@pytest.fixture
def tree_and_patch(tmp_path):
    tree = tmp_path / "linux"
    (tree / "drivers").mkdir(parents=True)
    (tree / "drivers" / "a.c").write_text("one\ntwo\nthree\n")
    patch = tmp_path / "0001-fix.patch"
    patch.write_text("--- a/drivers/a.c\n+++ b/drivers/a.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")
    return tree, patch


def patch_state(tree, patch):
    r = subprocess.run(["bash", "-c", f". {TOP}/scripts/lib.sh && patch_state \"$1\" \"$2\"", "x",
                        str(tree), str(patch)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_patch_missing_from_the_tree_applies(tree_and_patch):
    assert patch_state(*tree_and_patch) == "applies"


def test_a_patch_already_in_the_tree_is_carried(tree_and_patch):
    tree, patch = tree_and_patch
    (tree / "drivers" / "a.c").write_text("one\nTWO\nthree\n")
    assert patch_state(tree, patch) == "carried"


def test_a_patch_that_fits_neither_way_conflicts(tree_and_patch):
    tree, patch = tree_and_patch
    (tree / "drivers" / "a.c").write_text("one\n2\nthree\n")
    assert patch_state(tree, patch) == "conflicts"
