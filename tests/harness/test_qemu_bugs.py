# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU's own bugs that our runs met, each forced by its reproducer against
the QEMU that set-up built (docs/qemu-bugs.md): a QEMU built without the
patch fails the case, one with it passes."""

import subprocess

from conftest import BUILD, TOP, sanitizer_report

# Both 30-second runs of 10.0.13 without patch 0004 failed (2026-12-07);
# 20 s keeps the host-side tests short and still gives tens of thousands
# of map changes inside the reader's runs of loads.
STALE_TLB_SECONDS = 20


def test_tcg_tlb_never_uses_a_stale_section_number_after_a_bar_unmaps():
    cmd = [str(TOP / "tests" / "scripts" / "qemu-stale-iotlb"), "--seconds", str(STALE_TLB_SECONDS),
           "--log", str(BUILD / "vm" / "serial-stale-iotlb.log")]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    report = sanitizer_report(run.stdout)
    assert report is None, report
    assert run.returncode == 0, f"exit {run.returncode} (1: another region's value read, 126: QEMU died)\n" \
        + run.stdout[-4000:]
