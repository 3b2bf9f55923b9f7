/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: what differs between the kernels the driver is built for (Debian's
 * 6.12 and 7.3). Every difference is bridged here, in the newer kernel's
 * terms, so that the rest of the driver is written once against 7.3's API.
 * Tests are on the API itself where it can be seen by the preprocessor, so
 * that a stable kernel that backports a change needs nothing here.
 */
#ifndef QAIC_COMPAT_H_
#define QAIC_COMPAT_H_

#include <linux/sizes.h>
#include <linux/timer.h>
#include <linux/version.h>

/* 6.16 renamed from_timer() to timer_container_of(). */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

/*
 * MANAGE answers as the upstream qaic of the same kernel, which user space
 * built against that kernel sees. Upstream's encoder changed after 6.12:
 * "accel/qaic: Fix incorrect error return path" (6.19) and "accel/qaic:
 * rename constant for clarity" (posted in the same weeks; taken here to be
 * 6.19 too, not checked). Only 6.12 and 7.3 are tested. That is a
 * behaviour of upstream's driver, not an API the preprocessor can see, so
 * only the kernel's version tells:
 * - QAIC_MANAGE_KEEPS_ERRNO: a transaction's refusal is the ioctl's errno.
 *   Before, a refusal that leaves part of the user's message unencoded is
 *   reported as -EINVAL.
 * - QAIC_MANAGE_STATUS_ACT_ROOM: the wire message STATUS and ACTIVATE must
 *   fit in: the 64 KiB wire length, the 4 KiB user length before.
 */
#if LINUX_VERSION_MAJOR > 6 || (LINUX_VERSION_MAJOR == 6 && LINUX_VERSION_PATCHLEVEL >= 19)
#define QAIC_MANAGE_KEEPS_ERRNO		true
#define QAIC_MANAGE_STATUS_ACT_ROOM	SZ_64K
#else
#define QAIC_MANAGE_KEEPS_ERRNO		false
#define QAIC_MANAGE_STATUS_ACT_ROOM	SZ_4K
#endif

#endif /* QAIC_COMPAT_H_ */
