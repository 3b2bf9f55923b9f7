// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: DRM_IOCTL_QAIC_WAIT_BO, which sleeps until a BO submitted to a
 * DBC is complete, and DRM_IOCTL_QAIC_PERF_STATS_BO, the times of the
 * last submission of BOs (see qaic_data.c for the data path).
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/time64.h>
#include <linux/uaccess.h>

#include "qaic.h"
#include "qaic_accel.h"
#include "qaic_data.h"

unsigned int wait_exec_default_timeout_ms = 5000;
module_param(wait_exec_default_timeout_ms, uint, 0600);
MODULE_PARM_DESC(wait_exec_default_timeout_ms,
		 "Timeout of DRM_IOCTL_QAIC_WAIT_BO when the user gives none, and longest wait of EXECUTE_BO for other users of a shared BO, in ms (default 5000)");

int qaic_wait_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr = file->driver_priv;
	struct qaic_wait *args = data;
	struct drm_gem_object *obj;
	unsigned int releases;
	struct qaic_dbc *dbc;
	int ret, idx, srcu;
	long left;
	u32 ms;

	if (args->pad)
		return -EINVAL;
	ret = qaic_data_enter(qdev, &idx);
	if (ret)
		return ret;
	if (args->dbc_id >= QAIC_NUM_DBC) {
		drm_dev_exit(idx);
		return -EINVAL;
	}
	dbc = &qdev->dbc[args->dbc_id];

	srcu = srcu_read_lock(&dbc->srcu);
	/* A release after this point is seen below. */
	releases = READ_ONCE(dbc->releases);
	ret = qaic_dbc_check(dbc, usr, -EPERM);
	obj = NULL;
	if (ret != -EPIPE) {
		obj = drm_gem_object_lookup(file, args->handle);
		/* Dropped by an SSR: so it stays, even once the DBC is free again. */
		if (obj && READ_ONCE(to_qaic_bo(obj)->ssr_aborted))
			ret = -EPIPE;
		else if (!ret && !obj)
			ret = -ENOENT;
	}
	srcu_read_unlock(&dbc->srcu, srcu);
	/* Nothing is held while sleeping: a release or an unplug need not wait. */
	drm_dev_exit(idx);
	if (ret) {
		drm_gem_object_put(obj);
		return ret;
	}

	ms = args->timeout ? args->timeout : READ_ONCE(wait_exec_default_timeout_ms);
	left = wait_for_completion_interruptible_timeout(&to_qaic_bo(obj)->xfer_done,
							 msecs_to_jiffies(ms));
	if (!left) {
		ret = -ETIMEDOUT;
	} else {
		ret = left < 0 ? left : 0;
		/*
		 * The BO completed (or the wait ended) because the DBC went away,
		 * or the DBC went away while this task waited for the CPU after
		 * the BO completed. An SSR of the user's workload is EPIPE however
		 * quickly the card recovered the DBC, as in qaic_dbc_check().
		 */
		if (READ_ONCE(to_qaic_bo(obj)->ssr_aborted) || qaic_dbc_in_ssr(dbc)) {
			ret = -EPIPE;
		} else if (READ_ONCE(dbc->releases) != releases || !qaic_dbc_owned(dbc, usr)) {
			/* Pairs with the barrier in qaic_dbc_enter_ssr(). */
			smp_rmb();
			ret = READ_ONCE(dbc->lost_handle) == usr->handle ? -EPIPE : -EPERM;
		}
	}
	drm_gem_object_put(obj);
	return ret;
}

int qaic_perf_stats_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_perf_stats *args = data;
	struct qaic_perf_stats_entry *ents;
	struct drm_gem_object *obj;
	struct qaic_bo_perf perf;
	struct qaic_bo *bo;
	int ret, idx;
	size_t size;
	u32 i;

	ret = qaic_data_enter(qdev, &idx);
	if (ret)
		return ret;
	if (args->hdr.dbc_id >= QAIC_NUM_DBC) {
		ret = -EINVAL;
		goto out_exit;
	}
	size = array_size(args->hdr.count, sizeof(*ents));
	/* As upstream, a failed allocation is -EINVAL; a count of 0 does nothing. */
	ents = kvzalloc(size, GFP_KERNEL);
	if (!ents) {
		ret = -EINVAL;
		goto out_exit;
	}
	if (copy_from_user(ents, u64_to_user_ptr(args->data), size)) {
		ret = -EFAULT;
		goto out_free;
	}

	for (i = 0; i < args->hdr.count; i++) {
		obj = drm_gem_object_lookup(file, ents[i].handle);
		if (!obj) {
			ret = -ENOENT;
			goto out_free;
		}
		bo = to_qaic_bo(obj);
		/* Against a submission or completion under way. */
		perf.received_ns = READ_ONCE(bo->perf.received_ns);
		perf.submit_ns = READ_ONCE(bo->perf.submit_ns);
		perf.processed_ns = READ_ONCE(bo->perf.processed_ns);
		ents[i].queue_level_before = READ_ONCE(bo->perf.queue_level_before);
		ents[i].num_queue_element = READ_ONCE(bo->total_slice_nents);
		ents[i].submit_latency_us = perf.submit_ns >= perf.received_ns ?
			div_u64(perf.submit_ns - perf.received_ns, NSEC_PER_USEC) : 0;
		/* Not complete yet (or never submitted): no device latency. */
		ents[i].device_latency_us = perf.processed_ns >= perf.submit_ns ?
			div_u64(perf.processed_ns - perf.submit_ns, NSEC_PER_USEC) : 0;
		drm_gem_object_put(obj);
	}
	if (copy_to_user(u64_to_user_ptr(args->data), ents, size))
		ret = -EFAULT;

out_free:
	kvfree(ents);
out_exit:
	drm_dev_exit(idx);
	return ret;
}
