#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The card's two front ends held side by side: each vfio-user row's
verdicts (make test-vfio-user's results) against its in-QEMU twin's (a
make test's), case by case (docs/vfio-user.md, "The harness rows").

  python3 tests/harness/frontends.py [QEMU_RESULTS [VFIO_USER_RESULTS]]

defaults build/results and build/results/vfio-user. Prints, per pair,
"same" with the number of cases, or each case whose verdict differs and
each case one of them lacks. Exit 0 when every pair agrees, 1 when a pair
differs, 2 when a folder is unreadable or holds neither row of a pair
(a twin not run is named, not judged)."""

import sys
from pathlib import Path

import configs
import results


def compare_pair(qemu, vfio, twin, row):
    """Lines saying how `row` (vfio-user) differs from `twin` (in QEMU), in
    the suites the row runs (a twin may run reproducers besides)."""
    suites = set(next(c for c in configs.VFIO_USER_CONFIGS if c.name == row).suites()) | {"run"}
    a = {case: v for case, v in results.case_outcomes(qemu.suites[twin]).items() if case.split(".")[0] in suites}
    b = results.case_outcomes(vfio.suites[row])
    lines = []
    for case in sorted(a.keys() | b.keys()):
        va, vb = a.get(case, "absent"), b.get(case, "absent")
        if va != vb:
            lines.append(f"  {case}: in QEMU {va}, behind vfio-user {vb}")
    return lines, len(a.keys() & b.keys())


def main(argv):
    qemu_dir = Path(argv[1]) if len(argv) > 1 else configs.BUILD / "results"
    vfio_dir = Path(argv[2]) if len(argv) > 2 else configs.BUILD / "results" / "vfio-user"
    try:
        qemu, vfio = results.read_folder(qemu_dir), results.read_folder(vfio_dir)
    except (OSError, ValueError) as e:
        print(f"frontends: {e}")
        return 2
    differ = unjudged = False
    for row, twin in configs.VFIO_USER_TWINS.items():
        absent = [f"{name} in {folder.path}" for name, folder in ((twin, qemu), (row, vfio))
                  if name not in folder.suites]
        if absent:
            print(f"{row} / {twin}: not judged, no results for {' and '.join(absent)}")
            unjudged = True
            continue
        lines, common = compare_pair(qemu, vfio, twin, row)
        print(f"{row} / {twin}: " + (f"{len(lines)} differ" if lines else f"same, {common} cases"))
        for line in lines:
            print(line)
        differ = differ or bool(lines)
    return 1 if differ else 2 if unjudged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
