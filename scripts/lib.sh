# shellcheck shell=bash
# Shared helpers for the aic100-virt scripts. Source it, do not run it.

AIC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AIC_CACHE=${AIC100_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aic100-virt}
AIC_BUILD=${AIC100_BUILD:-$AIC_TOP/build}
QEMU_VERSION=10.0.2
QEMU_SRC=$AIC_CACHE/qemu/qemu-$QEMU_VERSION
QEMU_BUILD=$AIC_CACHE/qemu/build
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
KERNEL_CACHE=$AIC_CACHE/kernel

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The guest kernel release chosen by setup (e.g. 6.12.117+deb12-amd64).
kernel_release() {
	[ -f "$KERNEL_CACHE/current" ] || die "no guest kernel yet: run scripts/setup"
	cat "$KERNEL_CACHE/current"
}
kernel_root() { echo "$KERNEL_CACHE/$(kernel_release)/root"; }
kernel_image() { echo "$(kernel_root)/boot/vmlinuz-$(kernel_release)"; }
kernel_headers() { echo "$KERNEL_CACHE/$(kernel_release)/headers/usr/src/linux-headers-$(kernel_release)"; }
