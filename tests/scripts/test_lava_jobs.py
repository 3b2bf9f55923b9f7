# SPDX-License-Identifier: GPL-2.0-or-later
"""make lava-jobs (tests/harness/lava.py): a job per configuration of the
table, its QEMU and kernel arguments those of scripts/vm-run, a guest that
reads KTAP as the harness does, and an initramfs that needs nothing of the
host at run time. LAVA's own validation of the jobs (scripts/lava-validate)
runs in scripts/test after the guests."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "tests" / "harness"))
import configs  # noqa: E402
import cpio  # noqa: E402
import ktap  # noqa: E402
import lava  # noqa: E402
import shards  # noqa: E402

LAVA_INIT = TOP / "scripts" / "guest" / "lava-init"
KTAP_SAMPLE = """KTAP version 1
1..4
ok 1 plain
not ok 2 broken
    # broken: what went wrong
ok 3 skipped_one # SKIP no card
ok 4 todo_one # TODO later
# Totals: pass:3 fail:1
# suite: nnc
KTAP version 1
ok 1 first
not ok 2 skipped_failure # SKIP unsupported
ok 3 not_a_directive # SKIPPED
ok 4 colon # SKIP: why
"""


def guest_case_lines(text):
    """What the LAVA guest prints for a guest output: its own function,
    run by busybox's awk as in the initramfs."""
    body = re.search(r"^lava_case_lines\(\) \{\n.*?^\}\n", LAVA_INIT.read_text(), re.S | re.M).group(0)
    bindir = Path(os.environ.get("TMPDIR", "/tmp")) / f"lava-awk-{os.getpid()}"
    bindir.mkdir(exist_ok=True)
    (bindir / "awk").unlink(missing_ok=True)
    (bindir / "awk").symlink_to("/bin/busybox")
    out = subprocess.run(["bash", "-c", body + "lava_case_lines"], input=text, capture_output=True, text=True,
                         check=True, env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})
    return out.stdout


def test_the_guest_reads_each_case_as_the_harness_does():
    lines = guest_case_lines(KTAP_SAMPLE)
    seen = dict(m.groups() for m in re.finditer(lava.CASE_PATTERN, lines))
    assert seen == ktap.verdicts(KTAP_SAMPLE)
    assert seen["boot.skipped_one"] == "skip" and seen["nnc.skipped_failure"] == "skip"
    assert seen["boot.broken"] == "fail" and "nnc.not_a_directive" not in seen


def test_the_guest_passes_its_output_through_whole():
    lines = guest_case_lines(KTAP_SAMPLE).splitlines()
    assert [line for line in lines if not line.startswith("aic100-case: ")] == KTAP_SAMPLE.splitlines()


@pytest.fixture(scope="module")
def jobs():
    durations = shards.load_durations()
    return {c.name: (c, lava.job(c, "http://lab.example/aic100", lava.test_minutes(c, durations)))
            for c in configs.CONFIGS}


def test_every_configuration_has_a_job(jobs):
    assert list(jobs) == [c.name for c in configs.CONFIGS]
    for name, (config, job) in jobs.items():
        assert job["device_type"] == "qemu" and job["context"]["arch"] == "amd64"
        deploy, boot, test = (next(iter(a.values())) for a in job["actions"])
        assert deploy["to"] == "tmpfs" and boot == {"timeout": boot["timeout"], "method": "qemu", "media": "tmpfs"}
        assert re.search(rf'aic_config={re.escape(name)}[ "]', deploy["images"]["kernel"]["image_arg"])
        tag = deploy["images"]["initrd"]["url"].split("/")[-2]
        assert deploy["images"]["kernel"]["url"].endswith(f"/{tag}/bzImage")
        assert test["monitors"][0]["start"] == lava.SUITES_BEGIN


def test_a_job_boots_the_machine_vm_run_boots(jobs):
    for config, job in jobs.values():
        options = job["context"]["extra_options"]
        cards = [o.split()[1] for o in options if o.startswith("-device ")]
        assert len([c for c in cards if c.startswith("pcie-root-port,")]) == config.cards
        models = [c.split(",")[0] for c in cards if not c.startswith(("pcie-root-port", "intel-iommu"))]
        types = config.card_types.split(",")
        assert models == [types[i % len(types)] for i in range(config.cards)]
        iommu = "-device intel-iommu,intremap=on" in options
        assert iommu == (config.msi == 32)
        assert ("intel_iommu=on" in job["actions"][0]["deploy"]["images"]["kernel"]["image_arg"]) == iommu
        assert all(f",{o}" in c for o in filter(None, config.card_opts.split(",")) for c in cards if
                   c.startswith(("aic100,", "aic200,")))


def test_the_test_action_outlasts_the_measured_run(jobs):
    durations = shards.load_durations()["configs"]
    for name, (config, job) in jobs.items():
        minutes = job["actions"][2]["test"]["timeout"]["minutes"]
        assert minutes * 60 >= lava.TIMEOUT_FACTOR * durations.get(name, shards.UNTIMED_S)
        assert job["timeouts"]["job"]["minutes"] > minutes


def test_a_job_is_plain_yaml(jobs):
    config, job = jobs["1card-1msi-polling"]
    assert yaml.safe_load(yaml.safe_dump(job)) == job


def test_a_guest_script_names_no_host_path():
    for config in configs.CONFIGS:
        text = lava.config_script(config)
        assert re.search(r"^aic_module=(none|('?)/aic100/host/.+\.ko\2)$", text, re.M), text
        for path in lava.host_files(config):
            assert str(path) in text or path == configs.NETWORKS or path.suffix == ".ko"


def test_a_guest_loads_the_driver_the_harness_loads():
    """Upstream's qaic is loaded before the suites even where the boot
    suite does not run (the health suite alone, the hostile DMA), as
    scripts/vm-run loads it under the harness."""
    for config in configs.CONFIGS:
        module = re.search(r"^aic_module=(.*)$", lava.config_script(config), re.M).group(1).strip("'")
        if config.upstream:
            wanted = config.module or configs.kernels.upstream_module(config.kernel)
            assert module == lava.guest_path(wanted), config.name
        elif not config.boot:
            assert module == "none", config.name
        else:
            assert module == lava.guest_path(configs.kernels.our_module(config.kernel)), config.name


def test_an_unknown_configuration_is_refused():
    out = subprocess.run([sys.executable, str(TOP / "tests" / "harness" / "lava.py"), "jobs", "no-such-config"],
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1].startswith("make lava-jobs: no configuration no-such-config")


def list_archive(path):
    out = subprocess.run(f"zcat {path} | cpio -tv --quiet", shell=True, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_an_initramfs_is_the_same_bytes_each_time(tmp_path):
    def make(out):
        tree = cpio.Tree()
        tree.add_bytes("/a/b/file", b"hello")
        tree.add_symlink("/usr/sbin/insmod", "/bin/kmod")
        tree.add_node("/dev/console", 5, 1)
        tree.add_tree("/fw", TOP / "scripts" / "guest")
        tree.write(out)
        return out.read_bytes()
    assert make(tmp_path / "one.gz") == make(tmp_path / "two.gz")
    listing = list_archive(tmp_path / "one.gz")
    assert any(line.startswith("crw-------") and line.endswith(" dev/console") for line in listing)
    assert any(line.startswith("lrwxrwxrwx") and line.endswith("usr/sbin/insmod -> /bin/kmod") for line in listing)
    assert any(line.endswith(" fw/lava-init") and line.startswith("-rwxr-xr-x") for line in listing)
    assert any(line.startswith("d") and line.endswith(" a/b") for line in listing)
