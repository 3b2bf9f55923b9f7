# shellcheck shell=bash
# What both guest inits do: scripts/guest/init (PID 1 on the host's root
# over 9p, under scripts/vm-run) and scripts/guest/lava-init (PID 1 of a
# LAVA job's initramfs, tests/harness/lava.py). Sourced, not run.

# The mounts a test program expects beyond /proc, /sys and /dev, and fresh,
# empty state where a machine has its own.
guest_mounts() {
	local d
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	for d in /run /mnt /var/log /var/cache; do
		mkdir -p "$d"
		mount -t tmpfs -o mode=0755 tmpfs "$d"
	done
	mkdir -p /tmp /var/tmp
	chmod 1777 /tmp /var/tmp
	hostname aic100-guest
	echo 1 >/proc/sys/kernel/sysrq
	echo 0 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	ip link set lo up 2>/dev/null
	# A kernel with kmemleak (scripts/build-kernel --config debug): what the
	# kernel's own boot left unreferenced is not the run's to answer for.
	[ -w "$KMEMLEAK" ] && echo clear >"$KMEMLEAK"
}
KMEMLEAK=/sys/kernel/debug/kmemleak

# Whether the kernel oopsed (taint flag D, 128).
oopsed() { [ $(($(cat /proc/sys/kernel/tainted) & 128)) != 0 ]; }

# kmemleak's verdict on the run: two scans (an object is reported once it
# was unreferenced in a scan and older than five seconds), the kernel's
# summary line in its log and the objects with their allocation traces
# here. Not after an oops, whose dead task holds what it held.
report_leaks() {
	[ -w "$KMEMLEAK" ] && ! oopsed || return 0
	echo scan >"$KMEMLEAK" && echo scan >"$KMEMLEAK" || return 0
	# A debugfs file's size is 0 whatever it holds: read it.
	local leaks
	leaks=$(cat "$KMEMLEAK")
	if [ -n "$leaks" ]; then
		echo "aic100-guest: kmemleak reports:"
		printf '%s\n' "$leaks"
	fi
}

# Powers the machine off; never returns (PID 1 must not exit).
power_off() {
	sync
	# After an oops the power-off path can wait for ever on what the dead
	# task held (e.g. a device lock): restart at once instead, which ends
	# QEMU as well (-no-reboot).
	oopsed && echo b >/proc/sysrq-trigger
	echo o >/proc/sysrq-trigger
	# A loaded guest can take a while to power off.
	while :; do sleep 1; done
}

# load_driver MODULE ARGS...: qaic with its parameters, after drm and the
# MHI host stack from the guest kernel.
load_driver() {
	local module=$1
	shift
	modprobe -a drm mhi && insmod "$module" "$@"
}
