# SPDX-License-Identifier: GPL-2.0-or-later
"""What scripts/lib.sh decides from the host's Debian release, and that
scripts/setup refuses any other host in one line before it installs
anything. The release comes from an os-release file of the test's own
(AIC100_OS_RELEASE); nothing of the host is read or changed."""
import os
import pathlib
import subprocess

import pytest

TOP = pathlib.Path(__file__).resolve().parents[2]

# What each release gets (docs/setup.md, "Debian 12 and Debian 13"): QEMU
# version and source suite, clang, the 6.12 build tag, the host gcc, and
# whether 7.3's modules need the Debian 13 root.
PROFILES = {
    "bookworm": dict(qemu="10.0.2", suite="bookworm-backports", clang="14", tag="deb12", gcc="gcc-12", root="yes"),
    "trixie": dict(qemu="10.0.13", suite="trixie", clang="19", tag="deb13", gcc="gcc-14", root="no"),
}

# Our QEMU patches each release's QEMU gets (docs/qemu-bugs.md): 10.0.2
# caches a dispatch per CPU (0001 holds its FlatView); 10.0.13 dropped that
# cache and with it the TLB's consistency (0004 puts both back).
QEMU_PATCHES = {
    "bookworm": ["0001", "0002", "0003"],
    "trixie": ["0002", "0003", "0004"],
}


def os_release(tmp_path, codename, pretty):
    path = tmp_path / "os-release"
    path.write_text(f'PRETTY_NAME="{pretty}"\nID=debian\nVERSION_CODENAME={codename}\n')
    return path


def lib(tmp_path, release_file, script):
    env = dict(os.environ, AIC100_OS_RELEASE=str(release_file), AIC100_CACHE=str(tmp_path / "cache"),
               AIC100_BUILD=str(tmp_path / "build"))
    return subprocess.run(["bash", "-c", f". {TOP}/scripts/lib.sh; {script}"], env=env, capture_output=True,
                          text=True)


@pytest.mark.parametrize("codename", sorted(PROFILES))
def test_each_release_gets_its_own_profile(tmp_path, codename):
    release = os_release(tmp_path, codename, f"Debian GNU/Linux ({codename})")
    res = lib(tmp_path, release, 'check_host_release; echo "$QEMU_VERSION $QEMU_SUITE $CLANG_VERSION $DEB_TAG '
              '$HOST_GCC $(kernel_needs_build_root 7.3 && echo yes || echo no)"')
    assert res.returncode == 0, res.stderr
    want = PROFILES[codename]
    assert res.stdout.split() == [want[k] for k in ("qemu", "suite", "clang", "tag", "gcc", "root")]


@pytest.mark.parametrize("codename", sorted(PROFILES))
def test_each_release_gets_its_own_qemu_patches(tmp_path, codename):
    """scripts/build-qemu --list-patches: the patches/qemu files that the
    release's QEMU gets, by their Needed-from-QEMU and Not-needed-from-QEMU
    trailers, and the reason for each one left out. No QEMU source needed."""
    release = os_release(tmp_path, codename, codename)
    env = dict(os.environ, AIC100_OS_RELEASE=str(release), AIC100_CACHE=str(tmp_path / "cache"),
               AIC100_BUILD=str(tmp_path / "build"))
    res = subprocess.run([str(TOP / "scripts" / "build-qemu"), "--list-patches"], env=env, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    applied = [line.split()[1][:4] for line in lines if line.startswith("apply ")]
    skipped = [line for line in lines if line.startswith("skip ")]
    assert applied == QEMU_PATCHES[codename]
    assert len(applied) + len(skipped) == len(list((TOP / "patches" / "qemu").glob("*.patch")))
    for line in skipped:
        assert f"(QEMU {PROFILES[codename]['qemu']}): " in line and not line.endswith(": "), line
    assert not (tmp_path / "cache").exists()


def test_6_12_modules_never_need_the_debian_13_root(tmp_path):
    for codename in PROFILES:
        release = os_release(tmp_path, codename, codename)
        assert lib(tmp_path, release, "! kernel_needs_build_root 6.12").returncode == 0


def test_setup_refuses_another_system_in_one_line_before_installing(tmp_path):
    release = os_release(tmp_path, "noble", "Ubuntu 24.04.1 LTS")
    sources = pathlib.Path("/etc/apt/sources.list.d/aic100-virt.sources")
    before = sources.stat().st_mtime_ns if sources.exists() else None
    env = dict(os.environ, AIC100_OS_RELEASE=str(release), AIC100_CACHE=str(tmp_path / "cache"),
               AIC100_BUILD=str(tmp_path / "build"))
    res = subprocess.run([str(TOP / "scripts" / "setup")], env=env, capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.splitlines() == [
        "[setup] error: this host is Ubuntu 24.04.1 LTS: aic100-virt supports "
        "Debian 12 (bookworm) and Debian 13 (trixie)"]
    assert (sources.stat().st_mtime_ns if sources.exists() else None) == before
    assert not (tmp_path / "cache").exists()


def test_fresh_root_refuses_on_another_system(tmp_path):
    release = os_release(tmp_path, "noble", "Ubuntu 24.04.1 LTS")
    env = dict(os.environ, AIC100_OS_RELEASE=str(release), AIC100_CACHE=str(tmp_path / "cache"),
               AIC100_BUILD=str(tmp_path / "build"))
    res = subprocess.run([str(TOP / "scripts" / "fresh-root"), "--", "true"], env=env, capture_output=True,
                         text=True)
    assert res.returncode == 1
    assert "aic100-virt supports Debian 12 (bookworm) and Debian 13 (trixie)" in res.stderr
