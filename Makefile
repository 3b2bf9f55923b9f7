# aic100-virt: a virtual Qualcomm Cloud AI 100 for QEMU and its qaic driver.
#
#   make demo    set up (as root: packages, guest kernel, QEMU), build, boot a
#                guest with two cards, load qaic and show the cards
#   make test    set up, build, run the unit tests and the in-guest suites
#
# Other targets: setup, build, unit, guest-test, vm (interactive guest), clean,
# checkpatch (upstream's checkpatch.pl --strict over our driver; informational),
# soak (one guest: 1000 SSRs, 100 module reloads and 100 resets under load,
# then nothing leaked; SOAK_ARGS="--crashes N ..." for other counts),
# fresh-root (the two commands above in a pristine Debian root, as a new user
# runs them; CMD="..." runs something else there), test-fresh-root (the
# runner's own tests).

PYTEST := /usr/bin/python3 -m pytest

.PHONY: all setup build demo test unit guest-test vm clean checkpatch bench fresh-root test-fresh-root soak

all: build

setup:
	scripts/setup

build: setup
	scripts/build

demo: build
	scripts/demo

unit: build
	cd build/cmake && ctest --output-on-failure

guest-test: build
	$(PYTEST) -v tests/harness

test: build
	cd build/cmake && ctest --output-on-failure
	$(PYTEST) -v tests/harness

fresh-root:
	scripts/fresh-root $(if $(CMD),-- bash -c '$(CMD)')

# The runner's tests run on the host (they make roots of their own).
test-fresh-root:
	@dpkg-query -W -f='$${Status}' python3-pytest 2>/dev/null | grep -q 'ok installed' || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pytest >/dev/null
	$(PYTEST) -v tests/scripts

vm: build
	scripts/vm-run --cards 1

# Long: see scripts/soak and README.md, "Soak".
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
	rm -rf build
