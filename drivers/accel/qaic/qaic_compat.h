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

#include <linux/timer.h>

/* 6.16 renamed from_timer() to timer_container_of(). */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, timer_fieldname) \
	from_timer(var, callback_timer, timer_fieldname)
#endif

#endif /* QAIC_COMPAT_H_ */
