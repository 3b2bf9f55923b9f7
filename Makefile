# aic100-virt: a virtual Qualcomm Cloud AI 100 for QEMU and its qaic driver.
#
#   make demo    set up (as root: packages, guest kernel, QEMU), build, boot a
#                guest with two cards, load qaic and show the cards
#   make test    set up, build, run the unit tests and the in-guest suites
#                (with the debug guests: Linux 7.3 built from source with
#                KASAN, lockdep, DMA-API debugging, UBSAN and kmemleak;
#                DEBUG_GUESTS=0 leaves them out)
#   make test KERNEL_TREE=DIR [KERNEL_CONFIG=plain|debug]
#                the suites on a kernel built from your Linux tree instead:
#                its own qaic, ours and its own with patches/linux, with
#                JUnit XML in build/results (docs/kernels-from-source.md)
#   make kernel [KERNEL_TREE=DIR] [KERNEL_CONFIG=...]   only build that kernel
#   make test-vfio-user   the suites with the card behind Debian 13's stock
#                QEMU 11.1 through aic100-vfio-user (docs/vfio-user.md)
#   make test SHARD=K/N   shard K of N of the guest configurations (the
#                host-side tests in shard 1), into build/results/shard-K-of-N
#   make test-report DIRS="build/results/shard-1-of-3 ..."   one report of
#                several runs' results; non-zero when one is missing or failed
#   make lava-jobs [CONFIGS="..."] [LAVA_ARTIFACTS=URL]   the configurations
#                as LAVA jobs with their artifacts, in build/lava (docs/lab.md)
#   make kcidb [DIRS="..."] [ORIGIN=lab_name] [OUT=FILE]   those results (or
#                build/results) as KCIDB JSON for a lab to submit
#                (docs/testing.md, "KCIDB"); nothing is sent
#
# SANITIZE=1 (e.g. make SANITIZE=1 test) builds the host C++ and QEMU with
# ASan and UBSan, in build directories of their own (build/cmake-asan, QEMU's
# build-asan), and runs the unit tests and the guests with them: any
# sanitizer report fails the run. SANITIZE=thread (make SANITIZE=thread
# unit) builds the host C++ with ThreadSanitizer (build/cmake-tsan) and runs
# the unit tests of the threaded code with it.
#
#   make fuzz    build the device core's libFuzzer target and run it for
#                FUZZ_SECONDS (default 120); fails on any finding
#   make fuzz-seeds   regenerate the fuzzer's committed seed corpus
#   make qemu-fuzz    QEMU's own generic-fuzz on two cards (FUZZ_SECONDS each
#                configuration, with and without intel-iommu); fails on a finding
#   make qemu-fuzz-seeds   regenerate generic-fuzz's committed seeds and dictionary
#
# Other targets: setup, build, unit, qtest (the device's qtest), guest-test, vm (interactive guest), clean,
# checkpatch (upstream's checkpatch.pl --strict over our driver; informational),
# umd-test UMD_SRC=DIR [UMD_DEPS=DIR] (the open UMD built from a checkout of
# it and run in guests under both drivers; docs/umd-test.md),
# soak (one guest: 1000 SSRs, 100 module reloads and 100 resets under load,
# then nothing leaked; SOAK_ARGS="--crashes N ..." for other counts),
# fresh-root (the two commands above in a pristine Debian root, as a new user
# runs them; CMD="..." runs something else there), test-fresh-root (the
# runner's own tests).

# Recipes source scripts/lib.sh, which is bash.
SHELL := /bin/bash

PYTEST := /usr/bin/python3 -m pytest

ifeq ($(SANITIZE),1)
export AIC100_SANITIZE := 1
endif
ifeq ($(SANITIZE),thread)
export AIC100_SANITIZE := thread
endif
ifneq ($(FUZZ_SECONDS),)
export FUZZ_SECONDS
endif
export KERNEL_TREE KERNEL_CONFIG
ifeq ($(DEBUG_GUESTS),0)
export AIC100_DEBUG_GUESTS := 0
endif
# SHARD=K/N is checked here, before anything is built; that N is at most the
# number of configurations, once the table can be read (scripts/test).
ifneq ($(SHARD),)
ifneq ($(shell [[ '$(SHARD)' =~ ^0*([1-9][0-9]*)/0*([1-9][0-9]*)$$ ]] && \
	(( BASH_REMATCH[1] <= BASH_REMATCH[2] )) && echo ok),ok)
$(error SHARD=$(SHARD): expected K/N with 1 <= K <= N, such as SHARD=2/3)
endif
export AIC100_SHARD := $(SHARD)
endif

.PHONY: test-vfio-user all setup build demo test unit qtest guest-test vm clean checkpatch bench fresh-root test-fresh-root \
	fuzz fuzz-seeds qemu-fuzz qemu-fuzz-seeds soak umd-test kernel test-report lava-jobs kcidb

all: build

setup:
	scripts/setup

build: setup
	scripts/build

# Only what the demo runs is set up and built first (scripts/setup and
# scripts/build --demo): a new user sees the cards sooner; make test does
# the rest.
demo:
	scripts/setup --demo
	scripts/build --demo
	scripts/demo

unit: build
	scripts/unit

# The device's qtest (QEMU's libqtest, no guest): seconds.
qtest: build
	scripts/qtest

guest-test: build
	scripts/build-source-kernels
	$(PYTEST) -v tests/harness

kernel: setup
	scripts/build-kernel

# The card as aic100-vfio-user servers behind Debian 13's unmodified QEMU
# 11.1 (docs/vfio-user.md): the vfio-user rows of the table, results in
# build/results/vfio-user. Not yet part of make test (CI's budget).
test-vfio-user: build
	scripts/stock-qemu-root
	AIC100_FRONTEND=vfio-user $(PYTEST) -v tests/harness/test_guest.py tests/harness/test_vfio_user_isolation.py
	@# Each row against its in-QEMU twin in the last make test's results;
	@# a twin that was not run is named (status 2), not a failure.
	/usr/bin/python3 tests/harness/frontends.py || [ $$? = 2 ]

test: build
	scripts/test

# A LAVA job per guest configuration (CONFIGS="a b": those alone), with the
# kernels and initramfs they fetch from $(LAVA_ARTIFACTS) (docs/lab.md).
lava-jobs: build
	/usr/bin/python3 tests/harness/lava.py jobs $(if $(LAVA_ARTIFACTS),--artifacts $(LAVA_ARTIFACTS)) $(CONFIGS)

# Needs only the results folders (and python3): a lab's merge job.
test-report:
	/usr/bin/python3 tests/harness/report.py --out $(or $(OUT),build/results/report) $(DIRS)

# The same: python3 and the results folders alone. ORIGIN and RUN_ID are
# read from the environment make gives the recipe (any characters in them
# reach kcidb.py as they are, to be judged there).
kcidb:
	/usr/bin/python3 tests/harness/kcidb.py --out $(or $(OUT),build/results/report/kcidb.json) \
		--origin "$${ORIGIN-aic100_virt}" --run-id "$${RUN_ID-}" $(or $(DIRS),build/results)

fuzz: setup
	scripts/fuzz

# QEMU's generic-fuzz on q35 with two cards, with and without intel-iommu
# (a clang build of QEMU in its own folder); FUZZ_SECONDS per configuration.
qemu-fuzz: build
	scripts/qemu-fuzz

# The generator is built with the host C++; its test (ctest fuzz-seeds) fails
# when the committed seeds are not what it makes.
fuzz-seeds: build
	rm -rf tests/fuzz/core/seeds
	$${AIC100_BUILD:-build}/cmake/tests/fuzz/aic100-fuzz-seeds --out tests/fuzz/core/seeds

# The same for generic-fuzz (ctest qemu-fuzz-seeds): tests/fuzz/qemu/seeds
# and tests/fuzz/qemu/aic100.dict.
qemu-fuzz-seeds: build
	rm -rf tests/fuzz/qemu/seeds
	$${AIC100_BUILD:-build}/cmake/tests/fuzz/aic100-qemu-fuzz-seeds --out tests/fuzz/qemu

fresh-root:
	scripts/fresh-root $(if $(CMD),-- bash -c '$(CMD)')

# The runner's tests run on the host (they make roots of their own).
test-fresh-root:
	@dpkg-query -W -f='$${Status}' python3-pytest 2>/dev/null | grep -q 'ok installed' || \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends python3-pytest >/dev/null
	$(PYTEST) -v tests/scripts/test_fresh_root.py

vm: build
	scripts/vm-run --cards 1

# Not part of test: it needs a checkout of the open UMD (UMD_SRC) and, on a
# machine without network, a folder with its third-party modules (UMD_DEPS).
# UMD_SRC is checked before anything is built.
ifneq ($(filter umd-test,$(MAKECMDGOALS)),)
ifeq ($(UMD_SRC),)
$(error make umd-test: give UMD_SRC=DIR, a checkout of the open UMD)
endif
endif
umd-test: build
	scripts/umd-test --umd-src '$(UMD_SRC)' $(if $(UMD_DEPS),--deps '$(UMD_DEPS)') $(UMD_TEST_ARGS)

# Long: see scripts/soak and docs/testing.md, "Soak".
soak: build
	scripts/soak $(SOAK_ARGS)

# checkpatch.pl comes from the linux-source tarball (scripts/build-upstream-qaic);
# its exit status is kept so that a script can tell clean from not. kbuild's
# generated *.mod.c is not ours.
# Benchmarks, with ratios against baselines from the same run (bench/run).
bench: build
	bench/run

checkpatch:
	scripts/build-upstream-qaic --extract-only
	$$(. scripts/lib.sh; echo "$$AIC_CACHE")/upstream-qaic/scripts/checkpatch.pl --strict --no-tree -f \
		$(filter-out %.mod.c,$(wildcard drivers/accel/qaic/*.[ch]))

clean:
	$(MAKE) -C $$(. scripts/lib.sh; kernel_headers) M=$(CURDIR) clean || true
	$(MAKE) -C $$(. scripts/lib.sh; kernel_headers) M=$(CURDIR)/tests/guest/kmod clean || true
	rm -rf build
