# SPDX-License-Identifier: GPL-2.0-or-later
"""make lava-jobs: the guest configurations as LAVA jobs, from the table the
harness runs (configs.py), for a kernel test lab (docs/lab.md).

  python3 tests/harness/lava.py jobs [--out DIR] [--artifacts URL] [CONFIG...]

writes, for every configuration (or those named):

  DIR/jobs/NAME.yaml              a job: device_type qemu, our QEMU's
                                  machine and cards in context, a tmpfs
                                  deploy of the kernel and initramfs, a
                                  boot without a shell, and a test action
                                  whose monitor takes each KTAP case
  DIR/artifacts/KERNEL/bzImage    the guest kernel, and an initramfs that
  DIR/artifacts/KERNEL/initramfs.cpio.gz
                                  holds everything the configurations of
                                  that kernel run: the test programs and
                                  their libraries, the modules, firmware,
                                  and one script per configuration

The jobs fetch the artifacts from URL (default $LAVA_ARTIFACTS, else
file://DIR/artifacts): a lab publishes DIR/artifacts there. Nothing of the
submitting host is used at run time: no 9p share, unlike scripts/vm-run.
"""

import argparse
import os
import re
import shutil
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

import configs
import cpio
import kernels
import shards

TOP = configs.TOP
BUILD = configs.BUILD
# Where the host's files go in the guest: their host path under this.
HOST_PREFIX = "/aic100/host"
FIRMWARE = BUILD / "firmware" / "qcom"
# The guest's own tools besides the test programs: bash for the scripts,
# kmod's module tools (the programs call insmod, rmmod and modprobe),
# busybox for the rest (it links itself in at boot).
TOOLS = ("/bin/bash", "/bin/kmod")
KMOD_LINKS = ("modprobe", "insmod", "rmmod", "lsmod", "modinfo", "depmod")
# The kernel modules every configuration may ask for by name.
NAMED_MODULES = ("drm", "mhi", "vgem")
# What LAVA's monitor matches (scripts/guest/lava-init prints them).
SUITES_BEGIN = "aic100-lava: suites begin"
SUITES_END = "aic100-lava: suites end"
CASE_PATTERN = r"aic100-case: (?P<test_case_id>[A-Za-z0-9_.-]+) (?P<result>pass|fail|skip)"


def guest_path(host_path):
    return HOST_PREFIX + str(Path(host_path).resolve())


def lib_sh(*lines):
    """What scripts/lib.sh says, as lines: the guest's QEMU and kernel
    arguments have one home, which scripts/vm-run reads too."""
    out = subprocess.run(["bash", "-c", f'. "{TOP}/scripts/lib.sh" && {"; ".join(lines)}'],
                         capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def host_files(config):
    """The host files the configuration's guest reads: its programs, the
    modules they load, the networks."""
    files = set()
    for command in configs.suite_commands(config):
        files.update(Path(p) for p in (command.program, *command.needs))
    if module := configs.boot_module(config):
        files.add(module)
    if config.networks:
        files.add(configs.NETWORKS)
    return files


def config_script(config):
    """/aic100/configs/NAME.sh, sourced by scripts/guest/lava-init: the
    driver to load at boot, its parameters, the suites' shell text."""
    module = configs.boot_module(config)
    text = configs.suite_script(config, guest_path)
    for path in (str(TOP), str(BUILD)):
        left = re.search(f"(?<!{re.escape(HOST_PREFIX)}){re.escape(path)}", text)
        assert not left, f"{config.name}: a host path the guest would not find in: {text}"
    return (f"aic_module={shlex.quote(guest_path(module)) if module else 'none'}\n"
            f"aic_module_args={shlex.quote(config.module_args)}\n"
            f"aic_suites={shlex.quote(text)}\n")


# ---- the initramfs of one kernel ---------------------------------------------------

def kernel_facts(kernel):
    """(release, modules root, image) of a guest kernel."""
    release, root, image = lib_sh(f"kernel_release {shlex.quote(kernel)}", f"kernel_root {shlex.quote(kernel)}",
                                  f"kernel_image {shlex.quote(kernel)}")
    return release, Path(root), Path(image)


def shared_libraries(elf):
    """The libraries and loader an ELF program needs, as ldd finds them."""
    out = subprocess.run(["ldd", str(elf)], capture_output=True, text=True)
    if out.returncode != 0:  # static
        return []
    libs = []
    for line in out.stdout.splitlines():
        words = line.split()
        if "=>" in words and len(words) > 2 and words[2].startswith("/"):
            libs.append(words[2])
        elif words and words[0].startswith("/"):
            libs.append(words[0])
    return libs


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def module_dependencies(root, release, names, module_files):
    """The guest kernel's modules (paths under root) that `names`, and the
    modules among module_files, need: modprobe's own answer."""
    for ko in module_files:
        depends = subprocess.run(["modinfo", "-F", "depends", str(ko)], capture_output=True, text=True,
                                 check=True).stdout.strip()
        names = [*names, *(d for d in depends.split(",") if d)]
    found = []
    for name in dict.fromkeys(names):
        out = subprocess.run(["modprobe", "-d", str(root), "-S", release, "--show-depends", name],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"make lava-jobs: the {release} kernel has no module {name}: {out.stderr.strip()}")
        found += [line.split()[1] for line in out.stdout.splitlines() if line.startswith("insmod ")]
    return list(dict.fromkeys(found))


def initramfs_tree(kernel, chosen):
    """{guest path: entry} of the kernel's initramfs (cpio.py's entries)."""
    release, root, _ = kernel_facts(kernel)
    tree = cpio.Tree()
    tree.add_file("/init", TOP / "scripts" / "guest" / "lava-init", mode=0o755)
    tree.add_file("/aic100/guest-lib.sh", TOP / "scripts" / "guest" / "lib.sh")
    tree.add_file("/bin/busybox", "/bin/busybox", mode=0o755)
    tree.add_node("/dev/console", 5, 1)
    for d in ("/proc", "/sys", "/dev", "/tmp", "/root", "/lib/firmware"):
        tree.add_dir(d)
    files = set().union(*(host_files(c) for c in chosen))
    for path in sorted(files):
        tree.add_tree(guest_path(path), path)
    for config in chosen:
        tree.add_bytes(f"/aic100/configs/{config.name}.sh", config_script(config).encode())
    for family in sorted(p.name for p in FIRMWARE.iterdir()):
        tree.add_tree(f"/lib/firmware/qcom/{family}", FIRMWARE / family)
    programs = [p for f in files for p in ([f] if f.is_file() else f.rglob("*")) if p.is_file() and is_elf(p)
                and p.suffix != ".ko"]
    for tool in TOOLS:
        tree.add_file(tool, tool, mode=0o755)
    for name in KMOD_LINKS:
        tree.add_symlink(f"/usr/sbin/{name}", "/bin/kmod")
    for lib in sorted({lib for p in (*programs, *map(Path, TOOLS)) for lib in shared_libraries(p)}):
        tree.add_file(lib, lib, mode=0o755)
    modules = module_dependencies(root, release, NAMED_MODULES, [f for f in files if f.suffix == ".ko"])
    add_kernel_modules(tree, root, release, modules)
    return tree


def add_kernel_modules(tree, root, release, modules):
    """The modules, uncompressed, where modprobe looks, with the kernel's
    lists of built-in modules and depmod's index of what is there."""
    base = root / "lib" / "modules" / release
    if not base.exists():
        base = root / "usr" / "lib" / "modules" / release
    for module in modules:
        rel = Path(module).resolve().relative_to(base.resolve())
        tree.add_module(f"/lib/modules/{release}/{rel}", module)
    for name in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if (base / name).exists():
            tree.add_file(f"/lib/modules/{release}/{name}", base / name)
    tree.depmod(release)


# ---- the jobs -------------------------------------------------------------------

# A job's test action may take this many times the configuration's measured
# time (durations.json) on a lab's TCG worker, and never less than the floor.
TIMEOUT_FACTOR = 4
TIMEOUT_FLOOR_MIN = 15


def kernel_args(config):
    """The guest kernel's command line: what every guest gets, the
    configuration's own, and the console with the kernel's critical
    messages alone (scripts/guest/lava-init prints its whole log later)."""
    base = lib_sh('echo "$GUEST_KERNEL_ARGS"')[0]
    iommu = ["intel_iommu=on"] if config.msi == 32 else []
    return " ".join(["console=ttyS0,115200", "loglevel=3", base, f"aic_config={config.name}", *iommu,
                     *config.kernel_args])


def qemu_options(config):
    """LAVA's context extra_options: QEMU's arguments beyond what the qemu
    device type gives (-nographic, -m, -monitor none; -cpu host with KVM,
    which the -cpu max here follows and so overrides to the same effect)."""
    firmware = lib_sh('echo "$GUEST_QEMU_FIRMWARE_ARGS"')[0].split()
    devices = (lib_sh(f"guest_iommu_args {config.msi}")
               + lib_sh(f"guest_card_args {config.cards} {shlex.quote(config.card_types)} "
                        f"{shlex.quote(config.card_opts)}"))
    pairs = ["-machine", "q35", "-cpu", "max", "-smp", "2", *firmware, *devices]
    # One option and its value per list item, as LAVA joins them.
    return [f"{a} {b}" for a, b in zip(pairs[::2], pairs[1::2], strict=True)] + ["-no-reboot"]


def job(config, artifacts_url, minutes):
    tag = kernels.tag(config.kernel)
    return {
        "device_type": "qemu",
        "job_name": f"aic100 {config.name} ({kernels.label(config.kernel)}, {config.driver} qaic)",
        "timeouts": {"job": {"minutes": minutes + 10}, "action": {"minutes": 5},
                     "connection": {"minutes": 2}},
        "priority": "medium",
        "visibility": "public",
        "metadata": {"aic100.configuration": config.name, "aic100.kernel": kernels.label(config.kernel),
                     "aic100.driver": config.driver, "aic100.suites": " ".join(config.suites())},
        "context": {"arch": "amd64", "memory": 2048, "extra_options": qemu_options(config)},
        "actions": [
            {"deploy": {"timeout": {"minutes": 5}, "to": "tmpfs", "images": {
                "kernel": {"image_arg": f'-kernel {{kernel}} -append "{kernel_args(config)}"',
                           "url": f"{artifacts_url}/{tag}/bzImage"},
                "initrd": {"image_arg": "-initrd {initrd}", "url": f"{artifacts_url}/{tag}/initramfs.cpio.gz"}}}},
            {"boot": {"timeout": {"minutes": 5}, "method": "qemu", "media": "tmpfs"}},
            {"test": {"timeout": {"minutes": minutes}, "monitors": [{
                "name": config.name.replace(".", "_"), "start": SUITES_BEGIN, "end": SUITES_END,
                "pattern": CASE_PATTERN, "fixupdict": {}}]}}],
    }


def test_minutes(config, durations):
    seconds = durations["configs"].get(config.name, shards.UNTIMED_S)
    return max(TIMEOUT_FLOOR_MIN, -(-seconds * TIMEOUT_FACTOR // 60))


def write_jobs(out, artifacts_url, chosen):
    durations = shards.load_durations()
    (out / "jobs").mkdir(parents=True, exist_ok=True)
    for config in chosen:
        text = yaml.safe_dump(job(config, artifacts_url, test_minutes(config, durations)), sort_keys=False,
                              width=1000)
        (out / "jobs" / f"{config.name}.yaml").write_text(text)


def write_artifacts(out, chosen):
    by_kernel = {}
    for config in chosen:
        by_kernel.setdefault(config.kernel, []).append(config)
    for kernel, group in by_kernel.items():
        folder = out / "artifacts" / kernels.tag(kernel)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kernel_facts(kernel)[2], folder / "bzImage")
        initramfs_tree(kernel, group).write(folder / "initramfs.cpio.gz")
        print(f"make lava-jobs: {folder}: the {kernels.label(kernel)} kernel and its initramfs "
              f"({len(group)} configurations)")


def chosen_configs(names, built_only=False):
    table = {c.name: c for c in configs.CONFIGS}
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"make lava-jobs: no configuration {', '.join(unknown)} (make test's table: "
                         f"{' '.join(table)})")
    chosen = [table[n] for n in names] if names else list(table.values())
    unbuilt = [c.name for c in chosen if kernels.is_built(c.kernel) and not Path(c.kernel, "image").exists()]
    if unbuilt and built_only:
        print(f"make lava-jobs: left out, their kernel not built here: {' '.join(unbuilt)}")
        return [c for c in chosen if c.name not in unbuilt]
    if unbuilt:
        raise SystemExit(f"make lava-jobs: the kernel of {', '.join(unbuilt)} is not built yet "
                         "(scripts/build-source-kernels, or DEBUG_GUESTS=0)")
    return chosen


def main(argv=None):
    ap = argparse.ArgumentParser(prog="make lava-jobs", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["jobs"])
    ap.add_argument("configs", nargs="*", help="configurations (default: the whole table)")
    ap.add_argument("--out", type=Path, default=BUILD / "lava")
    ap.add_argument("--artifacts", help="the URL the jobs fetch the artifacts from "
                    "(default: $LAVA_ARTIFACTS, else file://OUT/artifacts)")
    ap.add_argument("--built-only", action="store_true",
                    help="leave out the configurations whose kernel is not built, and name them")
    args = ap.parse_intermixed_args(argv)
    out = args.out.resolve()
    url = (args.artifacts or os.environ.get("LAVA_ARTIFACTS") or f"file://{out}/artifacts").rstrip("/")
    chosen = chosen_configs(args.configs, args.built_only)
    write_artifacts(out, chosen)
    write_jobs(out, url, chosen)
    print(f"make lava-jobs: {len(chosen)} jobs in {out}/jobs, fetching from {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
