# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest kernels and the modules each one runs.

A kernel is named as scripts/vm-run --kernel names it: Debian's "6.12" or
"7.3" (by series), or the output folder of scripts/build-kernel (a kernel
built from a source tree: Debian's linux-source, or the user's KERNEL_TREE).
For each there is our driver built against it, upstream's qaic as that
kernel has it, upstream's with our patches (patches/linux), and the test
modules of tests/guest/kmod."""

import os
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AIC100_BUILD", TOP / "build"))


def built_kernel(source, config):
    """The folder scripts/build-kernel builds `source` (6.12, 7.3 or a tree)
    with `config` (plain, debug, kcsan) into; built or not."""
    out = subprocess.run([str(TOP / "scripts" / "build-kernel"), "--source", source, "--config", config,
                          "--print-dir"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def is_built(kernel):
    return "/" in kernel


def _read(kernel, name, default):
    path = Path(kernel) / name
    return path.read_text().strip() if path.exists() else default


def series(kernel):
    """The series whose expectations a kernel meets: a built 7.3 is a 7.3,
    and any tree newer than 6.12 is judged as 7.3 is."""
    if not is_built(kernel):
        return kernel
    version = _read(kernel, "series", "7.3")
    major, minor = (int(x) for x in version.split(".")[:2])
    return "6.12" if (major, minor) <= (6, 12) else "7.3"


def tag(kernel):
    """A short name for file names: the series, or the built kernel's folder."""
    return Path(kernel).name if is_built(kernel) else kernel


def label(kernel):
    """The matrix's kernel column: 7.3, or 7.3-debug for a built 7.3 with the
    debug configuration, or the tree's folder name and configuration."""
    if not is_built(kernel):
        return kernel
    name, config = tag(kernel).rsplit("-", 1)
    source = _read(kernel, "source", "")
    if name.startswith("linux-source-") and "/ksrc/" in source:
        return f"{_read(kernel, 'series', series(kernel))}-{config}"
    return f"{name}-{config}"


def detectors(kernel):
    """Whether the kernel runs the kernel's bug detectors (KASAN, lockdep,
    DMA-API debugging, UBSAN, kmemleak; or KCSAN)."""
    return is_built(kernel) and tag(kernel).rsplit("-", 1)[-1] in ("debug", "kcsan")


def release(kernel):
    return _read(kernel, "release", "(not built)")


def our_module(kernel):
    if kernel == "6.12":
        return TOP / "drivers" / "accel" / "qaic" / "qaic.ko"
    return BUILD / f"kernel-{tag(kernel)}" / "drivers" / "accel" / "qaic" / "qaic.ko"


def upstream_module(kernel):
    """Upstream's qaic as the kernel has it: Debian's built from its
    linux-source, a built kernel's from its own modules."""
    if is_built(kernel):
        return Path(kernel) / "root" / "lib" / "modules" / release(kernel) / "kernel" / "drivers" / "accel" / \
            "qaic" / "qaic.ko"
    return BUILD / ("upstream" if kernel == "6.12" else f"upstream-{kernel}") / "qaic.ko"


def upstream_patched_module(kernel):
    return BUILD / ("upstream-patched" if kernel == "6.12" else f"upstream-{tag(kernel)}-patched") / "qaic.ko"


def upstream_but_0007_module(kernel):
    """Upstream's with every patch but 0007 (whose bug only a driver with
    0005 reaches); for kernels after 6.12."""
    return BUILD / f"upstream-{tag(kernel)}-patched-but-0007" / "qaic.ko"


def test_module(kernel, name):
    """A test module of tests/guest/kmod built for the kernel."""
    if kernel == "6.12":
        return TOP / "tests" / "guest" / "kmod" / f"{name}.ko"
    return BUILD / f"kmod-{tag(kernel)}" / f"{name}.ko"


def carried_patches(kernel):
    """The numbers (0001, ...) of our upstream patches that a built kernel's
    tree already carries (scripts/build-upstream-qaic finds them)."""
    if not is_built(kernel):
        return set()
    path = BUILD / f"upstream-{tag(kernel)}-patched" / "carried"
    return {line[:4] for line in path.read_text().split()} if path.exists() else set()
