// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: implicit synchronisation of the BOs other drivers see.
 *
 * A BO whose reservation object is shared, an imported dma-buf or one of
 * ours exported, is read and written by others too, who say so with the
 * fences in that object. EXECUTE_BO follows the usual rules: before the
 * card reads such a BO it waits for the fences of its writers
 * (DMA_RESV_USAGE_WRITE), before the card writes it for every fence
 * (DMA_RESV_USAGE_READ). Then every such BO of the submission gets a fence
 * of its own, a write fence when the card writes it, a read fence when it
 * reads it, which signals when the card's last response for the BO comes
 * in (with -EIO when a request failed) or when the request is dropped: by
 * an SSR (-EPIPE), or by any other release of the DBC (-ECANCELED), which
 * card resets, unbinding and a user's close all go through. (A close the
 * card does not confirm leaves the DBC running without a user: its fences
 * signal with the card's responses, or at the card's reset.)
 *
 * The wait is done holding nothing (qaic_fence_wait_bo()); the fences are
 * checked again and the new ones added with every reservation object
 * locked (qaic_fence_publish()), under the DBC's req_lock, before the card
 * sees the requests. A fence that appeared in between sends the submitter
 * back to waiting.
 *
 * The card ends requests out of order (docs/dma-bridge.md), so each fence
 * has a context of its own. The fence and its lock are one allocation that
 * nothing else refers to; on 7.3 the core forgets the ops of a signalled
 * fence, so that one kept in another driver's dma-buf does not pin this
 * module's code (6.12 has no such thing: there, as with every driver's
 * fences, the module must stay loaded while such a dma-buf lives).
 */

#include <drm/drm_gem.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>

#include "qaic.h"

#define QAIC_FENCE_NAME_LEN	32	/* "<pci name> dbcNN" */

struct qaic_fence {
	struct dma_fence	base;
	spinlock_t		lock;		/* the fence's, nothing else */
	char			timeline[QAIC_FENCE_NAME_LEN];
};

static const char *qaic_fence_driver_name(struct dma_fence *fence)
{
	return QAIC_NAME;
}

static const char *qaic_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence, struct qaic_fence, base)->timeline;
}

static const struct dma_fence_ops qaic_fence_ops = {
	.get_driver_name	= qaic_fence_driver_name,
	.get_timeline_name	= qaic_fence_timeline_name,
};

/* Do others see the BO's reservation object? */
static bool qaic_bo_shared(struct qaic_bo *bo)
{
	return bo->base.import_attach || READ_ONCE(bo->base.dma_buf);
}

/* What the card must wait for before it moves @dir. */
static enum dma_resv_usage qaic_dep_usage(enum dma_data_direction dir)
{
	return dma_resv_usage_rw(dir == DMA_FROM_DEVICE);
}

/* How the card's own access in @dir is published. */
static enum dma_resv_usage qaic_card_usage(enum dma_data_direction dir)
{
	return dir == DMA_FROM_DEVICE ? DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ;
}

/*
 * Wait, interruptibly and for at most *@left jiffies, for what the card
 * must wait for before it moves @bo, if the BO is shared and sliced for
 * @dbc (any other fails to queue anyway). Holds no lock: the slicing may
 * change meanwhile, and qaic_fence_publish() checks again. Returns 0 with
 * *@left what is left of the time, -ETIMEDOUT or -ERESTARTSYS.
 */
int qaic_fence_wait_bo(struct qaic_bo *bo, const struct qaic_dbc *dbc, long *left)
{
	enum dma_data_direction dir = READ_ONCE(bo->dir);
	long ret;

	if (dir == DMA_NONE || !dbc || READ_ONCE(bo->dbc) != dbc || !qaic_bo_shared(bo))
		return 0;
	ret = dma_resv_wait_timeout(bo->base.resv, qaic_dep_usage(dir), true, *left);
	if (ret < 0)
		return ret;
	if (!ret)
		return -ETIMEDOUT;
	*left = ret;
	return 0;
}

static void qaic_fence_init(struct qaic_fence *f, struct qaic_dbc *dbc)
{
	spin_lock_init(&f->lock);
	snprintf(f->timeline, sizeof(f->timeline), "%s dbc%u", pci_name(dbc->qdev->pdev), dbc->id);
	dma_fence_init(&f->base, &qaic_fence_ops, &f->lock, dma_fence_context_alloc(1), 1);
}

/*
 * Check with the objects locked that nothing new must be waited for, make
 * room for a fence in each, then add them. 0, QAIC_DEPS_CHANGED, or an error.
 */
static int qaic_fence_add_locked(struct qaic_dbc *dbc, struct drm_gem_object **objs,
				 struct qaic_fence **fences, u32 n)
{
	struct qaic_bo *bo;
	u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		bo = to_qaic_bo(objs[i]);
		if (!dma_resv_test_signaled(objs[i]->resv, qaic_dep_usage(bo->dir)))
			return QAIC_DEPS_CHANGED;
		ret = dma_resv_reserve_fences(objs[i]->resv, 1);
		if (ret)
			return ret;
	}
	for (i = 0; i < n; i++) {
		bo = to_qaic_bo(objs[i]);
		qaic_fence_init(fences[i], dbc);
		dma_resv_add_fence(objs[i]->resv, &fences[i]->base, qaic_card_usage(bo->dir));
		/* The BO keeps the first reference until its fence signals. */
		bo->fence = &fences[i]->base;
		fences[i] = NULL;
	}
	return 0;
}

/*
 * The @count BOs on @pending (a submitter's private list, under @dbc's
 * req_lock, nothing rung yet): give each shared one its fence. On failure
 * nothing was added. Returns 0, QAIC_DEPS_CHANGED when a fence to wait for
 * appeared since qaic_fence_wait_bo(), or an error.
 */
int qaic_fence_publish(struct qaic_dbc *dbc, struct list_head *pending, u32 count)
{
	struct drm_gem_object **objs;
	struct qaic_fence **fences;
	struct ww_acquire_ctx ctx;
	struct qaic_bo *bo;
	u32 n = 0, i;
	int ret;

	/* Most submissions have none: nothing to allocate or lock then. */
	list_for_each_entry(bo, pending, xfer_node)
		if (qaic_bo_shared(bo))
			break;
	if (list_entry_is_head(bo, pending, xfer_node))
		return 0;
	objs = kmalloc_array(count, sizeof(*objs) + sizeof(*fences), GFP_KERNEL);
	if (!objs)
		return -ENOMEM;
	fences = (struct qaic_fence **)(objs + count);
	list_for_each_entry(bo, pending, xfer_node)
		if (qaic_bo_shared(bo) && n < count)
			objs[n++] = &bo->base;
	ret = 0;
	for (i = 0; i < n && !ret; i++) {
		fences[i] = kzalloc(sizeof(*fences[i]), GFP_KERNEL);
		if (!fences[i])
			ret = -ENOMEM;
	}
	if (!ret && n) {
		ret = drm_gem_lock_reservations(objs, n, &ctx);
		if (!ret) {
			ret = qaic_fence_add_locked(dbc, objs, fences, n);
			drm_gem_unlock_reservations(objs, n, &ctx);
		}
	}
	/* Those not added were never initialised: plain memory. */
	while (i--)
		kfree(fences[i]);
	kfree(objs);
	return ret;
}

/*
 * The card is done with @bo's submission, or it was dropped: signal its
 * fence, if it has one, with @error (0, or why the card's access did not
 * happen as asked). Under the DBC's xfer_lock, possibly in the hard
 * interrupt handler.
 */
void qaic_fence_signal(struct qaic_bo *bo, int error)
{
	struct dma_fence *fence = bo->fence;

	if (!fence)
		return;
	bo->fence = NULL;
	if (error)
		dma_fence_set_error(fence, error);
	dma_fence_signal(fence);
	dma_fence_put(fence);
}
