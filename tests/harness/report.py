# SPDX-License-Identifier: GPL-2.0-or-later
"""make test-report DIRS="build/results/shard-1-of-3 ...": one report over
the results folders of any set of runs (results.py): the matrix, the
host-side tests, the configurations no folder has, the expectations diff;
one JUnit file, the matrix and the diff written to --out. Exits 1 when a
configuration is missing or a case failed, 2 on unreadable input. A
complete report refreshes the committed durations (shards.py) unless
--no-durations."""

import argparse
import sys
from pathlib import Path

import results
import shards


def main(argv=None):
    ap = argparse.ArgumentParser(prog="make test-report", description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="results folders")
    ap.add_argument("--out", type=Path, required=True, help="where junit.xml, matrix.txt, expectations.diff go")
    ap.add_argument("--no-durations", action="store_true", help="leave tests/harness/durations.json alone")
    ap.add_argument("--quiet", action="store_true", help="print the last line alone")
    args = ap.parse_args(argv)
    try:
        rep = results.report(args.dirs)
    except (OSError, ValueError, KeyError) as e:
        print(f"make test-report: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "junit.xml").write_text(rep.junit)
    (args.out / "matrix.txt").write_text("\n".join(rep.lines) + "\n")
    (args.out / "expectations.diff").write_text(rep.diff)
    print("\n".join(rep.lines[-1:] if args.quiet else rep.lines))
    print(f"written: {args.out}/junit.xml, matrix.txt, expectations.diff")
    if not rep.missing and not args.no_durations:
        durations = shards.load_durations()
        shards.save_durations(shards.refresh(durations, {n: s for n, s in rep.seconds.items() if s},
                                             rep.host_seconds or None, rep.builds))
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
