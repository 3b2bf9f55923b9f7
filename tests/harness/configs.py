# SPDX-License-Identifier: GPL-2.0-or-later
"""The guest configurations make test runs, one guest each, and the guest
programs each one's guest runs with their arguments: the one table that the
harness (conftest.py), the shard planner (shards.py) and the result reports
read.

The table is the configurations of Debian's 6.12 and 7.3 guests, and Linux
7.3 from Debian's linux-source with the kernel's bug detectors (the debug
guests; AIC100_DEBUG_GUESTS=0 leaves them out), or with KERNEL_TREE=DIR the
user's tree alone."""

import dataclasses
import functools
import os
import shlex
import subprocess
from pathlib import Path

import pytest

import kernels

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AIC100_BUILD", TOP / "build"))
GUEST_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-guest-tests"
NNC_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-nnc-tests"
DATA_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-data-tests"
HEALTH_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-health-tests"
TEARDOWN_RACE_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-teardown-race-tests"
STATUS_PADDING_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-status-padding-tests"
CLOSE_AFTER_UNBIND_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-close-after-unbind-tests"
HOSTILE_DMA_TESTS = BUILD / "cmake" / "tests" / "guest" / "qaic-hostile-dma-tests"
# The compiled networks with their reference pairs (docs/compiler.md).
NETWORKS = BUILD / "cmake" / "tools" / "qpc-networks"


# Guest kernel series (scripts/vm-run --kernel): Debian 12's 6.12 and
# Debian 13's 7.3. Upstream's qaic is built for each (scripts/build-upstream-qaic).
KERNELS = ("6.12", "7.3")
UPSTREAM_MODULES = {k: kernels.upstream_module(k) for k in KERNELS}
UPSTREAM_MODULE = UPSTREAM_MODULES["6.12"]
# Upstream's qaic with our fixes for its bugs (patches/linux).
UPSTREAM_PATCHED_MODULE = BUILD / "upstream-patched" / "qaic.ko"
UPSTREAM73_PATCHED_MODULE = BUILD / "upstream-7.3-patched" / "qaic.ko"
# The same but for patch 0007, whose bug only a driver with 0005 reaches.
UPSTREAM73_BUT_0007_MODULE = BUILD / "upstream-7.3-patched-but-0007" / "qaic.ko"
OUR_MODULE = TOP / "drivers" / "accel" / "qaic" / "qaic.ko"
OUR_MODULES = {"6.12": OUR_MODULE, "7.3": BUILD / "kernel-7.3" / "drivers" / "accel" / "qaic" / "qaic.ko"}
# The reproducers' test modules (tests/guest/kmod; 7.3's built in the build tree).
BOOTLOG_GATE_MODULE = TOP / "tests" / "guest" / "kmod" / "qaic_bootlog_gate.ko"
TIMESYNC_GATE_MODULES = {"6.12": TOP / "tests" / "guest" / "kmod" / "qaic_timesync_gate.ko",
                         "7.3": BUILD / "kmod-7.3" / "qaic_timesync_gate.ko"}
# The health suite's ssr_execute_unwind holds an EXECUTE_BO with it
# (qaic-health-tests --exec-gate; docs/upstream-bugs.md).
EXEC_GATE_MODULES = {"6.12": TOP / "tests" / "guest" / "kmod" / "qaic_exec_gate.ko",
                     "7.3": BUILD / "kmod-7.3" / "qaic_exec_gate.ko"}
# The hostile-DMA suite aims the cards' loopback echoes with it.
DMA_AIM_MODULES = {"6.12": TOP / "tests" / "guest" / "kmod" / "qaic_dma_aim.ko",
                   "7.3": BUILD / "kmod-7.3" / "qaic_dma_aim.ko"}


# suite -> (--race, what its run markers in the kernel log call it)
RACE_SUITES = {"bootlog_race": ("bootlog", "boot-log"), "timesync_race": ("timesync", "boot-timesync"),
               "bootlog_order": ("bootlog-order", "boot-log order")}

# A guest runs the suites one after the other, each introduced by a line
# "# suite: NAME" (ktap.py).


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    cards: int
    msi: int
    upstream: bool = False  # upstream Linux's qaic instead of ours
    card_opts: str = ""     # extra -device aic100 properties (vm-run --card-opts)
    nnc: bool = False       # also run the NNC suite (on card 0) after the boot suite
    data: bool = False      # then the data-path suite (on card 0)
    health: bool = False    # then the health suite (on the last card; needs test-mailbox=on)
    module_args: str = ""   # driver parameters (vm-run --module-args)
    boot: bool = True       # load a driver at boot and run the boot suite
    # The boot-log race reproducer's runs, in order: (label, module, expect),
    # expect one of "clean", "clean-nogate", "oops" (docs/upstream-bugs.md).
    bootlog_race: tuple = ()
    # The same for upstream's boot-timesync teardown race.
    timesync_race: tuple = ()
    # Upstream's boot-log client registered after the card began to boot
    # (docs/upstream-bugs.md): expect "clean" or "bug".
    bootlog_order: tuple = ()
    kernel: str = "6.12"    # guest kernel series (vm-run --kernel)
    # The data suite also runs the compiled 64x64 ResNet-50 (--networks;
    # 26 MB of constants, about 10 s): once per driver, on 6.12.
    networks: bool = False
    # Upstream's padded-STATUS bug (docs/upstream-bugs.md), after the other
    # suites: (label, module, expect) runs, expect "fixed" or "bug".
    status_padding: tuple = ()
    # Upstream's use after free at a close() after unbind (docs/upstream-bugs.md):
    # (label, module, expect) runs, expect "clean" or "oops" (last).
    close_after_unbind: tuple = ()
    # Its scenario (qaic-close-after-unbind-tests --scenario): "unbind", or
    # "rebind" (the card bound again before the close).
    close_after_unbind_scenario: str = "unbind"
    # Extra guest kernel parameters (vm-run --kernel-arg).
    kernel_args: tuple = ()
    # Known upstream bugs the health suite keeps out of its way, or expects,
    # and says so (qaic-health-tests --known-bug NAME): "close-after-unbind",
    # "execute-unwind".
    health_known_bugs: tuple = ()
    # Only this health case (qaic-health-tests --case), or all of them.
    health_case: str = ""
    # Detector reports of known upstream bugs that the driver under test
    # shows and the serial log check allows (guest_known_reports() and
    # test_guest.py's KNOWN_LEAKS): "wrapper-lock", "srcu-class", "upstream-leaks".
    known_reports: tuple = ()
    # Upstream bugs whose fix the upstream module under test carries, for
    # the suites that expect upstream's bugs (qaic-nnc-tests --fixed).
    upstream_fixes: tuple = ()
    # Health cases listed but not run, with the reason (qaic-health-tests
    # --skip NAME=WHY): (name, why) pairs.
    health_skips: tuple = ()
    # The module loaded at boot instead of upstream's as it is (with
    # upstream), and the driver's name in the matrix.
    module: Path = None
    driver_label: str = ""
    # The hostile-DMA suite (card 0's DMA aimed at its root port and at the
    # other card), after the health suite.
    hostile_dma: bool = False
    # Each card's model, taken in turn (vm-run --card): "aic100", "aic200"
    # or a list such as "aic200,aic100".
    card_types: str = "aic100"
    # The card the health suite runs on; -1: the last.
    health_card: int = -1
    # The card's front end: "qemu" (-device aic100 in our QEMU) or
    # "vfio-user" (aic100-vfio-user servers behind Debian 13's unmodified
    # QEMU 11.1: vm-run --vfio-user); the latter's rows run with
    # make test-vfio-user (AIC100_FRONTEND=vfio-user).
    frontend: str = "qemu"
    # The boot suite's rounds of SYS_ERR recovery and module reloads
    # (--cycles; 0: the program's own, 10).
    cycles: int = 0
    # The health suite's crashes, reloads and resets under load (--crashes,
    # --reloads, --resets); (): the program's own, 20, 6 and 4.
    health_rounds: tuple = ()

    @property
    def driver(self):
        runs = self.bootlog_race or self.timesync_race or self.bootlog_order or self.close_after_unbind
        if runs:
            return "/".join(label for label, _, _ in runs)
        return self.driver_label or ("upstream" if self.upstream else "ours")

    @property
    def crc(self):
        return "crc=on" in self.card_opts.split(",")

    def race_runs(self, suite):
        return {"bootlog_race": self.bootlog_race, "timesync_race": self.timesync_race,
                "bootlog_order": self.bootlog_order}[suite]

    def suites(self):
        return ((["boot"] if self.boot else []) + (["bootlog_race"] if self.bootlog_race else [])
                + (["timesync_race"] if self.timesync_race else [])
                + (["bootlog_order"] if self.bootlog_order else [])
                + (["close_after_unbind"] if self.close_after_unbind else [])
                + (["nnc"] if self.nnc else []) + (["data"] if self.data else [])
                + (["health"] if self.health else []) + (["hostile_dma"] if self.hostile_dma else [])
                + (["status_padding"] if self.status_padding else []))

    def expected_cases(self, suite="boot"):
        """The suite's cases, in order: what its program lists (--list) when
        given the arguments the guest gives it."""
        command = next(c for c in suite_commands(self) if c.suite == suite)
        return list(listed_cases(command.program, command.args))


# The NNC suite runs with our driver without CRC (IOMMU, 32 MSIs), with our
# driver and a card that asks for CRCs (single MSI, no IOMMU: the 256 MiB
# load needs DMA continuations there), and with upstream's driver.
# The data-path suite runs in every configuration, and once more with the
# driver polling for responses instead of taking interrupts.
# The health suite (SSR, RAS, telemetry, through the cards' BAR4 test
# mailbox) runs with our driver on 32 MSIs behind the IOMMU, on the second
# card, and with upstream's driver, which must tolerate what it does not bind.
DEBIAN_CONFIGS = [Config("1card-1msi-crc", 1, 1, card_opts="crc=on", nnc=True, data=True),
           Config("2cards-32msi", 2, 32, card_opts="test-mailbox=on", nnc=True, data=True, health=True,
                  networks=True, hostile_dma=True),
           Config("upstream-1card-32msi", 1, 32, upstream=True, card_opts="test-mailbox=on", nnc=True, data=True,
                  health=True, networks=True,
                  status_padding=(("upstream_patched", UPSTREAM_PATCHED_MODULE, "fixed"),
                                  ("upstream", UPSTREAM_MODULE, "bug"))),
           Config("1card-1msi-polling", 1, 1, data=True, module_args="datapath_polling=1"),
           # The card's user-visible threading properties, each off, through
           # every suite: its work in QEMU's main loop instead of a thread of
           # its own, and the DMA Bridge's registers under the BQL.
           Config("1card-32msi-nothread", 1, 32, card_opts="test-mailbox=on,worker-thread=off", nnc=True,
                  data=True, health=True),
           Config("1card-32msi-bql", 1, 32, card_opts="test-mailbox=on,dbc-lockless=off", nnc=True, data=True,
                  health=True),
           # Upstream's boot-log teardown race, made certain (docs/upstream-bugs.md):
           # our driver and upstream's with our patch survive it; upstream's
           # 6.12 oopses, last, as the guest's MHI state worker never returns.
           Config("bootlog-race", 1, 1, card_opts="test-mailbox=on", boot=False,
                  bootlog_race=(("ours", OUR_MODULE, "clean-nogate"),
                                ("upstream_patched", UPSTREAM_PATCHED_MODULE, "clean"),
                                ("upstream", UPSTREAM_MODULE, "oops"))),
           # Upstream's boot-timesync teardown race, made certain the same way,
           # on each kernel (docs/upstream-bugs.md): upstream's oopses on both.
           Config("timesync-race", 1, 1, card_opts="test-mailbox=on", boot=False,
                  timesync_race=(("ours", OUR_MODULE, "clean-nogate"),
                                 ("upstream_patched", UPSTREAM_PATCHED_MODULE, "clean"),
                                 ("upstream", UPSTREAM_MODULE, "oops"))),
           Config("k7.3-timesync-race", 1, 1, card_opts="test-mailbox=on", boot=False, kernel="7.3",
                  timesync_race=(("ours", OUR_MODULES["7.3"], "clean-nogate"),
                                 ("upstream_patched", UPSTREAM73_PATCHED_MODULE, "clean"),
                                 ("upstream", UPSTREAM_MODULES["7.3"], "oops"))),
           # Upstream's boot-log client registered after the card began to
           # boot, made certain (docs/upstream-bugs.md): its bind held until
           # the card left the SBL. Ours and upstream's with patch 0013 bind
           # it as the card enters the SBL and keep the boot log; upstream's
           # as it is loses it.
           Config("k7.3-bootlog-order", 1, 1, boot=False, kernel="7.3",
                  bootlog_order=(("ours", OUR_MODULES["7.3"], "clean"),
                                 ("upstream_patched", UPSTREAM73_PATCHED_MODULE, "clean"),
                                 ("upstream", UPSTREAM_MODULES["7.3"], "bug"))),
           # The 7.3 guest: our driver (the same module source, built for 7.3)
           # with every suite, on two cards behind the IOMMU with the test
           # mailbox, and on one card asking for CRCs; upstream 7.3's qaic
           # through the boot, NNC, data-path and health suites (the last in
           # its own terms: it has SSR and RAS clients of its own).
           Config("k7.3-2cards-32msi", 2, 32, card_opts="test-mailbox=on", nnc=True, data=True, health=True,
                  kernel="7.3", hostile_dma=True),
           Config("k7.3-1card-1msi-crc", 1, 1, card_opts="crc=on", nnc=True, data=True, kernel="7.3"),
           # Both end with upstream's padded-STATUS reproducer: the driver with
           # patch 0002 answers, the driver as it is times out.
           # Its health suite (qaic-health-tests --upstream 7.3) keeps out of
           # the way of upstream's use after free at a close() after unbind
           # (its users close before an unbind: --known-bug close-after-unbind),
           # which k7.3-close-after-unbind reproduces, and its ssr_execute_unwind
           # expects upstream's EXECUTE_BO error path to take back BOs that the
           # SSR took off the DBC's queue (--known-bug execute-unwind; the
           # WARNING it may print is between the case's marker lines).
           Config("k7.3-upstream-1card-32msi", 1, 32, upstream=True, card_opts="test-mailbox=on", nnc=True,
                  data=True, health=True, health_known_bugs=("close-after-unbind", "execute-unwind"), kernel="7.3",
                  status_padding=(("upstream_patched", UPSTREAM73_PATCHED_MODULE, "fixed"),
                                  ("upstream", UPSTREAM_MODULES["7.3"], "bug"))),
           # AIC200 (docs/aic200.md) beside an AIC100 in one machine: every
           # suite runs on the AIC200 (card 0), and the boot suite checks
           # both families' faces. Upstream 7.3 loads its SBL by BHIe (and
           # its health suite keeps out of the way of the same known bugs as
           # on AIC100), ours on 6.12 by BHI; MSI-X gives the AIC200 all its
           # vectors without interrupt remapping.
           Config("k7.3-upstream-aic200-mixed-32msi", 2, 32, upstream=True, card_types="aic200,aic100",
                  card_opts="test-mailbox=on", nnc=True, data=True, health=True, health_card=0,
                  health_known_bugs=("close-after-unbind", "execute-unwind"), kernel="7.3"),
           Config("k7.3-aic200-mixed-32msi", 2, 32, card_types="aic200,aic100", card_opts="test-mailbox=on",
                  nnc=True, data=True, health=True, health_card=0, kernel="7.3"),
           Config("aic200-mixed-1msi", 2, 1, card_types="aic200,aic100", card_opts="test-mailbox=on", nnc=True,
                  data=True, health=True, health_card=0),
           # Upstream's use after free of its qaic_device at a close() after
           # unbind, made certain by init_on_free=1 (the freed memory is zeroes
           # by the close), on each kernel (docs/upstream-bugs.md): ours and
           # upstream's with patch 0005 (7.3) or 0006 (6.12) close cleanly;
           # upstream's as it is oopses, last.
           Config("close-after-unbind", 1, 1, boot=False, kernel_args=("init_on_free=1",),
                  close_after_unbind=(("ours", OUR_MODULE, "clean"),
                                      ("upstream_patched", UPSTREAM_PATCHED_MODULE, "clean"),
                                      ("upstream", UPSTREAM_MODULE, "oops"))),
           Config("k7.3-close-after-unbind", 1, 1, boot=False, kernel="7.3", kernel_args=("init_on_free=1",),
                  close_after_unbind=(("ours", OUR_MODULES["7.3"], "clean"),
                                      ("upstream_patched", UPSTREAM73_PATCHED_MODULE, "clean"),
                                      ("upstream", UPSTREAM_MODULES["7.3"], "oops"))),
           # Upstream's PCI drvdata cleared by a close() after the card was
           # bound again (docs/upstream-bugs.md): reached by upstream 7.3 with
           # every patch but 0007 (as it is, it oopses at the close itself);
           # its read of ce_count through the drvdata then oopses, last.
           Config("k7.3-close-after-rebind", 1, 1, boot=False, kernel="7.3",
                  close_after_unbind_scenario="rebind",
                  close_after_unbind=(("ours", OUR_MODULES["7.3"], "clean"),
                                      ("upstream_patched", UPSTREAM73_PATCHED_MODULE, "clean"),
                                      ("upstream_but_0007", UPSTREAM73_BUT_0007_MODULE, "oops"))),
           # Upstream 7.3's qaic facing a card whose DMA hits its root port
           # (SBR) and the other card, without an IOMMU (the raw addresses
           # reach; behind the IOMMU, 2cards-32msi and k7.3-2cards-32msi).
           Config("k7.3-upstream-2cards-hostile-dma", 2, 1, upstream=True, boot=False, hostile_dma=True, kernel="7.3"),
           # Upstream 7.3 with the whole series through ssr_execute_unwind
           # alone: patch 0008 keeps the EXECUTE_BO error path to its own BOs
           # (docs/upstream-bugs.md).
           Config("k7.3-upstream-patched-execute-unwind", 1, 32, upstream=True, module=UPSTREAM73_PATCHED_MODULE,
                  driver_label="upstream_patched", card_opts="test-mailbox=on", boot=False, health=True,
                  health_case="ssr_execute_unwind", kernel="7.3")]

def source_tree_configs(prefix, kernel):
    """A kernel built from a source tree (scripts/build-kernel): our driver and
    the tree's own qaic through every suite, and the reproducers of upstream's
    bugs; the tree's qaic with our patches through every suite too (in the
    unpatched driver's guest, lockdep is off after its first report). Each
    reproducer expects the tree's qaic to show its bug unless the tree
    already carries the patch that fixes it. With the debug configuration,
    the unpatched runs must show those bugs as the detectors' reports
    (test_guest.py)."""
    carried = kernels.carried_patches(kernel)
    ours, patched, upstream = (kernels.our_module(kernel), kernels.upstream_patched_module(kernel),
                               kernels.upstream_module(kernel))

    def runs(bug, fix, last=("upstream", upstream)):
        return (("ours", ours, "clean-nogate" if bug == "oops-race" else "clean"),
                ("upstream_patched", patched, "clean"),
                (*last, "clean" if fix in carried else ("oops" if bug != "bug" else "bug")))

    k73 = kernels.series(kernel) == "7.3"
    known = tuple(b for b, fix in (("close-after-unbind", "0005"), ("execute-unwind", "0008"))
                  if k73 and fix not in carried)
    # Lockdep reports the first of these and is off from then on.
    lock_reports = ((() if "0009" in carried else ("wrapper-lock",))
                    + (() if carried & {"0010", "0011"} else ("srcu-class",)))
    reports = lock_reports + ("upstream-leaks",)
    fixes = ("status-padding",) if "0002" in carried else ()
    # Under KASAN upstream's EXECUTE_BO unwind reads a BO through the DBC's
    # list head and oopses with the thread holding its locks: the guest
    # would hang. The bug's reproduction runs on Debian's 7.3 guest.
    skips = ()
    if "execute-unwind" in known and kernels.detectors(kernel):
        known = tuple(b for b in known if b != "execute-unwind")
        # The crash loop races an EXECUTE_BO against an SSR too, and now and
        # then takes the same unwind (docs/upstream-bugs.md, 0008: 2 of 655
        # runs; once here, 2026-12-07, hanging the debug guest).
        why = ("upstream's known EXECUTE_BO unwind bug (patches/linux/0008) oopses under KASAN with its "
               "locks held; reproduced in k7.3-upstream-1card-32msi")
        skips = (("ssr_execute_unwind", why), ("ssr_crash_loop", why))
    # KASAN on a 5-level paging guest (QEMU's -cpu max has LA57) reports a
    # wild access for an interrupt that lands while the boot CPU's features
    # are being read again (docs/upstream-bugs.md): 4-level paging there.
    args = ("no5lvl",) if kernels.detectors(kernel) else ()
    # The detectors judge each path a round takes, the first time as much as
    # the tenth; a round costs ten times as much under them (11 s a reload
    # with two cards): three rounds there.
    cycles = 3 if kernels.detectors(kernel) else 0
    # The same for the health suite's loops: each kind of reload (unbind,
    # kill) and reset (PCI, SoC) twice, a fourth of the crashes.
    health_rounds = (5, 2, 2) if kernels.detectors(kernel) else ()
    padding = (("upstream_patched", patched, "fixed"),
               ("upstream", upstream, "fixed" if "0002" in carried else "bug"))
    configs = [
        Config(f"{prefix}-2cards-32msi", 2, 32, card_opts="test-mailbox=on", nnc=True, data=True, health=True,
               hostile_dma=True, kernel=kernel, kernel_args=args, cycles=cycles, health_rounds=health_rounds),
        Config(f"{prefix}-upstream-1card-32msi", 1, 32, upstream=True, card_opts="test-mailbox=on", nnc=True,
               data=True, health=True, health_known_bugs=known, kernel=kernel, status_padding=padding,
               known_reports=reports, upstream_fixes=fixes, health_skips=skips, kernel_args=args,
               cycles=cycles, health_rounds=health_rounds),
        Config(f"{prefix}-timesync-race", 1, 1, card_opts="test-mailbox=on", boot=False, kernel=kernel,
               kernel_args=args, known_reports=lock_reports, timesync_race=runs("oops-race", "0003")),
        Config(f"{prefix}-close-after-unbind", 1, 1, boot=False, kernel=kernel, kernel_args=("init_on_free=1", *args),
               known_reports=lock_reports, close_after_unbind=runs("oops", "0005" if k73 else "0006"))]
    if k73:
        # The boot log lost to a log client registered late (0013).
        configs.append(Config(f"{prefix}-bootlog-order", 1, 1, boot=False, kernel=kernel, kernel_args=args,
                              known_reports=lock_reports, bootlog_order=runs("bug", "0013")))
        configs.append(Config(f"{prefix}-close-after-rebind", 1, 1, boot=False, kernel=kernel,
                              close_after_unbind_scenario="rebind", kernel_args=args, known_reports=lock_reports,
                              close_after_unbind=runs("oops", "0007", ("upstream_but_0007",
                                                                       kernels.upstream_but_0007_module(kernel)))))
    else:
        configs.append(Config(f"{prefix}-bootlog-race", 1, 1, card_opts="test-mailbox=on", boot=False,
                              kernel=kernel, kernel_args=args, known_reports=lock_reports,
                              bootlog_race=runs("oops-race", "0001")))
    configs.append(Config(f"{prefix}-upstream-patched-1card-32msi", 1, 32, upstream=True, module=patched,
                          driver_label="upstream_patched", card_opts="test-mailbox=on", nnc=True, data=True,
                          health=True, kernel=kernel, kernel_args=args, cycles=cycles,
                          health_rounds=health_rounds, upstream_fixes=("status-padding",),
                          # Its open leaks are not among the patches.
                          known_reports=("upstream-leaks",)))
    return configs


# make test KERNEL_TREE=DIR [KERNEL_CONFIG=plain|debug]: the matrix on the
# user's tree alone. Otherwise the matrix above, and Linux 7.3 from Debian's
# linux-source with the detectors (scripts/build builds both;
# AIC100_DEBUG_GUESTS=0 leaves the debug guests out).
DEBUG_GUESTS = os.environ.get("AIC100_DEBUG_GUESTS", "1") != "0"

# The card behind a stock QEMU (docs/vfio-user.md): each row is the twin of
# an in-QEMU row with the same suites, so the two front ends' verdicts can
# be held side by side.
VFIO_USER_CONFIGS = [
    Config("vfio-user-1card-32msi", 1, 32, card_opts="test-mailbox=on", nnc=True, data=True, health=True,
           frontend="vfio-user"),
    # Upstream 7.3's qaic as it is, with its in-QEMU twin's known bugs, but
    # not the padded-STATUS reproducer (not a front end's concern).
    dataclasses.replace(next(c for c in DEBIAN_CONFIGS if c.name == "k7.3-upstream-1card-32msi"),
                        name="k7.3-vfio-user-upstream-1card-32msi", status_padding=(), frontend="vfio-user"),
    # An AIC100 and an AIC200 (MSI-X through the server's eventfds) under
    # upstream 7.3's qaic, unmodified.
    dataclasses.replace(next(c for c in DEBIAN_CONFIGS if c.name == "k7.3-upstream-aic200-mixed-32msi"),
                        name="k7.3-vfio-user-upstream-aic200-mixed-32msi", frontend="vfio-user"),
]


# Each vfio-user row's in-QEMU twin: the same kernel, driver, card and
# suites, judged case by case against it (tests/harness/frontends.py).
# -device aic100's worker-thread and dbc-lockless mean nothing to the
# server; 1card-32msi-bql is the one-card 32-MSI row with the mailbox.
VFIO_USER_TWINS = {
    "vfio-user-1card-32msi": "1card-32msi-bql",
    "k7.3-vfio-user-upstream-1card-32msi": "k7.3-upstream-1card-32msi",
    "k7.3-vfio-user-upstream-aic200-mixed-32msi": "k7.3-upstream-aic200-mixed-32msi",
}


def selected_configs():
    """The table as this run's environment selects it. Read again once a
    kernel is built from source (its tree's carried patches count)."""
    if os.environ.get("AIC100_FRONTEND") == "vfio-user":
        return list(VFIO_USER_CONFIGS)
    if os.environ.get("KERNEL_TREE"):
        return source_tree_configs("tree", kernels.built_kernel(os.environ["KERNEL_TREE"],
                                                                os.environ.get("KERNEL_CONFIG") or "plain"))
    debug = source_tree_configs("dbg7.3", kernels.built_kernel("7.3", "debug")) if DEBUG_GUESTS else []
    return DEBIAN_CONFIGS + debug


CONFIGS = selected_configs()


def same_before_its_build(collected, now):
    """Whether `collected`, read before its kernel was built from source, is
    `now`, read after: equal but for the paths of the modules that kernel
    installed (lib/modules/RELEASE, unknown before the build)."""
    release = f"/modules/{kernels.release(now.kernel)}/"

    def unbuilt(config):
        return repr(config).replace(release, "/modules/(not built)/")
    return unbuilt(collected) == unbuilt(now)


@dataclasses.dataclass(frozen=True)
class SuiteCommand:
    """One guest program of a configuration's guest run, with its arguments."""
    suite: str
    program: Path
    args: tuple
    # What else the guest run needs built: the modules and gates it loads.
    needs: tuple = ()


def _module_runs(runs):
    """A reproducer's --run arguments for its (label, module, expect) runs."""
    return tuple(a for label, module, expect in runs for a in ("--run", f"{label}={module}:{expect}"))


def suite_commands(config):
    """The guest programs that the configuration's guest runs, in order: its
    script runs each with these arguments, and the harness asks each for its
    cases with the same ones (expected_cases)."""
    upstream = ("--upstream", kernels.series(config.kernel)) if config.upstream else ()
    # The guest programs know the lock reports; leaks show at the end.
    reports = tuple(a for n in config.known_reports if n in guest_known_reports() for a in ("--known-report", n))
    commands = []
    # The boot suite first: its "online" note times the boot, and its
    # reload and reset cases leave the card ONLINE again.
    if config.boot:
        commands.append(SuiteCommand("boot", GUEST_TESTS,
                                     ("--cards", str(config.cards), "--msi", str(config.msi),
                                      "--card-types", config.card_types, *reports, *upstream,
                                      *(("--cycles", str(config.cycles)) if config.cycles else ()))))
    for suite, (race, _) in RACE_SUITES.items():
        runs = config.race_runs(suite)
        if runs:
            gate = (BOOTLOG_GATE_MODULE if race == "bootlog"
                    else kernels.test_module(config.kernel, {"timesync": "qaic_timesync_gate",
                                                             "bootlog-order": "qaic_bootlog_order_gate"}[race]))
            commands.append(SuiteCommand(suite, TEARDOWN_RACE_TESTS,
                                         ("--race", race, "--gate", str(gate), *reports, *_module_runs(runs)),
                                         (gate, *(m for _, m, _ in runs))))
    if config.close_after_unbind:
        runs = config.close_after_unbind
        commands.append(SuiteCommand("close_after_unbind", CLOSE_AFTER_UNBIND_TESTS,
                                     ("--card", "0", "--scenario", config.close_after_unbind_scenario, *reports,
                                      *_module_runs(runs)), tuple(m for _, m, _ in runs)))
    if config.nnc:
        fixes = tuple(a for fix in config.upstream_fixes for a in ("--fixed", fix))
        # Behind a vIOMMU QEMU's vfio-user client maps the guest's pages one
        # DMA_MAP each, at most 65,535 (its max_dma_maps, as the kernel's
        # type1 dma_entry_limit): the 256 MiB scattered load needs 65,536.
        big = ("--big-mib", "128") if config.frontend == "vfio-user" else ()
        commands.append(SuiteCommand("nnc", NNC_TESTS,
                                     ("--card", "0", "--crc", "1" if config.crc else "0", *upstream, *fixes, *big)))
    if config.data:
        networks = ("--networks", str(NETWORKS)) if config.networks else ()
        commands.append(SuiteCommand("data", DATA_TESTS, ("--card", "0", *networks, *upstream)))
    if config.health:
        commands.append(health_command(config, upstream))
    if config.hostile_dma:
        gate = kernels.test_module(config.kernel, "qaic_dma_aim")
        commands.append(SuiteCommand("hostile_dma", HOSTILE_DMA_TESTS, ("--card", "0", "--gate", str(gate), *upstream),
                                     (gate,)))
    if config.status_padding:
        runs = config.status_padding
        commands.append(SuiteCommand("status_padding", STATUS_PADDING_TESTS, ("--card", "0", *_module_runs(runs)),
                                     tuple(m for _, m, _ in runs)))
    return commands


def boot_module(config):
    """The qaic the guest loads before its suites, or None: upstream's (or
    the configuration's own module) whenever it tests upstream, even where
    the boot suite does not run; ours with the boot suite; none otherwise."""
    if config.upstream:
        return Path(config.module or kernels.upstream_module(config.kernel))
    if not config.boot:
        return None
    return Path(kernels.our_module(config.kernel))


def suite_script(config, place=str):
    """The shell text the guest runs: each suite's program in turn after its
    "# suite:" line, failing if any failed. `place` names a host file where
    the guest finds it (LAVA's initramfs holds them elsewhere: lava.py)."""
    script = "rc=0; "
    for command in suite_commands(config):
        words = [place(command.program), *(place_in_arg(a, place) for a in command.args)]
        script += f"echo '# suite: {command.suite}'; " + shlex.join(words) + " || rc=1; "
    return script + "exit $rc"


def place_in_arg(arg, place):
    """An argument with the host path in it (a whole path, or after the
    last "=" as in --run LABEL=PATH:EXPECT) put where `place` says."""
    if place is str:
        return arg
    head, sep, path = arg.rpartition("=")
    path, colon, tail = path.partition(":")
    return head + sep + place(path) + colon + tail if path.startswith("/") else arg


def health_command(config, upstream):
    """The health suite's program and arguments (on the last card, unless
    the configuration names one)."""
    gate = kernels.test_module(config.kernel, "qaic_exec_gate")
    card = config.cards - 1 if config.health_card < 0 else config.health_card
    args = ["--card", str(card), *upstream, "--exec-gate", str(gate)]
    for flag, count in zip(("--crashes", "--reloads", "--resets"), config.health_rounds):
        args += [flag, str(count)]
    for bug in config.health_known_bugs:
        args += ["--known-bug", bug]
    if config.health_case:
        args += ["--case", config.health_case]
    for name, why in config.health_skips:
        args += ["--skip", f"{name}={why}"]
    return SuiteCommand("health", HEALTH_TESTS, tuple(args), (gate,))


def _ask(program, *args):
    """What a guest program, run on the host, prints for these arguments; a
    collection error if it is not built or refuses them."""
    if not Path(program).exists():
        pytest.fail(f"{program} missing: the harness asks the guest programs for their cases; "
                    "build them first (make build)", pytrace=False)
    out = subprocess.run([str(program), *args], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.fail(f"{shlex.join([str(program), *args])} failed (exit {out.returncode}): {out.stderr.strip()}",
                    pytrace=False)
    return out.stdout


@functools.cache
def listed_cases(program, args):
    """The case names a guest program reports for these arguments, in order
    (its --list, which runs nothing)."""
    return tuple(_ask(program, *args, "--list").split())


@dataclasses.dataclass(frozen=True)
class KnownReport:
    """A known upstream bug's detector report: its first line, a line it
    must hold and its last line end with these."""
    first: str
    holds: str
    last: str


@functools.cache
def guest_known_reports():
    """name -> KnownReport: the reports that the guest programs leave out
    where a configuration names them (--known-report), as they know them
    (tests/guest/guest_util.h); test_guest.py allows the same in the serial
    log."""
    reports = {}
    for line in _ask(GUEST_TESTS, "--list-known-reports").splitlines():
        name, first, holds, last = line.split("\t")
        reports[name] = KnownReport(first, holds, last)
    return reports
