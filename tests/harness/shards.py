# SPDX-License-Identifier: GPL-2.0-or-later
"""make test SHARD=K/N: the guest configurations split into N shards.

A shard holds whole configurations (one guest each), never part of one.
The split is a greedy longest-first one over each configuration's measured
time (durations.json, refreshed by complete runs and merged reports). A
configuration that boots a kernel built from source also costs that
build in a shard that has not built it yet: the debug guests, each long,
spread over the shards when that ends sooner than one shard building the
kernel and running them all (each such shard then builds it; .ci/run's
two roots share one build). Shard 1 also runs the host-side tests (unit tests,
qtests, the QMP guests) and starts with their time. The same list and the
same durations file give the same shards on every machine.

  python3 tests/harness/shards.py check K/N        one line if K/N is bad
  python3 tests/harness/shards.py plan K/N         the shard's configurations
  python3 tests/harness/shards.py needs K/N        the built kernels it boots
  python3 tests/harness/shards.py host K/N         exit 0 if it runs the host tests
"""

import json
import re
import sys
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
SPEC = re.compile(r"([0-9]+)/([0-9]+)")
# A configuration no run has timed yet counts as the median of the others.
UNTIMED_S = 60
# A new measurement replaces the recorded one only when it differs by more
# than this share: the file changes when the matrix does, not with noise.
REFRESH_TOLERANCE = 0.25
HOST = "host"


class ShardError(ValueError):
    pass


def parse(spec, count):
    """(k, n) from "K/N", or ShardError with the one line to show."""
    m = SPEC.fullmatch(spec.strip())
    if not m:
        raise ShardError(f"SHARD={spec!r}: expected K/N, shard K of N, such as SHARD=2/3")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"SHARD={spec}: K must be between 1 and N (N at least 1)")
    if n > count:
        raise ShardError(f"SHARD={spec}: N must be at most {count}, the number of guest configurations")
    return k, n


def folder(k, n):
    return f"shard-{k}-of-{n}"


def load_durations(path=DURATIONS):
    """{"configs": {name: s}, "builds": {kernel build: s}, "host": s}."""
    data = json.loads(path.read_text()) if path.exists() else {}
    return {"configs": dict(data.get("configs", {})), "builds": dict(data.get("builds", {})),
            "host": data.get("host", 0)}


def _median(values, default):
    values = sorted(values)
    return values[len(values) // 2] if values else default


def plan(names, durations, n, needs=None):
    """The N shards of `names` (lists of names, each in the table's order).
    needs: name -> the builds it needs (keys of durations["builds"]); a
    configuration costs its time, plus those builds where its shard has
    not taken them on yet."""
    needs = needs or {}
    times = durations["configs"]
    untimed = _median([times[c] for c in names if c in times], UNTIMED_S)
    cost = {c: times.get(c, untimed) for c in names}
    loads, built, shards = [0.0] * n, [set() for _ in range(n)], [[] for _ in range(n)]
    loads[0] = durations.get("host", 0)

    def added(shard, name):
        return cost[name] + sum(durations["builds"].get(b, 0) for b in needs.get(name, ()) if b not in built[shard])

    for i in sorted(range(len(names)), key=lambda i: (-cost[names[i]], i)):
        name = names[i]
        shard = min(range(n), key=lambda s: (loads[s] + added(s, name), s))
        loads[shard] += added(shard, name)
        built[shard].update(needs.get(name, ()))
        shards[shard].append(i)
    return [[names[i] for i in sorted(s)] for s in shards]


def refresh(durations, measured, host=None, builds=None):
    """durations with the measured seconds (configurations, the host-side
    tests, kernel builds) taken in where they differ from the recorded ones
    by more than REFRESH_TOLERANCE."""
    def pick(old, new):
        return round(new) if not old or abs(new - old) > REFRESH_TOLERANCE * old else old

    def merged(old, new):
        out = dict(old)
        for name, seconds in new.items():
            out[name] = pick(out.get(name), seconds)
        return dict(sorted(out.items()))
    return {"configs": merged(durations["configs"], measured), "builds": merged(durations["builds"], builds or {}),
            "host": pick(durations["host"], host) if host is not None else durations["host"]}


def save_durations(durations, path=DURATIONS):
    path.write_text(json.dumps(durations, indent=1) + "\n")


def table():
    """(names, needs) of the configuration table as make test runs it here."""
    import configs
    import kernels
    names = [c.name for c in configs.CONFIGS]
    # A built kernel by its configuration: one source is built per run (the
    # debug 7.3, or the user's tree).
    needs = {c.name: ("kernel-" + Path(c.kernel).name.rsplit("-", 1)[-1],)
             for c in configs.CONFIGS if kernels.is_built(c.kernel)}
    return names, needs


def shard_of(spec):
    """(k, n, the shard's configuration names, needs) for SHARD=spec."""
    names, needs = table()
    k, n = parse(spec, len(names))
    return k, n, plan(names, load_durations(), n, needs)[k - 1], needs


def main(argv):
    if len(argv) != 3 or argv[1] not in ("check", "plan", "needs", "host"):
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    try:
        k, n, names, needs = shard_of(argv[2])
    except ShardError as e:
        print(f"make test: {e}", file=sys.stderr)
        return 2
    if argv[1] == "plan":
        print("\n".join(names))
    elif argv[1] == "needs":
        print("\n".join(sorted({b for c in names for b in needs.get(c, ())})))
    elif argv[1] == "host":
        return 0 if k == 1 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
