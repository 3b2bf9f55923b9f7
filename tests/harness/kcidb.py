# SPDX-License-Identifier: GPL-2.0-or-later
"""make kcidb DIRS="build/results/shard-1-of-3 ..." [ORIGIN=...] [OUT=...]:
a run's results folders (results.py; one folder, or the shards of one run
under make test-report's rules) as a KCIDB I/O schema v5.3 document, for a
lab to submit (docs/testing.md, "KCIDB"). Nothing is sent from here.

One checkout (this checkout's commit), one build per guest kernel and
driver, one test per KTAP case (path qaic.<suite>.<case>) and per check on
a guest's run as a whole (qaic.run.<check>). Every id starts "<origin>:"
and names the commit (and RUN_ID, when given), so the same run gives the
same ids, and the shards of a run the document the unsharded run gives.
Exits 2 with one line on a bad origin or unreadable input."""

import argparse
import dataclasses
import datetime
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import results

TOP = Path(__file__).resolve().parents[2]
SCHEMA_VERSION = {"major": 5, "minor": 3}
DEFAULT_ORIGIN = "aic100_virt"
ORIGIN = re.compile(r"[a-z0-9_]+")
TREE_NAME = "aic100-virt"
ARCHITECTURE = "x86_64"
# KCIDB keeps at most this many characters of a log excerpt.
LOG_EXCERPT_MAX = 16384
# What test_guest.py's test_ktap_case says of a case the guest never
# reported (its program died, or the guest before it).
NEVER_REPORTED = "missing from the guest's KTAP output"
STATUS = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}
# A kernel built from source is labelled <name>-<its configuration>
# (kernels.label); Debian's kernels by their series alone.
BUILT_CONFIGS = ("plain", "debug", "kcsan")


class KcidbError(ValueError):
    pass


# ---- the run: the folders merged as make test-report merges them ----------------

@dataclasses.dataclass
class Run:
    names: list  # the configurations with results, in the table's order
    info: dict  # name -> the manifest's info (kernel, driver, suites)
    suites: dict  # name -> its JUnit <testsuite> elements
    missing: list  # configurations of the table no folder has


def read_run(paths):
    """The folders' run. results.report applies make test-report's rules
    (one table, each configuration once) and raises on a bad set."""
    if not paths:
        raise KcidbError("no results folders given (DIRS=\"build/results/shard-1-of-3 ...\")")
    rep = results.report(paths)
    folders = [results.read_folder(p) for p in paths]
    table = folders[0].manifest["configs"]
    info, suites = {}, {}
    for folder in folders:
        for name in folder.manifest["ran"]:
            if folder.suites.get(name):
                info[name], suites[name] = folder.manifest["info"][name], folder.suites[name]
    # The host-side tests are the project's own, not the kernel's: not sent.
    return Run([n for n in table if n in info], info, suites, [m for m in rep.missing if m in table])


# ---- the checkout -----------------------------------------------------------------

def _git(*args):
    out = subprocess.run(["git", "-C", str(TOP), *args], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def _public_url(url):
    """A remote's URL without the user and password an https URL may carry."""
    return re.sub(r"^(https?://)[^/@]*@", r"\1", url)


def git_facts(commit=None):
    """{commit, url, name, time} of the commit (HEAD unless given); all
    from that commit, so a later commit elsewhere changes nothing."""
    commit = commit or _git("rev-parse", "HEAD")
    remotes = _git("remote").split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else "")
    return {"commit": commit,
            "url": _public_url(_git("remote", "get-url", remote)) if remote else "",
            "name": _git("describe", "--always", "--tags", commit) if commit else "",
            "time": _git("show", "-s", "--format=%cI", commit) if commit else ""}


def checkout(origin, run_key, git, run):
    obj = {"id": f"{origin}:{run_key}", "origin": origin, "tree_name": TREE_NAME}
    for field, fact in (("git_commit_hash", "commit"), ("git_repository_url", "url"), ("git_commit_name", "name")):
        if git[fact]:
            obj[field] = git[fact]
    kernels = list(dict.fromkeys(run.info[n]["kernel"] for n in run.names))
    # No start_time: KCIDB's is when the checkout was made, which a results
    # folder does not record (the commit's own time is in misc).
    obj["misc"] = {"kernels": kernels, "configurations": len(run.names), "missing_configurations": run.missing,
                   **({"commit_time": git["time"]} if git["time"] else {})}
    return obj


# ---- builds: one per guest kernel and driver ---------------------------------------

def config_name(kernel):
    """The kernel's configuration: plain, debug or kcsan for one built from
    source, Debian's own for Debian's kernels."""
    suffix = kernel.rsplit("-", 1)[-1]
    return suffix if "-" in kernel and suffix in BUILT_CONFIGS else "debian"


def build_key(info):
    return info["kernel"], info["driver"]


def builds(origin, run_key, run):
    """{(kernel, driver): build} in the table's order."""
    out = {}
    for name in run.names:
        info = run.info[name]
        key = build_key(info)
        if key not in out:
            kernel, driver = key
            misc = {"kernel": kernel, "driver": driver, "configurations": []}
            misc.update({k: info[k] for k in ("release", "series") if k in info})
            out[key] = {"id": f"{origin}:{run_key}:{kernel}:{driver}", "origin": origin,
                        "checkout_id": f"{origin}:{run_key}", "architecture": ARCHITECTURE,
                        "config_name": config_name(kernel), "status": "PASS", "misc": misc}
            if info.get("compiler"):
                out[key]["compiler"] = info["compiler"]
        out[key]["misc"]["configurations"].append(name)
    return out


# ---- tests: one per KTAP case and run check ----------------------------------------

def configuration_facts():
    """name -> {cards, msi, card_types} from the configuration table, when
    it can be read here (the merge job of a lab may have python3 alone)."""
    try:
        import configs
        return {c.name: {"cards": c.cards, "msi": c.msi, "card_types": c.card_types} for c in configs.CONFIGS}
    except Exception as e:  # noqa: BLE001 - the facts are optional; say why they are left out
        print(f"make kcidb: the configuration table is not readable here ({type(e).__name__}: {e}); "
              "environments without cards, msi and card types", file=sys.stderr)
        return {}


def environment(name, info, facts):
    misc = {"configuration": name, **facts.get(name, {}), "kernel": info["kernel"], "driver": info["driver"]}
    return {"comment": name, "misc": misc}


def rfc3339(timestamp):
    """A JUnit timestamp (ISO 8601, local time when it has no offset) in
    RFC 3339, or None."""
    try:
        when = datetime.datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return None
    return when.astimezone().isoformat() if when.tzinfo is None else when.isoformat()


def status_of(testcase):
    """KCIDB's status of a harness outcome. A case the guest never reported
    did not run: MISS, not FAIL; what stopped it fails the run checks
    (qaic.run.suite_complete, serial_log_clean), and counting it again as
    each of its cases would multiply one failure. ERROR is left for a
    failing CI system, which a results folder cannot tell."""
    outcome = results.case_outcome(testcase)
    failure = testcase.find("failure")
    if outcome == "failed" and failure is not None and NEVER_REPORTED in (failure.text or ""):
        return outcome, "MISS"
    return outcome, STATUS[outcome]


def _why(testcase):
    """(message, text) of the case's failure, error or skip, or None."""
    for tag in ("failure", "error", "skipped"):
        node = testcase.find(tag)
        if node is not None:
            return node.get("message") or "", node.text or ""
    return None


def path_of(suite, case):
    # A dot inside a name would add a level to KCIDB's dotted path; other
    # characters than these have no place in it either.
    return ".".join(("qaic", *(re.sub(r"[^A-Za-z0-9_-]", "_", part) for part in (suite, case))))


def test(origin, run_key, name, suite_node, testcase, build_id, env):
    suite = testcase.get("classname", "").rsplit(".", 1)[-1]
    case = testcase.get("name", "")
    outcome, status = status_of(testcase)
    obj = {"id": f"{origin}:{run_key}:{name}:{suite}.{case}", "origin": origin, "build_id": build_id,
           "path": path_of(suite, case), "status": status, "environment": env,
           "misc": {"outcome": outcome}}
    if testcase.get("time"):
        obj["duration"] = float(testcase.get("time"))
    start = rfc3339(testcase.get("timestamp") or suite_node.get("timestamp"))
    if start:
        obj["start_time"] = start
    why = _why(testcase)
    if why:
        obj["misc"]["message"] = why[0]
        if why[1]:
            obj["log_excerpt"] = why[1][-LOG_EXCERPT_MAX:]
    return obj


def tests(origin, run_key, run, build_ids):
    facts = configuration_facts()
    out, seen = [], {}
    for name in run.names:
        info = run.info[name]
        env = environment(name, info, facts)
        for suite_node in run.suites[name]:
            for testcase in suite_node.iter("testcase"):
                obj = test(origin, run_key, name, suite_node, testcase, build_ids[build_key(info)], env)
                # A name reported twice in one guest still gets ids of its own.
                seen[obj["id"]] = seen.get(obj["id"], 0) + 1
                if seen[obj["id"]] > 1:
                    obj["id"] += f"#{seen[obj['id']]}"
                out.append(obj)
    return out


# ---- the document ------------------------------------------------------------------

def check_origin(origin):
    if not ORIGIN.fullmatch(origin or ""):
        raise KcidbError(f"ORIGIN={origin!r}: a KCIDB origin is lower-case letters, digits and '_' "
                         f"([a-z0-9_]+), such as {DEFAULT_ORIGIN}")
    return origin


def document(paths, origin=DEFAULT_ORIGIN, commit=None, run_id=""):
    """The KCIDB document of the run in `paths` (results folders)."""
    check_origin(origin)
    run = read_run(paths)
    git = git_facts(commit)
    run_key = (git["commit"] or "unknown") + (f":{run_id}" if run_id else "")
    by_key = builds(origin, run_key, run)
    return {"version": dict(SCHEMA_VERSION), "checkouts": [checkout(origin, run_key, git, run)],
            "builds": list(by_key.values()),
            "tests": tests(origin, run_key, run, {k: b["id"] for k, b in by_key.items()})}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="make kcidb", description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="results folders")
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    ap.add_argument("--origin", default=DEFAULT_ORIGIN, help=f"the lab's KCIDB origin (default {DEFAULT_ORIGIN})")
    ap.add_argument("--commit", help="the checkout's commit (default: HEAD)")
    ap.add_argument("--run-id", default="", help="added to every id, to tell runs of one commit apart")
    args = ap.parse_args(argv)
    try:
        doc = document(args.dirs, args.origin, args.commit, args.run_id)
    except (OSError, ValueError, KeyError, ET.ParseError) as e:
        print(f"make kcidb: {e}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    missing = doc["checkouts"][0]["misc"]["missing_configurations"]
    print(f"make kcidb: {args.out}: 1 checkout, {len(doc['builds'])} builds, {len(doc['tests'])} tests"
          + (f"; {len(missing)} configurations missing: {' '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
