# SPDX-License-Identifier: GPL-2.0-or-later
"""ci/gitlab-ci.yml, the pipeline a kernel tree's fork includes: its N
shards each run a make test SHARD=K/N that make accepts, keep their
folder and JUnit, and the merge job hands make test-report and make kcidb
exactly the N shard folders. The jobs' scripts run here in bash as a
runner runs them, with `make` recording its arguments (or, once, the real
make over synthetic shards)."""
import fnmatch
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml", reason="python3-yaml (scripts/setup installs it)")

TOP = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
sys.path.insert(0, str(TOP / "tests" / "scripts"))
import shards  # noqa: E402
from test_kcidb import schema_problems  # noqa: E402
from test_shards import NAMES, _write  # noqa: E402

PIPELINE = TOP / "ci" / "gitlab-ci.yml"
SHARD_JOB, MERGE_JOB = "aic100-test", "aic100-report"
SEP = "\x1f"


@pytest.fixture(scope="module")
def pipeline():
    return yaml.safe_load(PIPELINE.read_text())


def _expand(value, env):
    """A variable's value as GitLab expands it ($VAR and ${VAR})."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), str(value))


def _job_env(pipeline, project, **overrides):
    ci = {"CI_PROJECT_DIR": str(project), "CI_PIPELINE_ID": "4711"}
    env = {**ci, **{k: _expand(v, ci) for k, v in pipeline["variables"].items()}, **overrides}
    return {**env, "AIC100_DIR": str(project / env["AIC100_DIR"])}


def run_job(pipeline, job, project, failing_target="", real_make=False, **overrides):
    """(the finished bash, [(cwd, make's arguments)]) of the job's script
    in one bash, errexit on, as a runner runs it; `make` only records its
    arguments (and fails for failing_target), unless real_make."""
    env = _job_env(pipeline, project, **overrides)
    pathlib.Path(env["AIC100_DIR"]).mkdir(parents=True, exist_ok=True)
    log = project / "make.log"
    log.unlink(missing_ok=True)
    shim = "" if real_make else (f'make() {{ {{ printf "%s{SEP}" "$PWD" "$@"; echo; }} >>"{log}"; '
                                 f'[ "$1" != "{failing_target}" ]; }}\n')
    script = "set -eo pipefail\n" + shim + "\n".join(pipeline[job]["script"]) + "\n"
    out = subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **env})
    calls = [tuple(line.split(SEP)[:-1]) for line in log.read_text().splitlines()] if log.exists() else []
    return out, [(c[0], list(c[1:])) for c in calls]


def _shard_count(pipeline):
    return int(pipeline["variables"]["AIC100_SHARDS"])


def _folders(n):
    return [f"build/results/{shards.folder(k, n)}" for k in range(1, n + 1)]


def _matches(globs, path, env):
    return any(fnmatch.fnmatch(path, _expand(g, env)) for g in globs)


# ---- the shards ------------------------------------------------------------------------

def test_the_shards_are_parallel_n_with_n_the_variable(pipeline):
    assert pipeline[SHARD_JOB]["parallel"] == _shard_count(pipeline) == 3


def test_the_kernel_tree_is_the_forks_checkout(pipeline):
    assert pipeline["variables"]["KERNEL_TREE"] == "$CI_PROJECT_DIR"


def test_each_shard_runs_make_test_with_its_shard_and_the_tree(pipeline, tmp_path):
    n = _shard_count(pipeline)
    for k in range(1, n + 1):
        out, calls = run_job(pipeline, SHARD_JOB, tmp_path, CI_NODE_INDEX=str(k), CI_NODE_TOTAL=str(n))
        assert out.returncode == 0, out.stdout + out.stderr
        assert calls == [(str(tmp_path / "aic100-virt"), ["test", f"SHARD={k}/{n}", f"KERNEL_TREE={tmp_path}"])]


def _make_dry_run(args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "AIC100_SHARD")}
    return subprocess.run(["make", "--no-print-directory", "-n", *args], cwd=TOP, env=env,
                          capture_output=True, text=True)


def test_make_accepts_each_shards_command(pipeline, tmp_path):
    n = _shard_count(pipeline)
    for k in range(1, n + 1):
        _, [(_, args)] = run_job(pipeline, SHARD_JOB, tmp_path, CI_NODE_INDEX=str(k), CI_NODE_TOTAL=str(n))
        made = _make_dry_run(args)
        assert made.returncode == 0, made.stderr
        assert "scripts/test" in made.stdout.split()


def test_make_would_refuse_a_shard_past_the_last(pipeline, tmp_path):
    """The check above can fail: the same command with K past N."""
    n = _shard_count(pipeline)
    _, [(_, args)] = run_job(pipeline, SHARD_JOB, tmp_path, CI_NODE_INDEX=str(n + 1), CI_NODE_TOTAL=str(n))
    made = _make_dry_run(args)
    assert made.returncode != 0 and "expected K/N with 1 <= K <= N" in made.stderr


def test_a_shard_refuses_a_parallel_other_than_the_variable(pipeline, tmp_path):
    out, calls = run_job(pipeline, SHARD_JOB, tmp_path, CI_NODE_INDEX="1", CI_NODE_TOTAL="4")
    assert out.returncode == 2 and not calls
    assert "set both" in out.stdout


def test_a_shard_keeps_its_folder_and_junit_even_when_it_failed(pipeline, tmp_path):
    env = _job_env(pipeline, pathlib.Path("."))
    env["AIC100_DIR"] = pipeline["variables"]["AIC100_DIR"]  # relative to $CI_PROJECT_DIR, as GitLab wants
    artifacts = pipeline[SHARD_JOB]["artifacts"]
    assert artifacts["when"] == "always"
    n = _shard_count(pipeline)
    for k in range(1, n + 1):
        folder = f"aic100-virt/build/results/{shards.folder(k, n)}"
        assert _matches(artifacts["paths"], folder + "/", env)
        assert _matches(artifacts["reports"]["junit"], f"{folder}/junit/1card-1msi-crc.xml", env)
        assert _matches(artifacts["reports"]["junit"], f"{folder}/host/unit.xml", env)
    assert not _matches(artifacts["reports"]["junit"], "aic100-virt/build/results/report/junit.xml", env)


# ---- the merge ---------------------------------------------------------------------------

def test_the_merge_job_waits_for_every_shard_and_runs_always(pipeline):
    job = pipeline[MERGE_JOB]
    assert [n if isinstance(n, str) else n["job"] for n in job["needs"]] == [SHARD_JOB]
    assert job["when"] == "always"
    assert "parallel" not in job


@pytest.mark.parametrize("n", [None, 5])
def test_the_merge_job_names_exactly_the_n_shard_folders(pipeline, tmp_path, n):
    overrides = {"AIC100_SHARDS": str(n)} if n else {}
    n = n or _shard_count(pipeline)
    out, calls = run_job(pipeline, MERGE_JOB, tmp_path, **overrides)
    assert out.returncode == 0, out.stderr
    assert [args[0] for _, args in calls] == ["test-report", "kcidb"]
    for _, args in calls:
        dirs = [a.removeprefix("DIRS=") for a in args if a.startswith("DIRS=")]
        assert len(dirs) == 1 and dirs[0].split() == _folders(n)
    kcidb_args = calls[1][1]
    assert "ORIGIN=aic100_virt" in kcidb_args and "RUN_ID=4711" in kcidb_args


def test_the_merge_job_writes_kcidb_when_the_report_fails(pipeline, tmp_path):
    out, calls = run_job(pipeline, MERGE_JOB, tmp_path, failing_target="test-report")
    assert [args[0] for _, args in calls] == ["test-report", "kcidb"]
    assert out.returncode == 1, "the report's status is the job's"


def test_the_merge_job_keeps_the_report_and_the_document(pipeline):
    artifacts = pipeline[MERGE_JOB]["artifacts"]
    env = {"AIC100_DIR": pipeline["variables"]["AIC100_DIR"]}
    assert artifacts["when"] == "always"
    for name in ("junit.xml", "matrix.txt", "expectations.diff", "kcidb.json"):
        assert _matches(artifacts["paths"], f"aic100-virt/build/results/report/{name}", env) or \
            _matches(artifacts["paths"], "aic100-virt/build/results/report/", env)


def test_the_merge_jobs_commands_merge_real_shards(pipeline, tmp_path):
    """The merge job's script with the real make, over N synthetic shard
    folders where the shards' artifacts land, in a copy of the Makefile
    and the harness (a complete report refreshes the copy's durations)."""
    checkout = tmp_path / "aic100-virt"
    (checkout / "tests").mkdir(parents=True)
    shutil.copy(TOP / "Makefile", checkout)
    shutil.copytree(TOP / "tests" / "harness", checkout / "tests" / "harness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    n = _shard_count(pipeline)
    plan = shards.plan(NAMES, {"configs": {}, "builds": {}, "host": 0}, n)
    for k, part in enumerate(plan, 1):
        _write(checkout / _folders(n)[k - 1], NAMES, part, f"{k}/{n}", k == 1)
    out, _ = run_job(pipeline, MERGE_JOB, tmp_path, real_make=True, KERNEL_TREE="")
    assert out.returncode == 0, out.stdout + out.stderr
    report = checkout / "build" / "results" / "report"
    assert f"{len(NAMES)} of {len(NAMES)} configurations" in (report / "matrix.txt").read_text()
    doc = json.loads((report / "kcidb.json").read_text())
    assert schema_problems(doc) == []
    assert {t["environment"]["comment"] for t in doc["tests"]} == set(NAMES)
    assert all(":4711:" in t["id"] for t in doc["tests"])
