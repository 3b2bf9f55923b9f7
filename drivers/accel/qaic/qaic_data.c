// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the data path over the card's DMA Bridge channels (DBCs).
 *
 * DRM_IOCTL_QAIC_ATTACH_SLICE_BO maps a BO for one direction and describes
 * it as slices. Each slice becomes the list of 64-byte DMA requests the
 * card will run for it: one per DMA segment of the slice, with the device
 * addresses following on from the slice's dev_addr, the presync semaphore
 * on every request, and the post-transfer work (postsync semaphores,
 * doorbell, response) on the last one only. The BO is then bound to its
 * DBC until DRM_IOCTL_QAIC_DETACH_SLICE_BO or the DBC's release.
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
 *
 * Responses are noticed by the DBC's interrupt (MSI vector id + 1, or the
 * vector shared with MHI when there is only one), whose hard handler drains
 * the response FIFO (its thread only what is left past a batch), or with
 * datapath_polling=1 by a work item that watches RSPTP while BOs are queued
 * and hands over to the interrupt thread.
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
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/sched/isolation.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/srcu.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "qaic.h"
#include "qaic_accel.h"

/* DBC registers, in FIFO elements. */
#define QAIC_REQHP		0x0
#define QAIC_REQTP		0x4
#define QAIC_RSPHP		0x8
#define QAIC_RSPTP		0xc

/* Request element: cmd. */
#define QAIC_CMD_RESPONSE	BIT(4)
#define QAIC_CMD_BULK		BIT(3)
#define QAIC_CMD_XFER		GENMASK(1, 0)
#define QAIC_CMD_TO_DEV		1
#define QAIC_CMD_FROM_DEV	2

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

/* The interrupt thread: responses handled between reschedules. */
#define QAIC_RSP_BATCH		128

/* A DBC's interrupt follows its submitter at most this often. */
#define QAIC_IRQ_FOLLOW_MS	10

#define QAIC_DBC_NAME_LEN	8	/* "dbcNNN" */

static bool datapath_polling;
module_param(datapath_polling, bool, 0400);
MODULE_PARM_DESC(datapath_polling, "Poll for DMA Bridge responses instead of using interrupts (default 0)");

static unsigned int datapath_poll_interval_us = 100;
module_param(datapath_poll_interval_us, uint, 0600);
MODULE_PARM_DESC(datapath_poll_interval_us,
		 "Time between two polls of a DBC with datapath_polling, in us (default 100)");

static bool datapath_irq_follows;
module_param(datapath_irq_follows, bool, 0600);
MODULE_PARM_DESC(datapath_irq_follows,
		 "Steer a DBC's interrupt to the CPU that last submitted to it, within its affinity when requested and off isolated CPUs (default 0)");

static unsigned int wait_exec_default_timeout_ms = 5000;
module_param(wait_exec_default_timeout_ms, uint, 0600);
MODULE_PARM_DESC(wait_exec_default_timeout_ms,
		 "Timeout of DRM_IOCTL_QAIC_WAIT_BO when the user gives none, and longest wait of EXECUTE_BO for other users of a shared BO, in ms (default 5000)");

/* One element of a DBC's request FIFO (little-endian, in host memory). */
struct qaic_dbc_req {
	__le16	req_id;
	u8	seq_id;
	u8	cmd;
	__le32	resv0;
	__le64	src_addr;
	__le64	dest_addr;
	__le32	len;
	__le32	resv1;
	__le64	db_addr;
	u8	db_len;
	u8	resv2[3];
	__le32	db_data;
	__le32	sem_cmd[4];
};

static_assert(sizeof(struct qaic_dbc_req) == QAIC_DBC_REQ_ELEM_SIZE);
static_assert(offsetof(struct qaic_dbc_req, db_data) == 44);

/* One element of a DBC's response FIFO. */
struct qaic_dbc_rsp {
	__le16	req_id;
	__le16	status;
};

static_assert(sizeof(struct qaic_dbc_rsp) == QAIC_DBC_RSP_ELEM_SIZE);

/* A slice of a BO and the requests that move it. */
struct qaic_slice {
	struct list_head	node;	/* in bo->slices */
	u64			offset;
	u64			size;
	u32			nents;
	struct qaic_dbc_req	*reqs;
};

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

/* One entry of an execute ioctl, either layout, and its BO (NULL: none). */
struct qaic_exec_ent {
	u32			handle;
	u64			resize;
	struct drm_gem_object	*obj;
};

static struct dentry *qaic_debugfs_root;

static void qaic_dbc_poll_work(struct work_struct *work);

static bool qaic_dbc_is_active(struct qaic_dbc *dbc)
{
	/* Pairs with the release in qaic_dbc_bind(): the FIFOs are set up. */
	return smp_load_acquire(&dbc->active);
}

/* In an SRCU read section of @dbc: may @usr drive it? */
static bool qaic_dbc_owned(struct qaic_dbc *dbc, struct qaic_user *usr)
{
	return qaic_dbc_is_active(dbc) && READ_ONCE(dbc->usr) == usr;
}

/* Is the card recovering @dbc from a crash? */
static bool qaic_dbc_in_ssr(struct qaic_dbc *dbc)
{
	return READ_ONCE(dbc->state) >= QAIC_DBC_STATE_BEFORE_SHUTDOWN;
}

/*
 * In an SRCU read section of @dbc: 0 if @usr may drive it, -EPIPE while it
 * is under SSR, else @not_owned.
 */
static int qaic_dbc_check(struct qaic_dbc *dbc, struct qaic_user *usr, int not_owned)
{
	if (qaic_dbc_in_ssr(dbc))
		return -EPIPE;
	if (qaic_dbc_owned(dbc, usr))
		return 0;
	/* An SSR sets the state before it drops the user: see qaic_dbc_enter_ssr(). */
	smp_rmb();
	if (qaic_dbc_in_ssr(dbc) || READ_ONCE(dbc->lost_handle) == usr->handle)
		return -EPIPE;
	return not_owned;
}

/* The card must be there and ONLINE; on success the caller must drm_dev_exit(). */
static int qaic_data_enter(struct qaic_device *qdev, int *idx)
{
	if (!drm_dev_enter(&qdev->drm, idx))
		return -ENODEV;
	if (!READ_ONCE(qdev->online)) {
		drm_dev_exit(*idx);
		return -ENODEV;
	}
	return 0;
}

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

/* ---- EXECUTE_BO / PARTIAL_EXECUTE_BO ---- */

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
 * May a device interrupt be steered to @cpu? Not to one that isolcpus=
 * keeps out of the scheduler's domains or away from managed interrupts.
 * (The domain mask changes at run time on 7.3, under RCU.)
 */
static bool qaic_cpu_takes_irqs(int cpu)
{
	bool ok;

	rcu_read_lock();
	ok = housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN) &&
	     housekeeping_test_cpu(cpu, HK_TYPE_MANAGED_IRQ);
	rcu_read_unlock();
	return ok;
}

/*
 * Is the vector's affinity @now what this driver set, or on its way there?
 * A move is applied later at times, at the vector's next interrupt (an MSI
 * without interrupt remapping on x86): meanwhile the kernel marks it pending
 * and still shows where the vector was, which is where this driver had put
 * it before (@f->prev, until the move is seen done), or the affinity it had
 * when requested. Under @f->lock.
 */
static bool qaic_irq_follow_ours(struct qaic_irq_follow *f, const struct cpumask *now)
{
	if (cpumask_equal(now, f->home) || irqd_is_setaffinity_pending(f->data))
		return true;
	if (f->cpu >= 0 && cpumask_equal(now, cpumask_of(f->cpu)))
		return true;
	return f->prev >= 0 && cpumask_equal(now, cpumask_of(f->prev));
}

/* Has the last move of this driver taken effect? Under @f->lock. */
static bool qaic_irq_follow_done(struct qaic_irq_follow *f)
{
	return !irqd_is_setaffinity_pending(f->data) &&
	       cpumask_equal(irq_data_get_affinity_mask(f->data), cpumask_of(f->cpu));
}

/* Under @f->lock: steer the vector to @cpu, unless a move of ours is under way. */
static void qaic_irq_follow_move(struct qaic_irq_follow *f, const struct cpumask *now, int cpu)
{
	if (irqd_is_setaffinity_pending(f->data))
		return;
	if (f->cpu >= 0 && !cpumask_equal(now, f->home) && !cpumask_equal(now, cpumask_of(f->cpu)))
		return;		/* still where it was before the last move */
	/* Should it fail, the affinity stays, and so does the next check. */
	if (irq_set_affinity(f->data->irq, cpumask_of(cpu)))
		return;
	f->prev = f->cpu;
	f->cpu = cpu;
	if (qaic_irq_follow_done(f))
		f->prev = -1;	/* applied at once (interrupt remapping) */
}

/*
 * With datapath_irq_follows=1 (off by default), have @dbc's interrupt
 * delivered to this CPU, where the submitter will most likely wait for the
 * answer. A waiter woken on another CPU costs an IPI and that CPU's wake-up
 * first: under TCG, with one submitter, that is the difference between
 * 2.5x and 0.9x the rate of QEMU's NVMe, whose queues are per CPU
 * (docs/performance.md). At most every QAIC_IRQ_FOLLOW_MS, so that
 * submitters on several CPUs do not make it bounce.
 *
 * Never to a CPU outside the affinity the vector had when it was requested
 * (irqaffinity=, /proc/irq/default_smp_affinity) nor to an isolated one.
 * And the admin decides where it goes: while the vector's affinity is
 * neither that nor what was set here, someone else (the admin, irqbalance)
 * set it, and it stays; setting it back to what it was lets it follow
 * again. The affinity is read without the descriptor's lock, as /proc
 * reads it: a stale view only defers the decision to a later submission.
 */
static void qaic_dbc_follow(struct qaic_dbc *dbc)
{
	struct qaic_irq_follow *f = dbc->follow;
	int cpu = raw_smp_processor_id();
	const struct cpumask *now;

	if (!READ_ONCE(datapath_irq_follows) || datapath_polling || !f)
		return;
	if (!cpumask_test_cpu(cpu, f->home) || !qaic_cpu_takes_irqs(cpu))
		return;
	now = irq_data_get_affinity_mask(f->data);
	if (cpumask_equal(now, cpumask_of(cpu))) {
		/* Here already; a move that was pending is done. */
		if (READ_ONCE(f->prev) >= 0 && mutex_trylock(&f->lock)) {
			if (f->cpu == cpu && qaic_irq_follow_done(f))
				f->prev = -1;
			mutex_unlock(&f->lock);
		}
		return;
	}
	if (!mutex_trylock(&f->lock))
		return; /* another DBC of the vector is moving it */
	if (time_before(jiffies, f->moved + msecs_to_jiffies(QAIC_IRQ_FOLLOW_MS)))
		goto out;
	f->moved = jiffies;
	if (qaic_irq_follow_ours(f, now)) {
		f->kept = false;
		qaic_irq_follow_move(f, now, cpu);
	} else if (!f->kept) {
		pci_info(dbc->qdev->pdev, "interrupt %d: affinity %*pbl set elsewhere, kept\n",
			 f->data->irq, cpumask_pr_args(now));
		f->kept = true;
	}
out:
	mutex_unlock(&f->lock);
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
	u64 submit;
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

	/* Queued BOs cannot be detached: their mappings stay. */
	list_for_each_entry(bo, &pending, xfer_node)
		dma_sync_sgtable_for_device(&qdev->pdev->dev, bo->sgt, bo->dir);

	submit = ktime_get_ns();
	spin_lock_irq(&dbc->xfer_lock);
	list_for_each_entry(bo, &pending, xfer_node) {
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
	list_splice_tail_init(&pending, &dbc->xfer_list);
	spin_unlock_irq(&dbc->xfer_lock);

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

/* ---- Responses ---- */

/*
 * The response at @idx answers a slice of the queued BO with its id. Under
 * dbc->rsp_lock, interrupts off. The BO needs no reference of the queue's:
 * a queued BO stays sliced (DETACH_SLICE refuses it, a release completes it
 * first), and slicing holds one. In the hard handler (@hard) a response
 * that would complete a BO whose mapping needs a CPU sync (a copy out of
 * bounce buffers) is left alone: false, and the thread takes it.
 */
static bool qaic_dbc_handle_rsp(struct qaic_dbc *dbc, u32 idx, bool hard)
{
	const struct qaic_dbc_rsp *rsp = (const struct qaic_dbc_rsp *)dbc->rsp_q + idx;
	u16 req_id = le16_to_cpu(READ_ONCE(rsp->req_id));
	u16 status = le16_to_cpu(READ_ONCE(rsp->status));
	struct qaic_bo *bo;

	spin_lock(&dbc->xfer_lock);
	list_for_each_entry(bo, &dbc->xfer_list, xfer_node) {
		if (bo->req_id != req_id)
			continue;
		if (hard && bo->cpu_sync && bo->nr_slice_done + 1 == bo->nr_slice) {
			spin_unlock(&dbc->xfer_lock);
			return false;
		}
		if (status) {
			bo->nr_failed++;
			bo->last_status = status;
		}
		if (++bo->nr_slice_done < bo->nr_slice)
			break;
		dma_sync_sgtable_for_cpu(&dbc->qdev->pdev->dev, bo->sgt, bo->dir);
		list_del_init(&bo->xfer_node);
		bo->perf.processed_ns = ktime_get_ns();
		qaic_fence_signal(bo, bo->nr_failed ? -EIO : 0);
		complete_all(&bo->xfer_done);
		break;
	}
	spin_unlock(&dbc->xfer_lock);
	/* As upstream: a failed request is only reported, its BO completes. */
	if (status)
		pci_dbg(dbc->qdev->pdev, "DBC %u: request %u failed with status %u\n",
			dbc->id, req_id, status);
	return true;
}

/*
 * Handle up to QAIC_RSP_BATCH responses and hand their slots back to the
 * card, under dbc->rsp_lock with interrupts off. Per batch: one RSPTP
 * read, the responses, one RSPHP write, and one more RSPTP read, for a
 * response the card wrote meanwhile: it saw the FIFO non-empty then, so
 * it raised no interrupt for it. Returns 0 once the FIFO is empty, 1 when
 * more responses wait, or an error when the DBC is released or the card's
 * pointers make no sense; *@handled counts the responses. In the hard
 * handler (@hard) it also stops, returning 1, at a response that completes
 * a BO whose mapping needs a CPU sync.
 */
static int qaic_dbc_drain(struct qaic_dbc *dbc, unsigned int *handled, bool hard)
{
	u32 nelem = dbc->fifo.nelem, head = dbc->rsp_head, tail;
	unsigned int n = 0;
	bool left = false;

	*handled = 0;
	if (head >= nelem)
		return -EIO;
	for (;;) {
		if (!READ_ONCE(dbc->active))
			return -ENODEV;
		tail = readl(dbc->regs + QAIC_RSPTP);
		/* All-ones is a dead link; an index out of the FIFO a confused card. */
		if (tail >= nelem)
			return -EIO;
		if (head == tail)
			return 0;
		if (n == QAIC_RSP_BATCH)
			return 1;
		for (; head != tail && n < QAIC_RSP_BATCH; n++) {
			if (!qaic_dbc_handle_rsp(dbc, head, hard)) {
				left = true;
				break;
			}
			if (++head == nelem)
				head = 0;
		}
		*handled = n;
		if (head != dbc->rsp_head) {
			writel(head, dbc->regs + QAIC_RSPHP);
			WRITE_ONCE(dbc->rsp_head, head);
		}
		if (left)
			return 1;
	}
}

/* Let the next response be noticed: by the interrupt, or by polling. */
static void qaic_dbc_rearm(struct qaic_dbc *dbc)
{
	if (datapath_polling) {
		if (READ_ONCE(dbc->active))
			queue_work(system_long_wq, &dbc->poll_work);
	} else if (!dbc->qdev->single_msi) {
		enable_irq(dbc->irq);
	}
}

/*
 * The hard handler completes the BOs itself: a waiter wakes straight from
 * the interrupt, without a switch to the interrupt thread first (under
 * TCG that switch cost as much as the card's whole part of a request,
 * docs/performance.md). Only a FIFO with more than a batch of responses
 * goes on in the thread, with the vector off meanwhile. Neither lingers
 * polling an empty FIFO, as upstream's thread does (up to ten sleeps of
 * 100-200 us): the next response's interrupt is cheaper.
 */
static irqreturn_t qaic_dbc_irq(int irq, void *data)
{
	struct qaic_dbc *dbc = data;
	irqreturn_t ret = IRQ_HANDLED;
	unsigned int handled;
	int srcu, more;

	/* A single MSI is shared with MHI: it cannot be turned off for polling. */
	if (datapath_polling)
		return IRQ_NONE;
	srcu = srcu_read_lock(&dbc->srcu);
	if (!qaic_dbc_is_active(dbc))
		goto out;
	spin_lock(&dbc->rsp_lock);
	more = qaic_dbc_drain(dbc, &handled, true);
	spin_unlock(&dbc->rsp_lock);
	if (more > 0) {
		if (!dbc->qdev->single_msi)
			disable_irq_nosync(irq);
		ret = IRQ_WAKE_THREAD;
	} else if (!handled) {
		/* Nothing new (a shared vector, a dead link): not ours. */
		ret = IRQ_NONE;
	}
out:
	srcu_read_unlock(&dbc->srcu, srcu);
	return ret;
}

/*
 * What the hard handler left (a long FIFO), or what the polling work
 * found: drained a batch at a time, then the interrupt (or polling) is
 * back on and the FIFO looked at once more.
 */
static irqreturn_t qaic_dbc_irq_thread(int irq, void *data)
{
	struct qaic_dbc *dbc = data;
	unsigned int handled;
	unsigned long flags;
	int srcu, ret;

	srcu = srcu_read_lock(&dbc->srcu);
	if (!qaic_dbc_is_active(dbc))
		goto out;
	for (;;) {
		spin_lock_irqsave(&dbc->rsp_lock, flags);
		ret = qaic_dbc_drain(dbc, &handled, false);
		spin_unlock_irqrestore(&dbc->rsp_lock, flags);
		if (ret <= 0)
			break;
		cond_resched();
	}
out:
	qaic_dbc_rearm(dbc);
	srcu_read_unlock(&dbc->srcu, srcu);
	return IRQ_HANDLED;
}

/* datapath_polling: watch RSPTP while BOs are queued, hand over to the thread. */
static void qaic_dbc_poll_work(struct work_struct *work)
{
	struct qaic_dbc *dbc = container_of(work, struct qaic_dbc, poll_work);
	u32 head, tail, nelem, us;
	bool idle;
	int srcu;

	for (;;) {
		srcu = srcu_read_lock(&dbc->srcu);
		if (!READ_ONCE(dbc->qdev->online) || !qaic_dbc_is_active(dbc))
			break;
		spin_lock_irq(&dbc->xfer_lock);
		idle = list_empty(&dbc->xfer_list);
		spin_unlock_irq(&dbc->xfer_lock);
		if (idle)
			break;
		nelem = dbc->fifo.nelem;
		head = READ_ONCE(dbc->rsp_head);
		tail = readl(dbc->regs + QAIC_RSPTP);
		if (head >= nelem || tail >= nelem)
			break;
		if (head != tail) {
			irq_wake_thread(dbc->irq, dbc);
			break;
		}
		srcu_read_unlock(&dbc->srcu, srcu);
		us = clamp(READ_ONCE(datapath_poll_interval_us), 1U, USEC_PER_SEC);
		usleep_range(us, 2 * us);
	}
	srcu_read_unlock(&dbc->srcu, srcu);
}

static void qaic_irq_follow_free(struct drm_device *drm, void *data)
{
	struct qaic_irq_follow *f = data;

	free_cpumask_var(f->home);
}

/* Records where vector @irq goes now, before anything moves it. */
static int qaic_irq_follow_init(struct qaic_device *qdev, struct qaic_irq_follow *f, int irq)
{
	int ret;

	if (!zalloc_cpumask_var(&f->home, GFP_KERNEL))
		return -ENOMEM;
	/* As long as the DBCs that point here: until the DRM device goes. */
	ret = drmm_add_action_or_reset(&qdev->drm, qaic_irq_follow_free, f);
	if (ret)
		return ret;
	ret = drmm_mutex_init(&qdev->drm, &f->lock);
	if (ret)
		return ret;
	f->data = irq_get_irq_data(irq);
	f->cpu = -1;
	f->prev = -1;
	f->moved = jiffies - msecs_to_jiffies(QAIC_IRQ_FOLLOW_MS);
	f->kept = false;
	cpumask_copy(f->home, irq_data_get_affinity_mask(f->data));
	return 0;
}

int qaic_data_request_irqs(struct qaic_device *qdev)
{
	struct pci_dev *pdev = qdev->pdev;
	struct qaic_dbc *dbc;
	unsigned int i;
	int irq, ret;

	for (i = 0; i < QAIC_NUM_DBC; i++) {
		dbc = &qdev->dbc[i];
		irq = pci_irq_vector(pdev, qdev->single_msi ? 0 : i + 1);
		if (irq < 0)
			return irq;
		dbc->irq = irq;
		/* Shared with MHI on a single MSI; harmless on a vector of its own. */
		ret = devm_request_threaded_irq(&pdev->dev, irq, qaic_dbc_irq, qaic_dbc_irq_thread,
						IRQF_SHARED, "qaic_dbc", dbc);
		if (ret)
			return ret;
		dbc->follow = &qdev->irq_follow[qdev->single_msi ? 0 : i];
		if (i == 0 || !qdev->single_msi) {
			ret = qaic_irq_follow_init(qdev, dbc->follow, irq);
			if (ret)
				return ret;
		}
		if (datapath_polling && !qdev->single_msi)
			disable_irq_nosync(irq);
	}
	return 0;
}

/*
 * The card is going away: its DBC vectors are masked before MHI's goes.
 * With multiple MSIs every vector shares the message written through the
 * first, and freeing vector 0 (MHI's, when its controller is unregistered)
 * clears it in the card while the DBC vectors are still in use: a DBC
 * interrupt in between would be a DMA write to address 0 (a DMAR fault
 * behind an IOMMU). A masked vector only sets its pending bit.
 *
 * Masked, not freed: the interrupt thread balances the hard handler's
 * disable_irq_nosync() with enable_irq(), and free_irq() resets the depth,
 * which would leave the thread's last enable unbalanced. disable_irq()
 * waits for the handlers; unlazy, it masks at once rather than at the next
 * interrupt. Devres frees the vectors after the DBCs are released.
 */
void qaic_data_disable_irqs(struct qaic_device *qdev)
{
	unsigned int i;

	/* On a single MSI the DBCs share vector 0 with MHI: nothing to do. */
	if (qdev->single_msi)
		return;
	for (i = 0; i < QAIC_NUM_DBC; i++) {
		if (qdev->dbc[i].irq <= 0)
			continue;
		irq_set_status_flags(qdev->dbc[i].irq, IRQ_DISABLE_UNLAZY);
		disable_irq(qdev->dbc[i].irq);
	}
}

/* The card is going away: no polling may outlive it. The DBCs are released. */
void qaic_data_fini(struct qaic_device *qdev)
{
	unsigned int i;

	for (i = 0; i < QAIC_NUM_DBC; i++)
		cancel_work_sync(&qdev->dbc[i].poll_work);
}

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

/* ---- WAIT_BO / PERF_STATS_BO ---- */

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

/* ---- debugfs ---- */

static int qaic_dbc_fifo_size_show(struct seq_file *s, void *unused)
{
	struct qaic_dbc *dbc = s->private;
	u32 nelem = 0;

	mutex_lock(&dbc->qdev->dbc_lock);
	if (dbc->in_use)
		nelem = dbc->fifo.nelem;
	mutex_unlock(&dbc->qdev->dbc_lock);
	seq_printf(s, "%u\n", nelem);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qaic_dbc_fifo_size);

/* Requests the card has not consumed yet. */
static int qaic_dbc_queued_show(struct seq_file *s, void *unused)
{
	struct qaic_dbc *dbc = s->private;
	u32 head, tail, nelem, queued = 0;

	mutex_lock(&dbc->qdev->dbc_lock);
	if (dbc->in_use) {
		nelem = dbc->fifo.nelem;
		head = readl(dbc->regs + QAIC_REQHP);
		tail = readl(dbc->regs + QAIC_REQTP);
		if (head < nelem && tail < nelem)
			queued = head <= tail ? tail - head : nelem - head + tail;
	}
	mutex_unlock(&dbc->qdev->dbc_lock);
	seq_printf(s, "%u\n", queued);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qaic_dbc_queued);

void qaic_data_debugfs_root_init(void)
{
	qaic_debugfs_root = debugfs_create_dir(QAIC_NAME, NULL);
}

void qaic_data_debugfs_root_fini(void)
{
	debugfs_remove(qaic_debugfs_root);
	qaic_debugfs_root = NULL;
}

static struct dentry *qaic_dbc_debugfs_dir(struct qaic_dbc *dbc, struct dentry *parent)
{
	char name[QAIC_DBC_NAME_LEN];
	struct dentry *dir;

	snprintf(name, sizeof(name), "dbc%03u", dbc->id);
	dir = debugfs_create_dir(name, parent);
	debugfs_create_file("fifo_size", 0400, dir, dbc, &qaic_dbc_fifo_size_fops);
	debugfs_create_file("queued", 0400, dir, dbc, &qaic_dbc_queued_fops);
	return dir;
}

/*
 * dbcNNN/{fifo_size,queued} under the accel device's directory (where
 * upstream has them) and under qaic/<bdf>/ (where the open UMD looks).
 */
void qaic_data_debugfs_init(struct qaic_device *qdev)
{
	unsigned int i;

	qdev->dbc_debugfs = debugfs_create_dir(pci_name(qdev->pdev), qaic_debugfs_root);
	for (i = 0; i < QAIC_NUM_DBC; i++) {
		qdev->dbc[i].dentry = qaic_dbc_debugfs_dir(&qdev->dbc[i], qdev->drm.debugfs_root);
		qaic_dbc_debugfs_dir(&qdev->dbc[i], qdev->dbc_debugfs);
	}
}

/* The files read the card's registers: they go before its BAR does. */
void qaic_data_debugfs_fini(struct qaic_device *qdev)
{
	unsigned int i;

	for (i = 0; i < QAIC_NUM_DBC; i++) {
		debugfs_remove(qdev->dbc[i].dentry);
		qdev->dbc[i].dentry = NULL;
	}
	debugfs_remove(qdev->dbc_debugfs);
	qdev->dbc_debugfs = NULL;
}
