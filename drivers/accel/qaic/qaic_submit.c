// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the submission of BOs to a DBC (see qaic_data.c for the data
 * path).
 *
 * DRM_IOCTL_QAIC_EXECUTE_BO (and PARTIAL_EXECUTE_BO, which cuts every slice
 * at a byte count) copies the requests of a list of BOs into the DBC's
 * request FIFO after REQTP and rings the card with one REQTP write. Every
 * request of one BO submission carries the same request id, taken from a
 * 16-bit counter per DBC; the card answers each slice with a response
 * holding that id. A BO is complete when all of its slices are answered;
 * DRM_IOCTL_QAIC_WAIT_BO sleeps until then.
 *
 * A BO that other drivers see (an imported dma-buf, or one of ours
 * exported) is synchronised with them through its reservation object:
 * EXECUTE_BO waits for their fences first, and the card's access is
 * published as a fence of its own (qaic_fence.c).
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "qaic.h"
#include "qaic_accel.h"
#include "qaic_data.h"

/* One entry of an execute ioctl, either layout, and its BO (NULL: none). */
struct qaic_exec_ent {
	u32			handle;
	u64			resize;
	struct drm_gem_object	*obj;
};

/* Free elements of a FIFO of @n elements; one always stays empty. */
static u32 qaic_fifo_space(u32 head, u32 tail, u32 n)
{
	return head > tail ? head - tail - 1 : n - (tail - head) - 1;
}

/* Put one request with @req_id at *tail and advance it. */
static void qaic_fifo_put(struct qaic_dbc *dbc, u32 *tail, const struct qaic_dbc_req *req,
			  u16 req_id)
{
	struct qaic_dbc_req *slot = (struct qaic_dbc_req *)dbc->req_q + *tail;

	memcpy(slot, req, sizeof(*slot));
	slot->req_id = cpu_to_le16(req_id);
	if (++*tail == dbc->fifo.nelem)
		*tail = 0;
}

/*
 * Make room for @n requests after @tail. *@head is the oldest request the
 * card may not have taken yet; the card's REQHP is read only when that
 * leaves too little room.
 */
static int qaic_fifo_room(struct qaic_dbc *dbc, u32 *head, u32 tail, u32 n)
{
	u32 nelem = dbc->fifo.nelem;
	u32 h;

	if (qaic_fifo_space(*head, tail, nelem) >= n)
		return 0;
	h = readl(dbc->regs + QAIC_REQHP);
	if (h == U32_MAX)
		return -ENODEV;		/* the link is down */
	if (h >= nelem)
		return -EIO;
	*head = h;
	return qaic_fifo_space(h, tail, nelem) >= n ? 0 : -EAGAIN;
}

static int qaic_queue_slice(struct qaic_dbc *dbc, const struct qaic_slice *slice, u32 *head,
			    u32 *tail, u16 req_id)
{
	int ret;
	u32 i;

	ret = qaic_fifo_room(dbc, head, *tail, slice->nents);
	if (ret)
		return ret;
	for (i = 0; i < slice->nents; i++)
		qaic_fifo_put(dbc, tail, &slice->reqs[i], req_id);
	return 0;
}

/*
 * Queue the first @bytes of a slice: the requests that move whole, then the
 * last one, carrying the slice's post-transfer work, cut to what is left.
 * With @bytes 0 that is a single request that moves nothing but still
 * answers, rings and signals.
 */
static int qaic_queue_slice_part(struct qaic_dbc *dbc, const struct qaic_slice *slice, u64 bytes,
				 u32 *head, u32 *tail, u16 req_id)
{
	struct qaic_dbc_req req;
	u64 left = bytes;
	u32 n = 0, i;
	int ret;

	while (n < slice->nents - 1 && left > le32_to_cpu(slice->reqs[n].len)) {
		left -= le32_to_cpu(slice->reqs[n].len);
		n++;
	}
	ret = qaic_fifo_room(dbc, head, *tail, n + 1);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		qaic_fifo_put(dbc, tail, &slice->reqs[i], req_id);

	req = slice->reqs[slice->nents - 1];
	req.src_addr = slice->reqs[n].src_addr;
	req.dest_addr = slice->reqs[n].dest_addr;
	req.len = cpu_to_le32(left);
	if (!left)
		req.cmd &= ~QAIC_CMD_XFER;
	qaic_fifo_put(dbc, tail, &req, req_id);
	return 0;
}

/*
 * Copy the requests of @bo (locked) for @dbc into the FIFO after *tail and
 * put the BO on @pending. Nothing is visible to the card until REQTP moves.
 */
static int qaic_bo_queue(struct qaic_dbc *dbc, struct qaic_bo *bo, const struct qaic_exec_ent *ent,
			 bool partial, u32 *head, u32 *tail, struct list_head *pending)
{
	const struct qaic_slice *slice;
	u16 req_id = dbc->next_req_id;
	bool queued;
	int ret;

	/* A BO runs on the DBC it was sliced for (upstream does not check that). */
	if (!bo->sliced || bo->dbc != dbc)
		return -EINVAL;
	if (partial && ent->resize > bo->base.size)
		return -EINVAL;
	spin_lock_irq(&dbc->xfer_lock);
	queued = !list_empty(&bo->xfer_node);
	spin_unlock_irq(&dbc->xfer_lock);
	if (queued)
		return -EINVAL;

	list_for_each_entry(slice, &bo->slices, node) {
		if (!partial || ent->resize >= slice->offset + slice->size)
			ret = qaic_queue_slice(dbc, slice, head, tail, req_id);
		else if (ent->resize <= slice->offset)
			ret = qaic_queue_slice_part(dbc, slice, 0, head, tail, req_id);
		else
			ret = qaic_queue_slice_part(dbc, slice, ent->resize - slice->offset,
						    head, tail, req_id);
		if (ret)
			return ret;
	}

	dbc->next_req_id++;
	spin_lock_irq(&dbc->xfer_lock);
	bo->req_id = req_id;
	list_add_tail(&bo->xfer_node, pending);
	spin_unlock_irq(&dbc->xfer_lock);
	return 0;
}

/* Take the BOs of a failed submission back off @pending. */
static void qaic_unqueue(struct qaic_dbc *dbc, struct list_head *pending)
{
	struct qaic_bo *bo;

	while (!list_empty(pending)) {
		bo = list_first_entry(pending, struct qaic_bo, xfer_node);
		spin_lock_irq(&dbc->xfer_lock);
		list_del_init(&bo->xfer_node);
		spin_unlock_irq(&dbc->xfer_lock);
	}
}

/*
 * The BOs of @pending, whose requests are all in the FIFO, go on @dbc's
 * transfer list: synced for the card, their completion state reset and
 * their times taken, @level requests being queued before the first.
 */
static void qaic_submit_commit(struct qaic_device *qdev, struct qaic_dbc *dbc,
			       struct list_head *pending, u64 received, u32 level)
{
	struct qaic_bo *bo;
	u64 submit;

	/* Queued BOs cannot be detached: their mappings stay. */
	list_for_each_entry(bo, pending, xfer_node)
		dma_sync_sgtable_for_device(&qdev->pdev->dev, bo->sgt, bo->dir);

	submit = ktime_get_ns();
	spin_lock_irq(&dbc->xfer_lock);
	list_for_each_entry(bo, pending, xfer_node) {
		bo->nr_slice_done = 0;
		bo->nr_failed = 0;
		bo->last_status = 0;
		WRITE_ONCE(bo->ssr_aborted, false);
		bo->perf.received_ns = received;
		bo->perf.submit_ns = submit;
		bo->perf.processed_ns = 0;
		bo->perf.queue_level_before = level;
		level += bo->total_slice_nents;
		reinit_completion(&bo->xfer_done);
	}
	list_splice_tail_init(pending, &dbc->xfer_list);
	spin_unlock_irq(&dbc->xfer_lock);
}

/*
 * With @dbc owned, in its SRCU read section and under its req_lock: queue
 * every BO of @ents, then ring the card once. On failure (or
 * QAIC_DEPS_CHANGED) nothing reaches the card.
 */
static int qaic_submit(struct qaic_device *qdev, struct qaic_dbc *dbc,
		       const struct qaic_exec_ent *ents, u32 count, bool partial, u64 received)
{
	u16 first_id = dbc->next_req_id;
	u32 nelem = dbc->fifo.nelem;
	u32 head, tail, level, i;
	struct qaic_bo *bo;
	LIST_HEAD(pending);
	bool idle;
	int ret;

	/*
	 * With nothing queued every request written so far was answered, so
	 * the card has taken them all: its REQHP is our tail, and submitting
	 * one BO at a time reads no register. Otherwise the card tells.
	 */
	tail = dbc->req_tail;
	if (tail >= nelem)
		return -EIO;
	spin_lock_irq(&dbc->xfer_lock);
	idle = list_empty(&dbc->xfer_list);
	spin_unlock_irq(&dbc->xfer_lock);
	if (idle) {
		head = tail;
	} else {
		head = readl(dbc->regs + QAIC_REQHP);
		if (head == U32_MAX)
			return -ENODEV;		/* the link is down */
		if (head >= nelem)
			return -EIO;
	}
	level = head <= tail ? tail - head : nelem - (head - tail);

	/* The lookups hold the BOs; once queued, their slicing does (qaic_dbc_handle_rsp()). */
	for (i = 0; i < count; i++) {
		if (!ents[i].obj) {
			ret = -ENOENT;
			goto err;
		}
		bo = to_qaic_bo(ents[i].obj);
		ret = mutex_lock_interruptible(&bo->lock);
		if (!ret) {
			ret = qaic_bo_queue(dbc, bo, &ents[i], partial, &head, &tail, &pending);
			mutex_unlock(&bo->lock);
		}
		if (ret)
			goto err;
	}
	/* The last step that may fail: what others see of the submission. */
	ret = qaic_fence_publish(dbc, &pending, count);
	if (ret)
		goto err;

	qaic_submit_commit(qdev, dbc, &pending, received, level);

	qaic_dbc_follow(dbc);
	/* Orders the requests in memory before the doorbell. */
	writel(tail, dbc->regs + QAIC_REQTP);
	dbc->req_tail = tail;
	if (datapath_polling)
		queue_work(system_long_wq, &dbc->poll_work);
	return 0;

err:
	dbc->next_req_id = first_id;
	qaic_unqueue(dbc, &pending);
	return ret;
}

/*
 * The entries of @args, copied in, each with its BO looked up (NULL when
 * there is none: qaic_submit() tells, in the order upstream does).
 */
static struct qaic_exec_ent *qaic_exec_ents(struct drm_file *file, const struct qaic_execute *args,
					    bool partial)
{
	struct qaic_partial_execute_entry *pe;
	struct qaic_execute_entry *fe;
	struct qaic_exec_ent *ents;
	size_t esize, size;
	void *buf;
	u32 i;

	esize = partial ? sizeof(*pe) : sizeof(*fe);
	if (!args->hdr.count || check_mul_overflow((size_t)args->hdr.count, esize, &size))
		return ERR_PTR(-EINVAL);
	/* At most what kmalloc gives (as upstream): a huge count must not eat memory. */
	buf = kmalloc(size, GFP_KERNEL | __GFP_NOWARN);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(buf, u64_to_user_ptr(args->data), size)) {
		ents = ERR_PTR(-EFAULT);
		goto out;
	}
	ents = kmalloc_array(args->hdr.count, sizeof(*ents), GFP_KERNEL | __GFP_NOWARN);
	if (!ents) {
		ents = ERR_PTR(-ENOMEM);
		goto out;
	}
	for (i = 0, pe = buf, fe = buf; i < args->hdr.count; i++) {
		ents[i].handle = partial ? pe[i].handle : fe[i].handle;
		ents[i].resize = partial ? pe[i].resize : 0;
		ents[i].obj = drm_gem_object_lookup(file, ents[i].handle);
	}
out:
	kfree(buf);
	return ents;
}

static void qaic_exec_ents_free(struct qaic_exec_ent *ents, u32 count)
{
	u32 i;

	for (i = 0; i < count; i++)
		drm_gem_object_put(ents[i].obj);
	kfree(ents);
}

/* One attempt at submitting @ents to DBC @dbc_id: qaic_submit()'s answer. */
static int qaic_execute_once(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id,
			     const struct qaic_exec_ent *ents, u32 count, bool partial,
			     u64 received)
{
	struct qaic_dbc *dbc;
	int ret, idx, srcu;

	ret = qaic_data_enter(qdev, &idx);
	if (ret)
		return ret;
	if (dbc_id >= QAIC_NUM_DBC) {
		ret = -EINVAL;
		goto out_exit;
	}
	dbc = &qdev->dbc[dbc_id];

	srcu = srcu_read_lock(&dbc->srcu);
	ret = qaic_dbc_check(dbc, usr, -EPERM);
	if (ret)
		goto out_srcu;
	ret = mutex_lock_interruptible(&dbc->req_lock);
	if (ret)
		goto out_srcu;
	ret = qaic_submit(qdev, dbc, ents, count, partial, received);
	mutex_unlock(&dbc->req_lock);
out_srcu:
	srcu_read_unlock(&dbc->srcu, srcu);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

/*
 * Before the card may touch a BO that others see, they must be done with
 * it (qaic_fence.c): that is waited for first, holding nothing, for at most
 * wait_exec_default_timeout_ms (then -ETIMEDOUT, nothing submitted), so
 * that neither other submitters nor a release wait behind a producer.
 */
static int qaic_execute(struct drm_device *drm, void *data, struct drm_file *file, bool partial)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_execute *args = data;
	u64 received = ktime_get_ns();
	u32 dbc_id = args->hdr.dbc_id, count = args->hdr.count, i;
	struct qaic_user *usr = file->driver_priv;
	struct qaic_exec_ent *ents;
	struct qaic_dbc *dbc;
	long left;
	int ret;

	ents = qaic_exec_ents(file, args, partial);
	if (IS_ERR(ents))
		return PTR_ERR(ents);
	dbc = dbc_id < QAIC_NUM_DBC ? &qdev->dbc[dbc_id] : NULL;
	left = msecs_to_jiffies(READ_ONCE(wait_exec_default_timeout_ms));
	do {
		for (i = 0, ret = 0; i < count && !ret; i++)
			if (ents[i].obj)
				ret = qaic_fence_wait_bo(to_qaic_bo(ents[i].obj), dbc, &left);
		if (!ret)
			ret = qaic_execute_once(qdev, usr, dbc_id, ents, count, partial, received);
	} while (ret == QAIC_DEPS_CHANGED);
	qaic_exec_ents_free(ents, count);
	return ret;
}

int qaic_execute_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	return qaic_execute(drm, data, file, false);
}

int qaic_partial_execute_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	return qaic_execute(drm, data, file, true);
}
