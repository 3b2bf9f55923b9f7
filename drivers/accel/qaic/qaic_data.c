// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the data path over the card's DMA Bridge channels (DBCs). This
 * file slices buffer objects (BOs) for a DBC and releases what a DBC
 * held; the submission of BOs is in qaic_submit.c, their responses and
 * the DBC interrupts in qaic_irq.c, WAIT_BO and PERF_STATS_BO in
 * qaic_wait.c, the DBCs' debugfs files in qaic_debugfs.c. What those
 * files share is in qaic_data.h.
 *
 * DRM_IOCTL_QAIC_ATTACH_SLICE_BO maps a BO for one direction and describes
 * it as slices. Each slice becomes the list of 64-byte DMA requests the
 * card will run for it: one per DMA segment of the slice, with the device
 * addresses following on from the slice's dev_addr, the presync semaphore
 * on every request, and the post-transfer work (postsync semaphores,
 * doorbell, response) on the last one only. The BO is then bound to its
 * DBC until DRM_IOCTL_QAIC_DETACH_SLICE_BO or the DBC's release.
 *
 * Ioctls, the interrupt handlers and the polling work use a DBC's FIFOs
 * and BOs inside an SRCU read section of the DBC, after seeing it active. A
 * release (qaic_dbc.c) deactivates the DBC, waits for those readers and
 * then calls qaic_data_release_dbc(), which completes what was queued and
 * detaches what was sliced.
 *
 * While the card recovers a DBC from a crash (SSR, qaic_ssr.c), ATTACH,
 * EXECUTE, PARTIAL_EXECUTE and WAIT on it fail with -EPIPE, and so they do
 * afterwards for the user whose workload was lost, until the DBC is
 * assigned again. The SSR releases the DBC; the BOs it had queued complete
 * marked as dropped, and WAIT_BO fails with -EPIPE for them until they are
 * queued again.
 *
 * Locking order: qdev->dbc_lock, then bo->lock, then dbc->xfer_lock; SRCU
 * read sections never take dbc_lock. dbc->req_lock comes before bo->lock,
 * dbc->rsp_lock before dbc->xfer_lock. The hard interrupt handler takes
 * rsp_lock and xfer_lock: everyone else takes them with interrupts off.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "qaic.h"
#include "qaic_accel.h"
#include "qaic_data.h"

/* Request element: db_len. */
#define QAIC_DB_ENABLE		BIT(7)
#define QAIC_DB_32		0
#define QAIC_DB_16		1
#define QAIC_DB_8		2

/* Request element: sem_cmd. */
#define QAIC_SEM_VAL		GENMASK(11, 0)
#define QAIC_SEM_INDEX		GENMASK(20, 16)
#define QAIC_SEM_PRESYNC	BIT(22)
#define QAIC_SEM_CMD		GENMASK(26, 24)
#define QAIC_SEM_FENCE		GENMASK(30, 29)
#define QAIC_SEM_ENABLE		BIT(31)
#define QAIC_SEM_VAL_MAX	0xfff
#define QAIC_SEM_INDEX_MAX	0x1f

/*
 * The DMA segments of a mapped BO, for finding a slice's segments quickly:
 * segment i covers BO bytes [start[i], start[i + 1]) at bus address addr[i].
 */
struct qaic_segs {
	u32			n;
	u64			*start;
	dma_addr_t		*addr;
};

/* Where a slice lies among the segments, and what it asks for. */
struct qaic_slice_plan {
	u64			start;
	u64			end;
	u32			first;
	u32			nents;
	int			presync;	/* index of the presync semaphore, or -1 */
};

static void qaic_dbc_cleanup_srcu(struct drm_device *drm, void *data)
{
	struct qaic_dbc *dbc = data;

	cleanup_srcu_struct(&dbc->srcu);
}

int qaic_data_init_dbc(struct qaic_device *qdev, struct qaic_dbc *dbc)
{
	int ret;

	ret = init_srcu_struct(&dbc->srcu);
	if (ret)
		return ret;
	ret = drmm_add_action_or_reset(&qdev->drm, qaic_dbc_cleanup_srcu, dbc);
	if (ret)
		return ret;
	ret = drmm_mutex_init(&qdev->drm, &dbc->req_lock);
	if (ret)
		return ret;
	spin_lock_init(&dbc->xfer_lock);
	spin_lock_init(&dbc->rsp_lock);
	INIT_LIST_HEAD(&dbc->xfer_list);
	INIT_LIST_HEAD(&dbc->bos);
	INIT_WORK(&dbc->poll_work, qaic_dbc_poll_work);
	return 0;
}

/*
 * @dbc was just activated and the data path does not use it yet: learn
 * where the card left the pointers the host writes (0 after an
 * activation), which the data path then keeps without reading them back.
 */
void qaic_data_bind_dbc(struct qaic_dbc *dbc)
{
	dbc->req_tail = readl(dbc->regs + QAIC_REQTP);
	dbc->rsp_head = readl(dbc->regs + QAIC_RSPHP);
}

void qaic_data_init_bo(struct qaic_bo *bo)
{
	mutex_init(&bo->lock);
	INIT_LIST_HEAD(&bo->slices);
	INIT_LIST_HEAD(&bo->bo_node);
	INIT_LIST_HEAD(&bo->xfer_node);
	bo->dir = DMA_NONE;
	/* A BO never submitted is done: waiting for it returns at once. */
	init_completion(&bo->xfer_done);
	complete_all(&bo->xfer_done);
}

/* ---- ATTACH_SLICE_BO / DETACH_SLICE_BO ---- */

static bool qaic_sem_valid(const struct qaic_sem *sem)
{
	return sem->val <= QAIC_SEM_VAL_MAX && sem->index <= QAIC_SEM_INDEX_MAX &&
	       sem->presync <= 1 && !sem->pad &&
	       !(sem->flags & ~(QAIC_SEM_INSYNCFENCE | QAIC_SEM_OUTSYNCFENCE)) &&
	       sem->cmd <= QAIC_SEM_WAIT_GT_0;
}

static __le32 qaic_sem_encode(const struct qaic_sem *sem, u8 fence)
{
	u32 v;

	v = FIELD_PREP(QAIC_SEM_VAL, sem->val) | FIELD_PREP(QAIC_SEM_INDEX, sem->index) |
	    FIELD_PREP(QAIC_SEM_CMD, sem->cmd) | FIELD_PREP(QAIC_SEM_FENCE, sem->flags | fence);
	if (sem->presync)
		v |= QAIC_SEM_PRESYNC;
	if (sem->cmd)
		v |= QAIC_SEM_ENABLE;
	return cpu_to_le32(v);
}

static void qaic_slice_sems(const struct qaic_attach_slice_entry *ent,
			    const struct qaic_sem *sems[4])
{
	sems[0] = &ent->sem0;
	sems[1] = &ent->sem1;
	sems[2] = &ent->sem2;
	sems[3] = &ent->sem3;
}

/* The checks made on the entries before the BO is looked at. */
static int qaic_slices_validate(const struct qaic_attach_slice_entry *ents, u32 count,
				u64 bo_size)
{
	const struct qaic_sem *sems[4];
	u64 end;
	u32 i;
	int k;

	for (i = 0; i < count; i++) {
		if (ents[i].db_len != 0 && ents[i].db_len != 8 && ents[i].db_len != 16 &&
		    ents[i].db_len != 32)
			return -EINVAL;
		qaic_slice_sems(&ents[i], sems);
		for (k = 0; k < 4; k++)
			if (!qaic_sem_valid(sems[k]))
				return -EINVAL;
		if (check_add_overflow(ents[i].offset, ents[i].size, &end) || end > bo_size)
			return -EINVAL;
	}
	return 0;
}

static void qaic_segs_free(struct qaic_segs *segs)
{
	kvfree(segs->start);
	kvfree(segs->addr);
}

static int qaic_segs_init(struct qaic_segs *segs, struct sg_table *sgt)
{
	struct scatterlist *sg;
	u64 pos = 0;
	u32 n = 0;
	int i;

	segs->start = kvmalloc_array(sgt->nents + 1, sizeof(*segs->start), GFP_KERNEL);
	segs->addr = kvmalloc_array(sgt->nents, sizeof(*segs->addr), GFP_KERNEL);
	if (!segs->start || !segs->addr) {
		qaic_segs_free(segs);
		return -ENOMEM;
	}
	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (!sg_dma_len(sg))
			continue;
		segs->start[n] = pos;
		segs->addr[n] = sg_dma_address(sg);
		pos += sg_dma_len(sg);
		n++;
	}
	segs->start[n] = pos;
	segs->n = n;
	return 0;
}

/* The segment holding BO byte @off, which must lie inside the BO. */
static u32 qaic_segs_find(const struct qaic_segs *segs, u64 off)
{
	u32 lo = 0, hi = segs->n, mid;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (segs->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Check one slice as upstream does, in its order: the range must be found
 * among the segments (a slice of size 0 stands for the page at its offset),
 * the doorbell aligned to its size, at most one semaphore a presync.
 */
static int qaic_slice_plan(const struct qaic_segs *segs, const struct qaic_attach_slice_entry *ent,
			   struct qaic_slice_plan *plan)
{
	const struct qaic_sem *sems[4];
	u64 span = ent->size ? ent->size : PAGE_SIZE;
	u32 last;
	int k;

	plan->start = ent->offset;
	if (!segs->n || check_add_overflow(plan->start, span, &plan->end) ||
	    plan->end > segs->start[segs->n])
		return -EINVAL;
	plan->first = qaic_segs_find(segs, plan->start);
	last = qaic_segs_find(segs, plan->end - 1);
	plan->nents = last - plan->first + 1;

	if (ent->db_len && !IS_ALIGNED(ent->db_addr, ent->db_len / 8))
		return -EINVAL;

	plan->presync = -1;
	qaic_slice_sems(ent, sems);
	for (k = 0; k < 4; k++) {
		if (!sems[k]->presync)
			continue;
		if (plan->presync >= 0)
			return -EINVAL;
		plan->presync = k;
	}
	return 0;
}

static u8 qaic_db_len_encode(u32 db_len)
{
	switch (db_len) {
	case 32:
		return QAIC_DB_ENABLE | QAIC_DB_32;
	case 16:
		return QAIC_DB_ENABLE | QAIC_DB_16;
	case 8:
		return QAIC_DB_ENABLE | QAIC_DB_8;
	default:
		return 0;
	}
}

/* Build the requests of a planned slice. */
static struct qaic_slice *qaic_slice_build(const struct qaic_segs *segs,
					   const struct qaic_attach_slice_entry *ent,
					   const struct qaic_slice_plan *plan,
					   enum dma_data_direction dir)
{
	const struct qaic_sem *sems[4];
	struct qaic_dbc_req *req;
	struct qaic_slice *slice;
	u64 dev_addr = ent->dev_addr, lo, hi;
	dma_addr_t host;
	u8 cmd, fence = 0;
	u32 i, s;
	int k;

	slice = kzalloc(sizeof(*slice), GFP_KERNEL);
	if (!slice)
		return NULL;
	slice->reqs = kvcalloc(plan->nents, sizeof(*slice->reqs), GFP_KERNEL);
	if (!slice->reqs) {
		kfree(slice);
		return NULL;
	}
	slice->offset = ent->offset;
	slice->size = ent->size;
	slice->nents = plan->nents;

	cmd = QAIC_CMD_BULK;
	if (ent->size)
		cmd |= dir == DMA_TO_DEVICE ? QAIC_CMD_TO_DEV : QAIC_CMD_FROM_DEV;
	qaic_slice_sems(ent, sems);

	for (i = 0; i < plan->nents; i++) {
		s = plan->first + i;
		lo = max(segs->start[s], plan->start);
		hi = min(segs->start[s + 1], plan->end);
		host = segs->addr[s] + (lo - segs->start[s]);
		req = &slice->reqs[i];
		req->cmd = cmd;
		req->src_addr = cpu_to_le64(dir == DMA_TO_DEVICE ? host : dev_addr);
		req->dest_addr = cpu_to_le64(dir == DMA_TO_DEVICE ? dev_addr : host);
		/* DMA segments are at most UINT_MAX bytes (dma_set_max_seg_size). */
		req->len = cpu_to_le32(hi - lo);
		/* The presync holds every request until the receiver is ready. */
		if (plan->presync >= 0)
			req->sem_cmd[plan->presync] = qaic_sem_encode(sems[plan->presync], 0);
		dev_addr += hi - lo;
	}

	/* What follows the transfer goes with the last request only. */
	req = &slice->reqs[plan->nents - 1];
	req->cmd |= QAIC_CMD_RESPONSE;
	req->db_addr = cpu_to_le64(ent->db_addr);
	req->db_len = qaic_db_len_encode(ent->db_len);
	req->db_data = cpu_to_le32(ent->db_data);
	/*
	 * Without a presync nothing orders the last request after the others
	 * of the slice: fence it behind their transfers.
	 */
	if (plan->nents > 1 && plan->presync < 0)
		fence = dir == DMA_TO_DEVICE ? QAIC_SEM_INSYNCFENCE : QAIC_SEM_OUTSYNCFENCE;
	for (k = 0; k < 4; k++)
		req->sem_cmd[k] = qaic_sem_encode(sems[k], k == 0 ? fence : 0);
	return slice;
}

static void qaic_slice_free(struct qaic_slice *slice)
{
	list_del(&slice->node);
	kvfree(slice->reqs);
	kfree(slice);
}

static void qaic_bo_free_slices(struct qaic_bo *bo)
{
	struct qaic_slice *slice, *tmp;

	list_for_each_entry_safe(slice, tmp, &bo->slices, node)
		qaic_slice_free(slice);
}

/*
 * Slice @bo (locked, not sliced) for @dbc, which the caller saw owned in an
 * SRCU read section it still holds. On success the BO is bound to the DBC.
 */
static int qaic_bo_slice(struct qaic_device *qdev, struct qaic_bo *bo, struct qaic_dbc *dbc,
			 const struct qaic_attach_slice_hdr *hdr,
			 const struct qaic_attach_slice_entry *ents)
{
	struct device *dev = &qdev->pdev->dev;
	enum dma_data_direction dir = hdr->dir;
	struct qaic_slice_plan *plans;
	struct qaic_segs segs = {};
	struct qaic_slice *slice;
	u64 total = 0;
	u32 i;
	int ret;

	ret = qaic_bo_dma_map(bo, dir);
	if (ret)
		return ret;
	ret = qaic_segs_init(&segs, bo->sgt);
	if (ret)
		goto err_unmap;
	/* An exporter's table that does not cover its dma-buf is no use. */
	if (segs.start[segs.n] < bo->base.size) {
		ret = -EFAULT;
		goto err_segs;
	}
	plans = kvcalloc(hdr->count, sizeof(*plans), GFP_KERNEL);
	if (!plans) {
		ret = -ENOMEM;
		goto err_segs;
	}

	/* Every check first, so that nothing big is built for a refused slicing. */
	for (i = 0; i < hdr->count; i++) {
		ret = qaic_slice_plan(&segs, &ents[i], &plans[i]);
		if (ret)
			goto err_plans;
		total += plans[i].nents;
	}
	if (total > dbc->fifo.nelem) {
		ret = -ENOSPC;
		goto err_plans;
	}

	for (i = 0; i < hdr->count; i++) {
		slice = qaic_slice_build(&segs, &ents[i], &plans[i], dir);
		if (!slice) {
			ret = -ENOMEM;
			goto err_slices;
		}
		list_add_tail(&slice->node, &bo->slices);
		cond_resched();
	}
	kvfree(plans);
	qaic_segs_free(&segs);

	bo->dir = dir;
	bo->dbc = dbc;
	bo->nr_slice = hdr->count;
	bo->total_slice_nents = total;
	bo->sliced = true;
	spin_lock_irq(&dbc->xfer_lock);
	list_add_tail(&bo->bo_node, &dbc->bos);
	spin_unlock_irq(&dbc->xfer_lock);
	/* The user fills a to-device BO before executing it. */
	if (dir == DMA_TO_DEVICE)
		dma_sync_sgtable_for_cpu(dev, bo->sgt, dir);
	return 0;

err_slices:
	qaic_bo_free_slices(bo);
err_plans:
	kvfree(plans);
err_segs:
	qaic_segs_free(&segs);
err_unmap:
	qaic_bo_dma_unmap(bo, dir);
	return ret;
}

/*
 * Undo qaic_bo_slice() for @bo, locked and not queued. This drops the
 * reference slicing took, so the caller must hold one of its own.
 */
static void qaic_bo_unslice(struct qaic_bo *bo)
{
	struct qaic_dbc *dbc = bo->dbc;

	lockdep_assert_held(&bo->lock);

	qaic_bo_free_slices(bo);
	qaic_bo_dma_unmap(bo, bo->dir);
	spin_lock_irq(&dbc->xfer_lock);
	list_del_init(&bo->bo_node);
	spin_unlock_irq(&dbc->xfer_lock);
	bo->sliced = false;
	bo->dbc = NULL;
	bo->dir = DMA_NONE;
	bo->nr_slice = 0;
	bo->total_slice_nents = 0;
	drm_gem_object_put(&bo->base);
}

int qaic_attach_slice_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr = file->driver_priv;
	struct qaic_attach_slice *args = data;
	struct qaic_attach_slice_hdr *hdr = &args->hdr;
	struct qaic_attach_slice_entry *ents;
	struct drm_gem_object *obj;
	struct qaic_dbc *dbc;
	struct qaic_bo *bo;
	int ret, idx, srcu;
	size_t size;

	if (!hdr->count)
		return -EINVAL;
	if (check_mul_overflow((size_t)hdr->count, sizeof(*ents), &size))
		return -EINVAL;
	if (hdr->dir != DMA_TO_DEVICE && hdr->dir != DMA_FROM_DEVICE)
		return -EINVAL;
	if (!args->data)
		return -EINVAL;
	ret = qaic_data_enter(qdev, &idx);
	if (ret)
		return ret;
	if (hdr->dbc_id >= QAIC_NUM_DBC) {
		ret = -EINVAL;
		goto out_exit;
	}
	dbc = &qdev->dbc[hdr->dbc_id];

	/* As upstream, an entry array that cannot be allocated is -EINVAL. */
	ents = kzalloc(size, GFP_KERNEL | __GFP_NOWARN);
	if (!ents) {
		ret = -EINVAL;
		goto out_exit;
	}
	if (copy_from_user(ents, u64_to_user_ptr(args->data), size)) {
		ret = -EFAULT;
		goto out_free;
	}

	obj = drm_gem_object_lookup(file, hdr->handle);
	if (!obj) {
		ret = -ENOENT;
		goto out_free;
	}
	ret = qaic_slices_validate(ents, hdr->count, obj->size);
	if (ret)
		goto out_put;

	bo = to_qaic_bo(obj);
	ret = mutex_lock_interruptible(&bo->lock);
	if (ret)
		goto out_put;
	if (bo->sliced) {
		ret = -EINVAL;
		goto out_unlock;
	}
	srcu = srcu_read_lock(&dbc->srcu);
	ret = qaic_dbc_check(dbc, usr, -EINVAL);
	if (!ret)
		ret = qaic_bo_slice(qdev, bo, dbc, hdr, ents);
	srcu_read_unlock(&dbc->srcu, srcu);
	/* A sliced BO keeps the reference of the lookup until it is detached. */
	if (!ret)
		obj = NULL;
out_unlock:
	mutex_unlock(&bo->lock);
out_put:
	drm_gem_object_put(obj);
out_free:
	kfree(ents);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

int qaic_detach_slice_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr = file->driver_priv;
	struct qaic_detach_slice *args = data;
	struct drm_gem_object *obj;
	struct qaic_dbc *dbc;
	struct qaic_bo *bo;
	int ret, idx, srcu;
	bool queued;

	if (args->pad)
		return -EINVAL;
	ret = qaic_data_enter(qdev, &idx);
	if (ret)
		return ret;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj) {
		ret = -ENOENT;
		goto out_exit;
	}
	bo = to_qaic_bo(obj);
	ret = mutex_lock_interruptible(&bo->lock);
	if (ret)
		goto out_put;
	if (!bo->sliced) {
		ret = -EINVAL;
		goto out_unlock;
	}

	dbc = bo->dbc;
	srcu = srcu_read_lock(&dbc->srcu);
	if (!qaic_dbc_owned(dbc, usr)) {
		ret = -EINVAL;
	} else {
		spin_lock_irq(&dbc->xfer_lock);
		queued = !list_empty(&bo->xfer_node);
		spin_unlock_irq(&dbc->xfer_lock);
		if (queued)
			ret = -EBUSY;
		else
			qaic_bo_unslice(bo);
	}
	srcu_read_unlock(&dbc->srcu, srcu);
out_unlock:
	mutex_unlock(&bo->lock);
out_put:
	drm_gem_object_put(obj);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

/* ---- Release ---- */

/*
 * @dbc is being released and nothing uses it any more (see
 * qaic_dbc_release_locked()): every queued BO completes, which wakes its
 * waiters and signals its fence, and every sliced BO is unmapped and
 * detached. With @ssr the queued BOs are marked as dropped by an SSR.
 */
void qaic_data_release_dbc(struct qaic_dbc *dbc, bool ssr)
{
	struct device *dev = &dbc->qdev->pdev->dev;
	struct qaic_bo *bo;

	/* Before any waiter can wake up. */
	WRITE_ONCE(dbc->releases, dbc->releases + 1);
	spin_lock_irq(&dbc->xfer_lock);
	while ((bo = list_first_entry_or_null(&dbc->xfer_list, struct qaic_bo, xfer_node))) {
		list_del_init(&bo->xfer_node);
		bo->nr_slice_done = 0;
		if (ssr)
			WRITE_ONCE(bo->ssr_aborted, true);
		memset(&bo->perf, 0, sizeof(bo->perf));
		dma_sync_sgtable_for_cpu(dev, bo->sgt, bo->dir);
		qaic_fence_signal(bo, ssr ? -EPIPE : -ECANCELED);
		complete_all(&bo->xfer_done);
	}
	while ((bo = list_first_entry_or_null(&dbc->bos, struct qaic_bo, bo_node))) {
		list_del_init(&bo->bo_node);
		drm_gem_object_get(&bo->base);
		spin_unlock_irq(&dbc->xfer_lock);
		mutex_lock(&bo->lock);
		if (bo->sliced && bo->dbc == dbc)
			qaic_bo_unslice(bo);
		mutex_unlock(&bo->lock);
		drm_gem_object_put(&bo->base);
		spin_lock_irq(&dbc->xfer_lock);
	}
	spin_unlock_irq(&dbc->xfer_lock);
}
