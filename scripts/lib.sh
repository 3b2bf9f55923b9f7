# shellcheck shell=bash
# Shared helpers for the aic100-virt scripts. Source it, do not run it.

AIC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# What the scripts take from their environment, checked once here so that a
# bare machine gets a clear message instead of a failure deep inside a step.
[ -n "${HOME:-}" ] && [ -d "$HOME" ] || [ -n "${AIC100_CACHE:-}" ] ||
	die "HOME is unset or not a directory: set HOME, or AIC100_CACHE to a cache folder"
if [ -n "${TMPDIR:-}" ] && ! { [ -d "$TMPDIR" ] && [ -w "$TMPDIR" ]; }; then
	die "TMPDIR=$TMPDIR is not a writable directory"
fi
# A minimal PATH (cron, env -i) may lack the sbin directories that hold
# depmod, modprobe and chroot.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin ;; esac
export PATH

AIC_CACHE=${AIC100_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aic100-virt}
AIC_BUILD=${AIC100_BUILD:-$AIC_TOP/build}

# ---- the host's Debian release -------------------------------------------------
# Debian 12 (bookworm) and Debian 13 (trixie) are supported hosts. What
# differs between them is named here, once (docs/setup.md, "Debian 12 and
# Debian 13"): QEMU's source (bookworm-backports' 10.0.2; trixie's own
# 10.0.13), the clang of the fuzzers, the guest 6.12 kernel's build (+deb12
# or +deb13), and whether modules for Debian 13's 7.3 need a Debian 13 root
# (scripts/kbuild-root) or build on the host.
# AIC100_OS_RELEASE: another os-release file, for the tests of this choice.
SUPPORTED_RELEASES="Debian 12 (bookworm) and Debian 13 (trixie)"
OS_RELEASE=${AIC100_OS_RELEASE:-/etc/os-release}
host_codename() { (. "$OS_RELEASE" && echo "${VERSION_CODENAME:-}"); }
HOST_RELEASE=$(host_codename 2>/dev/null || true)
# Dies with one line naming the supported releases on any other host.
check_host_release() {
	case "$HOST_RELEASE" in bookworm | trixie) return 0 ;; esac
	die "this host is $( (. "$OS_RELEASE" && echo "${PRETTY_NAME:-an unknown system}") 2>/dev/null ||
		echo 'not a system with an os-release file'): aic100-virt supports $SUPPORTED_RELEASES"
}
if [ "$HOST_RELEASE" = trixie ]; then
	QEMU_VERSION=10.0.13 QEMU_SUITE=trixie
	CLANG_VERSION=19 DEB_TAG=deb13 HOST_GCC=gcc-14
else
	QEMU_VERSION=10.0.2 QEMU_SUITE=bookworm-backports
	CLANG_VERSION=14 DEB_TAG=deb12 HOST_GCC=gcc-12
fi
# One QEMU tree per clone that builds its own device (AIC100_QEMU_DIR): the
# source tree links hw/misc/aic100 to one clone's qemu-device/.
QEMU_DIR=${AIC100_QEMU_DIR:-$AIC_CACHE/qemu}
QEMU_SRC=$QEMU_DIR/qemu-$QEMU_VERSION
QEMU_BUILD=$QEMU_DIR/build
# The host C++ (device core, unit tests, tools, guest programs).
CMAKE_BUILD=$AIC_BUILD/cmake

# AIC100_SANITIZE=1 (make SANITIZE=1 ...): QEMU and the host C++ are built
# with AddressSanitizer and UndefinedBehaviorSanitizer, each in a build
# directory of its own, so that the normal build stays as it is. Any report
# stops the process (SIGABRT) with its stack trace on stderr.
AIC_SANITIZE=${AIC100_SANITIZE:-0}
case "$AIC_SANITIZE" in 0 | 1 | thread) ;; *) die "AIC100_SANITIZE=$AIC_SANITIZE: 0, 1 or thread" ;; esac
if [ "$AIC_SANITIZE" = 1 ]; then
	QEMU_BUILD=$QEMU_DIR/build-asan
	CMAKE_BUILD=$AIC_BUILD/cmake-asan
fi
# AIC100_SANITIZE=thread (make SANITIZE=thread unit): the host C++ with
# ThreadSanitizer in build/cmake-tsan; QEMU stays the normal build
# (docs/reliability.md says why).
if [ "$AIC_SANITIZE" = thread ]; then
	CMAKE_BUILD=$AIC_BUILD/cmake-tsan
fi
# For the programs a sanitizer build runs (vm-run's QEMU, the unit tests):
# halt_on_error, as UBSan would otherwise carry on after a report, and
# abort_on_error, so that the run ends by SIGABRT, which ctest and the
# harness see as a crash. A caller's own options come after ours and win.
# ThreadSanitizer: the first report ends the program (abort, so that ctest
# sees a crash); tests/unit/tsan.supp holds the suppressions, each with its
# reason.
tsan_env() {
	export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$AIC_TOP/tests/unit/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
}
sanitizer_env() {
	export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:print_summary=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
}
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
# The devices in our QEMU builds (--with-devices-x86_64; the file says why
# each is there and how to add one).
QEMU_DEVICES=$AIC_TOP/scripts/qemu-configs/aic100.mak
KERNEL_CACHE=$AIC_CACHE/kernel

# Guest kernel series: Debian's 6.12 (the host release's build; the default)
# and Debian 13's 7.3 from trixie-backports. Setup fetches the newest release
# of each into $KERNEL_CACHE/<release>/ and names it in
# $KERNEL_CACHE/current-<series>.
# Wherever a series is asked for, a kernel built by scripts/build-kernel may
# be named instead by its output folder (which holds release, series, image,
# root/ and obj/).
KERNEL_SERIES_ALL=(6.12 7.3)
KERNEL_SERIES_DEFAULT=6.12
kernel_is_built() { case "$1" in */*) [ -f "$1/release" ] ;; *) false ;; esac; }
check_kernel_series() {
	case "$1" in 6.12 | 7.3) return 0 ;; esac
	kernel_is_built "$1" ||
		die "kernel '$1': 6.12, 7.3 or a folder made by scripts/build-kernel (scripts/build-kernel --print-dir)"
}
# The series a kernel belongs to: what decides its build root and the
# suites' expectations (a built 7.3 is a 7.3).
kernel_series() {
	local k=${1:-$KERNEL_SERIES_DEFAULT}
	check_kernel_series "$k"
	if kernel_is_built "$k"; then cat "$k/series"; else echo "$k"; fi
}
# A short name for file names: the series, or the built kernel's folder name.
kernel_tag() {
	local k=${1:-$KERNEL_SERIES_DEFAULT}
	if kernel_is_built "$k"; then basename "$k"; else echo "$k"; fi
}

# ---- what every guest gets (scripts/vm-run, and LAVA's jobs: tests/harness/lava.py) ----
# A TCG guest on a shared host is starved at times; the kernel's wall-clock
# watchdogs then report the host's load, not the guest's health:
# no_timer_check (its timer-IRQ check panics with interrupt remapping),
# nowatchdog (soft/hard lockup detector), and RCU stall warnings off. The
# guest's init also turns the hung-task detector off. A WARN or an Oops
# still shows. panic=-1: a panic ends the run at once (with -no-reboot).
GUEST_KERNEL_ARGS="panic=-1 rdinit=/init no_timer_check nowatchdog rcupdate.rcu_cpu_stall_suppress=1"
# Our QEMU installs no firmware blobs: Debian's seabios, qemu and ipxe.
GUEST_QEMU_FIRMWARE_ARGS="-L /usr/share/seabios -L /usr/share/qemu -L /usr/lib/ipxe/qemu"
# guest_iommu_args MSI: with 32 MSI, the IOMMU with interrupt remapping,
# which gives the guest multi-MSI and translates the cards' DMA (the guest
# needs intel_iommu=on); one argument per line, first among the devices.
# PROPS: more of the IOMMU's properties (caching-mode=on, which a vfio
# device behind it needs).
guest_iommu_args() {
	[ "$1" != 32 ] || printf '%s\n' -device "intel-iommu,intremap=on${2:+,$2}"
}
# guest_card_args CARDS TYPES OPTS: a root port per card and the card, its
# model taken in turn from the comma-separated TYPES, OPTS its extra
# properties; one argument per line, after the machine's other devices
# (the guest's bus numbers follow the order).
guest_card_args() {
	local cards=$1 opts=$3 i types
	IFS=, read -ra types <<<"$2"
	for ((i = 0; i < cards; i++)); do
		guest_root_port_args "$i"
		printf '%s\n' -device "${types[i % ${#types[@]}]},id=aic$i,bus=aicrp$i${opts:+,$opts}"
	done
}
# guest_root_port_args I: card I's root port, aicrp<I>, whichever the front end.
guest_root_port_args() {
	printf '%s\n' -device "pcie-root-port,id=aicrp$1,bus=pcie.0,chassis=$(($1 + 1)),slot=$(($1 + 1))"
}

# The release of a kernel (default 6.12), e.g. 6.12.117+deb12-amd64,
# 7.3.4+deb13-amd64 or 7.3.4-aic100-debug.
kernel_release() {
	local series=${1:-$KERNEL_SERIES_DEFAULT}
	check_kernel_series "$series"
	if kernel_is_built "$series"; then cat "$series/release"; return; fi
	[ -f "$KERNEL_CACHE/current-$series" ] || die "no $series guest kernel yet: run scripts/setup"
	cat "$KERNEL_CACHE/current-$series"
}
kernel_root() {
	if kernel_is_built "${1:-}"; then echo "$1/root"; else echo "$KERNEL_CACHE/$(kernel_release "$@")/root"; fi
}
# Debian 12 installs the image in /boot; Debian 13 in the modules folder.
kernel_image_in() {
	local root=$1 rel=$2
	if [ -f "$root/usr/lib/modules/$rel/vmlinuz" ]; then echo "$root/usr/lib/modules/$rel/vmlinuz"; else
		echo "$root/boot/vmlinuz-$rel"; fi
}
kernel_image() {
	if kernel_is_built "${1:-}"; then cat "$1/image"; else kernel_image_in "$(kernel_root "$@")" "$(kernel_release "$@")"; fi
}
# Where external modules build against the kernel (make -C).
kernel_headers() {
	if kernel_is_built "${1:-}"; then echo "$1/obj"; return; fi
	echo "$KERNEL_CACHE/$(kernel_release "$@")/headers/usr/src/linux-headers-$(kernel_release "$@")"
}
# The folders a module build for the kernel reads (bound into the build root).
kernel_build_dirs() {
	if kernel_is_built "${1:-}"; then echo "$1"; cat "$1/source"; return; fi
	dirname "$(dirname "$(dirname "$(kernel_headers "$@")")")"
}
# Debian 13's kbuild tools need its C library, and sources newer than 6.12
# its gcc-14: on a Debian 12 host, modules for those kernels are built in a
# Debian 13 root (scripts/kbuild-root), 6.12's on the host; a Debian 13 host
# builds them all itself.
kernel_needs_build_root() {
	[ "$HOST_RELEASE" = bookworm ] && [ "$(kernel_series "${1:-$KERNEL_SERIES_DEFAULT}")" != 6.12 ]
}
# Our module for a kernel: 6.12's is built in the tree, as it always was;
# the others' in a copy of the sources under the build folder (scripts/build-qaic).
module_path() {
	local series=${1:-$KERNEL_SERIES_DEFAULT}
	check_kernel_series "$series"
	if [ "$series" = 6.12 ]; then echo "$AIC_TOP/drivers/accel/qaic/qaic.ko"; else
		echo "$AIC_BUILD/kernel-$(kernel_tag "$series")/drivers/accel/qaic/qaic.ko"; fi
}
# Where upstream's qaic.ko for a kernel goes (scripts/build-upstream-qaic);
# a built kernel's own is among its modules.
upstream_build_dir() {
	local series=${1:-$KERNEL_SERIES_DEFAULT}
	check_kernel_series "$series"
	if [ "$series" = 6.12 ]; then echo "$AIC_BUILD/upstream"; else echo "$AIC_BUILD/upstream-$(kernel_tag "$series")"; fi
}

# Whether patch $2 (-p1) applies to the tree $1 ("applies"), is already in
# it ("carried": it applies in reverse and not forward) or neither
# ("conflicts"). A plain "patch -R --dry-run" is no test: on a tree without
# the patch it says "Unreversed patch detected! Ignoring -R." and succeeds.
patch_state() {
	local tree=$1 p=$2
	if patch -d "$tree" -p1 --dry-run --forward --batch -s <"$p" >/dev/null 2>&1; then
		echo applies
	elif patch -d "$tree" -p1 --dry-run --reverse --force -s <"$p" >/dev/null 2>&1; then
		echo carried
	else
		echo conflicts
	fi
}

# A module for a kernel with CONFIG_MODVERSIONS must carry the CRCs of the
# symbols it uses; without them the kernel loads it only by force, tainted
# 'F'. Dies if $1 (a .ko) lacks them where the headers $2 ask for them.
check_modversions() {
	local ko=$1 kdir=$2
	grep -q '^CONFIG_MODVERSIONS=y' "$kdir/include/config/auto.conf" || return 0
	local sections
	sections=$(LC_ALL=C readelf -SW "$ko") || die "readelf cannot read $ko"
	grep -Eq ' (__versions|__version_ext_crcs) ' <<<"$sections" ||
		die "$ko has no __versions section although $(basename "$kdir") has CONFIG_MODVERSIONS"
}

# The Debian archive URI and keyring that the system's apt sources use for
# the suite $1 (deb822 or one-line format); prints "URI KEYRING".
debian_archive() {
	local suite=$1 src=/etc/apt/sources.list.d/debian.sources uri="" keyring=""
	if [ -f "$src" ]; then
		read -r uri keyring < <(awk -v c="$suite" '
			/^URIs:/ { u=$2 } /^Signed-By:/ { k=$2 }
			/^Suites:/ { for (i=2;i<=NF;i++) if ($i==c) hit=1 }
			/^[ \t]*$/ { if (hit && !out) { out=u; ok=k } hit=0; u=""; k="" }
			END { if (hit && !out) { out=u; ok=k } print out, ok }' "$src")
	fi
	if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
		uri=$(awk -v c="$suite" '$1=="deb" && $3==c { print $2; exit }
			$1=="deb" && $2 ~ /^\[/ && $4==c { print $3; exit }' /etc/apt/sources.list)
	fi
	[ -n "$uri" ] || die "no Debian archive for $suite in the system's apt sources"
	echo "$uri ${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}"
}

# make_debian_base CODENAME INCLUDE MIRROR KEYRING TARBALL [HOOK]: a
# debootstrap --variant=minbase root of CODENAME with the packages INCLUDE
# (comma-separated), packed into TARBALL. HOOK, functions (space-separated),
# each called with the root's path and CODENAME before packing (apt
# configuration and the like). scripts/fresh-root makes its pristine base
# with it, debian_root the roots of kbuild-root, ort-root and lava-root.
# debootstrap_into CODENAME INCLUDE MIRROR KEYRING DIR [HOOKS]: a minbase
# root of CODENAME with the packages INCLUDE in DIR (made anew), each HOOK
# called with DIR and CODENAME, apt's downloads and package lists dropped.
debootstrap_into() {
	local codename=$1 include=$2 mirror=$3 keyring=$4 dir=$5 hook=${6:-} h
	command -v debootstrap >/dev/null || {
		log "installing debootstrap on the host"
		DEBIAN_FRONTEND=noninteractive apt_get install -y -qq --no-install-recommends debootstrap >/dev/null ||
			die "cannot install debootstrap"
	}
	rm -rf --one-file-system "$dir"
	mkdir -p "$dir"
	log "debootstrap $codename (minbase + $include) from $mirror"
	step "debootstrap $codename" debootstrap --variant=minbase --include="$include" --keyring="$keyring" \
		"$codename" "$dir" "$mirror"
	for h in $hook; do "$h" "$dir" "$codename"; done
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*_Packages
}

# make_debian_base CODENAME INCLUDE MIRROR KEYRING OUT [HOOKS]: the same root
# packed into the tarball OUT, for runners that unpack a new copy each run.
make_debian_base() {
	local out=$5 tmp
	# Names of this process's own: two runners may make the same base at
	# once (.ci/run's two roots, the runner's tests); the last rename wins.
	tmp=$out.tmp.$$.d
	debootstrap_into "$1" "$2" "$3" "$4" "$tmp" "${6:-}"
	log "packing the base into $out"
	tar -C "$tmp" --numeric-owner -czf "$out.tmp.$$" .
	mv "$out.tmp.$$" "$out"
	rm -rf --one-file-system "$tmp"
}

# debian_root CODENAME NAME INCLUDE [HOOK]: prints the path of a root of
# the Debian release CODENAME, from the host's archive, with the packages
# INCLUDE (comma-separated), made with debootstrap_into the first time and
# kept in $AIC_CACHE/NAME. HOOK, a function, is called with
# the new root's path after its apt sources are written (packages that
# debootstrap cannot resolve, say); its text is part of the cache key. A
# root of an earlier package list, hook or mirror is removed when a new one
# is made. scripts/kbuild-root (7.3 modules) and scripts/ort-root (ONNX
# Runtime) keep a Debian 13 one each, scripts/lava-root a Debian 12 one:
# nothing of them is installed on the host.
debian_root() {
	local codename=$1 name=$2 include=$3 hook=${4:-} mirror keyring key dir root old
	read -r mirror keyring < <(debian_archive "$(host_codename)")
	key=$(echo "$codename minbase $include $mirror $keyring${hook:+ $(declare -f "$hook")}" | sha256sum | cut -c1-12)
	dir=$AIC_CACHE/$name
	root=$dir/$codename-${name%-root}-$key
	if [ ! -f "$root/.complete" ]; then
		mkdir -p "$dir"
		# Made where it stays: a packed copy would only be unpacked again
		# (the LAVA root is 1.4 GB).
		debootstrap_into "$codename" "$include" "$mirror" "$keyring" "$root.new.$$" \
			"_debian_sources $hook" >&2
		rm -rf --one-file-system "$root"
		mv "$root.new.$$" "$root"
		touch "$root/.complete"
		for old in "$dir"/"$codename"-*; do
			[ "$old" = "$root" ] || rm -rf --one-file-system "$old"
		done
	fi
	echo "$root"
}
debian13_root() { debian_root trixie "$@"; }
# The root's apt sources: its own release from the host's archive.
_debian_sources() {
	local mirror keyring
	read -r mirror keyring < <(debian_archive "$(host_codename)")
	# Debian 12's keyring package has no .pgp file, which Debian 13's
	# sources may name: a root without the host's file uses its own.
	[ -e "$1$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
		"$mirror" "$2" "$keyring" >"$1/etc/apt/sources.list.d/debian.sources"
	rm -f "$1/etc/apt/sources.list"
}

# debian13_run ROOT [DIR...] -- CMD...: runs CMD in ROOT with each DIR of
# the host bound at the same path, in a mount namespace of its own: /proc,
# /dev, a /tmp tmpfs and the bound folders vanish with it, whatever way it
# ends, and two runs do not see each other's mounts.
debian13_run() {
	local root=$1
	shift
	# Making the namespace private needs / to be a mount point, which it
	# is not in a plain chroot.
	awk '$5 == "/" { found = 1 } END { exit !found }' /proc/self/mountinfo ||
		die "/ is not a mount point here (a chroot?): the root's private mounts need one; bind-mount the chroot's root onto itself first"
	unshare --mount --propagation private -- /bin/bash -euc '
		root=$1
		shift
		binds=()
		while [ "$1" != -- ]; do binds+=("$1"); shift; done
		shift
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
		for d in "${binds[@]}"; do
			mkdir -p "$root$d"
			mount --bind "$d" "$root$d"
		done
		exec chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
	' debian13-root "$root" "$@"
}

# debian_root_main CODENAME NAME INCLUDE HOOK [--bind DIR ...] [-- CMD...]:
# the command line of scripts/kbuild-root, ort-root and lava-root: makes
# the root if needed and, given a command, runs it there. Prints the
# calling script's header comment with -h.
debian_root_main() {
	local codename=$1 name=$2 include=$3 hook=$4 run=0 root
	local binds=()
	shift 4
	while [ $# -gt 0 ]; do
		case "$1" in
		--bind) binds+=("$(realpath "$2")"); shift 2 ;;
		--) run=1; shift; break ;;
		-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) die "usage: $0 [--bind DIR ...] [-- command [args...]]" ;;
		esac
	done
	[ $run = 0 ] || [ $# -gt 0 ] || die "-- needs a command"
	[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
	root=$(debian_root "$codename" "$name" "$include" "$hook")
	[ $run = 1 ] || return 0
	debian13_run "$root" "${binds[@]}" -- "$@"
}
debian13_root_main() { debian_root_main trixie "$1" "$2" "" "${@:3}"; }

# The log of the step LABEL.
step_log() { echo "$AIC_BUILD/logs/$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_').log"; }

# step LABEL CMD...: runs a long command with its output in a log, showing
# what it is doing and how far it is: a live line on a terminal, plain lines
# (at least every 20 s) otherwise. On failure, prints the log's tail and
# dies. ninja's [n/N], kbuild's "CC [M]", apt's Get/Unpacking/Setting up
# and pytest-like lines are recognised; any other line is shown as it is.
# start_beside NAME LOG CMD...: runs CMD, its output into LOG, at nice 10 in
# a session of its own, beside what the caller does next. Sets NAME_pid to
# that session's leader, a shell, and NAME_fd to the read end of a pipe
# only that shell writes to, "STATUS SECONDS" as it ends
# (tests/harness/beside.py waits for the build by reading it).
start_beside() {
	local name=$1 log=$2 fd
	shift 2
	exec {fd}< <(setsid nice -n 10 bash -c '"${@:2}" >"$1" 2>&1 </dev/null; echo "$? $SECONDS"' _ "$log" "$@")
	printf -v "${name}_pid" '%s' "$!"
	printf -v "${name}_fd" '%s' "$fd"
}

# Whether dpkg has package $1 installed (any selection: install or hold).
package_installed() {
	case "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" in
	*" ok installed") true ;;
	*) false ;;
	esac
}

# Another package job (unattended-upgrades, a user's apt) may hold the
# dpkg or apt lists lock. apt_get waits for it, bounded by
# AIC100_APT_LOCK_TIMEOUT seconds (default 600), and says who holds it,
# instead of failing at once: apt waits for dpkg's lock itself
# (DPkg::Lock::Timeout), but not for the lists' (apt-get update), so a run
# refused for a lock is run again once the holder may be done.
APT_LOCK_TIMEOUT=${AIC100_APT_LOCK_TIMEOUT:-600}
apt_get() {
	local deadline=$((SECONDS + APT_LOCK_TIMEOUT)) out rc holder
	out=$(mktemp)
	while :; do
		set +e
		apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@" 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		set -e
		if [ "$rc" = 0 ] || ! grep -q "Could not get lock" "$out" || [ "$SECONDS" -ge "$deadline" ]; then
			rm -f "$out"
			return "$rc"
		fi
		holder=$(grep -m1 -o 'held by process.*' "$out" || echo "held by another process")
		log "apt-get $*: the lock is $holder; waiting for it (at most $((deadline - SECONDS)) s more)"
		sleep 2
	done
}

step() {
	local label=$1 slog
	shift
	mkdir -p "$AIC_BUILD/logs"
	slog=$(step_log "$label")
	local rc=0 start=$SECONDS
	log "$label (log: $slog)"
	set +e
	"$@" </dev/null 2>&1 | tee "$slog" | _progress_filter "$label" "$start"
	rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" != 0 ]; then
		tail -n 40 "$slog" >&2
		die "$label failed (exit $rc; log: $slog)"
	fi
	log "$label: done in $((SECONDS - start))s"
}

_progress_filter() {
	local label=$1 start=$2 line status="" shown="" last_plain=$SECONDS last_live=0 tty=0 now
	[ -t 2 ] && tty=1
	while :; do
		if IFS= read -r -t 5 line; then
			case "$line" in
			\[[0-9]*/[0-9]*\]*)
				local n=${line#[} ; n=${n%%]*}
				status="${n} ($(( ${n%/*} * 100 / ${n#*/} ))%) ${line#*] }" ;;
			Get:*) status="download ${line#Get:}" ;;
			Unpacking* | Setting\ up* | Selecting*) status=$line ;;
			*" CC [M] "* | *" LD [M] "* | *" BTF [M] "* | *" MODPOST "*) status=$line ;;
			'') ;;
			*) status=$line ;;
			esac
		elif [ $? -le 128 ]; then
			break # end of input
		fi
		now=$SECONDS
		[ -n "$status" ] || status="(no output yet)"
		if [ $tty = 1 ]; then
			if [ "$now" != "$last_live" ]; then
				printf '\r\033[K[%s %ds] %.150s' "$label" $((now - start)) "$status" >&2
				last_live=$now
			fi
		elif [ "$status" != "$shown" ] && [ $((now - last_plain)) -ge 10 ] ||
			[ $((now - last_plain)) -ge 20 ]; then
			printf '[%s %ds] %.200s\n' "$label" $((now - start)) "$status" >&2
			shown=$status last_plain=$now
		fi
	done
	[ $tty = 1 ] && printf '\r\033[K' >&2
	return 0
}

# qemu_configure LABEL DIR CMD...: runs QEMU's configure, CMD, in the build
# folder DIR unless the same CMD configured it last. DIR keeps the command
# it was configured with, so that a folder configured before a change of
# our options (--with-devices, say) is configured again, not built the
# old way; QEMU's configure starts meson afresh and keeps the objects.
qemu_configure() {
	local label=$1 dir=$2 want stamp
	shift 2
	want=$(printf '%q ' "$@")
	stamp=$dir/aic100-configure.cmd
	if [ -f "$dir/build.ninja" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	[ -f "$dir/build.ninja" ] && log "$dir was configured otherwise: configuring it again"
	mkdir -p "$dir"
	rm -f "$stamp"
	(cd "$dir" && step "$label" "$@")
	printf '%s\n' "$want" >"$stamp"
}
