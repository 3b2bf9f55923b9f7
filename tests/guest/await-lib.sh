# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the await-* guest scripts, the guest sides of the harness's
# tests that act from the host while a guest waits.

# wait_until CONDITION TENTHS: true once the command CONDITION succeeds,
# false when it has not within TENTHS tenths of a second.
wait_until() {
	local i
	for ((i = 0; i < $2; i++)); do
		$1 && return 0
		sleep 0.1
	done
	return 1
}

# online [CARD]: an accel node of CARD (a PCI device's sysfs folder; any
# card's when none is named) opens, which it does only once the card is
# ONLINE; that node goes into $node.
online() {
	local n dirs=${1:-/sys/bus/pci/devices/*}
	# shellcheck disable=SC2086 # the folders are a glob, sysfs has no spaces
	for n in $dirs/accel/accel*; do
		[ -e "$n" ] || continue
		(exec 3<"/dev/accel/${n##*/}") 2>/dev/null && { node=/dev/accel/${n##*/}; return 0; }
	done
	return 1
}

# first_aic100: the sysfs folder of the first AIC100 into $card; false when
# there is none.
first_aic100() {
	local d
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = 0x17cb ] && [ "$(cat "$d/device")" = 0xa100 ]; then
			card=$d
			return 0
		fi
	done
	return 1
}
