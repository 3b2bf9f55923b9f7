// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the responses of a DBC and its interrupt (see qaic_data.c for
 * the data path).
 *
 * Responses are noticed by the DBC's interrupt (MSI vector id + 1, or the
 * vector shared with MHI when there is only one), whose hard handler drains
 * the response FIFO (its thread only what is left past a batch), or with
 * datapath_polling=1 by a work item that watches RSPTP while BOs are queued
 * and hands over to the interrupt thread.
 *
 * With datapath_irq_follows=1 the interrupt of a DBC is steered to the
 * CPU that submits to it, see qaic_dbc_follow().
 */

#include <drm/drm_managed.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdesc.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/srcu.h>
#include <linux/workqueue.h>

#include "qaic.h"
#include "qaic_data.h"

/* The interrupt thread: responses handled between reschedules. */
#define QAIC_RSP_BATCH		128

/* A DBC's interrupt follows its submitter at most this often. */
#define QAIC_IRQ_FOLLOW_MS	10

bool datapath_polling;
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

/* One element of a DBC's response FIFO. */
struct qaic_dbc_rsp {
	__le16	req_id;
	__le16	status;
};

static_assert(sizeof(struct qaic_dbc_rsp) == QAIC_DBC_RSP_ELEM_SIZE);

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
void qaic_dbc_poll_work(struct work_struct *work)
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

/* ---- Steering ---- */

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
 * Where the vector goes. On x86 without interrupt remapping a move waits
 * for the vector's next interrupt: meanwhile the kernel marks it pending
 * and keeps the target aside (what /proc shows), whoever asked for it.
 * Read without the descriptor's lock, as the affinity is below.
 */
static const struct cpumask *qaic_irq_target(struct irq_data *data)
{
#ifdef CONFIG_GENERIC_PENDING_IRQ
	if (irqd_is_setaffinity_pending(data))
		return irq_data_to_desc(data)->pending_mask;
#endif
	return irq_data_get_affinity_mask(data);
}

/* Is @target what this driver set, or the affinity the vector had when requested? */
static bool qaic_irq_follow_ours(struct qaic_irq_follow *f, const struct cpumask *target)
{
	return cpumask_equal(target, f->home) ||
	       (f->cpu >= 0 && cpumask_equal(target, cpumask_of(f->cpu)));
}

/* Under @f->lock: steer the vector to @cpu, unless a move is under way. */
static void qaic_irq_follow_move(struct qaic_irq_follow *f, int cpu)
{
	if (irqd_is_setaffinity_pending(f->data))
		return;
	/* Should it fail, the affinity stays, and so does the next check. */
	if (!irq_set_affinity(f->data->irq, cpumask_of(cpu)))
		f->cpu = cpu;
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
 * And the admin decides where it goes: while the vector's target (its
 * affinity, or where a pending move takes it) is neither that nor what was
 * set here, someone else (the admin, irqbalance) set it, and it stays;
 * setting it back to what it was lets it follow again. The target is read
 * without the descriptor's lock, as /proc reads it: a stale view only
 * defers the decision to a later submission.
 */
void qaic_dbc_follow(struct qaic_dbc *dbc)
{
	struct qaic_irq_follow *f = dbc->follow;
	int cpu = raw_smp_processor_id();
	const struct cpumask *target;

	if (!READ_ONCE(datapath_irq_follows) || datapath_polling || !f)
		return;
	if (!cpumask_test_cpu(cpu, f->home) || !qaic_cpu_takes_irqs(cpu))
		return;
	target = qaic_irq_target(f->data);
	if (cpumask_equal(target, cpumask_of(cpu)))
		return;		/* here already, or on its way */
	if (!mutex_trylock(&f->lock))
		return;		/* another DBC of the vector is moving it */
	if (time_before(jiffies, f->moved + msecs_to_jiffies(QAIC_IRQ_FOLLOW_MS)))
		goto out;
	f->moved = jiffies;
	if (qaic_irq_follow_ours(f, target)) {
		f->kept = false;
		qaic_irq_follow_move(f, cpu);
	} else if (!f->kept) {
		pci_info(dbc->qdev->pdev, "interrupt %d: affinity %*pbl set elsewhere, kept\n",
			 f->data->irq, cpumask_pr_args(target));
		f->kept = true;
	}
out:
	mutex_unlock(&f->lock);
}

/* ---- Vectors ---- */

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
