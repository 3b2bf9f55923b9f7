// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_bootlog_gate - test module for the reproducer of upstream qaic's
 * boot-log teardown race (docs/upstream-bugs.md).
 *
 * Upstream's logging client passes every boot-log buffer that the card fills
 * to an ordered workqueue named "qaic_bootlog"; the work item copies the line
 * and queues the buffer on the MHI channel again with mhi_queue_buf(). Its
 * remove() tears the channel down with mhi_unprepare_from_transfer() while
 * such a work item may be running. If the work item is inside mhi_queue()
 * when the MHI core starts removing the device (it has put its buffer on the
 * ring, and is about to ring the doorbell through the channel context), it
 * writes through the context pointer that the teardown clears meanwhile. The
 * window is a few instructions wide unless the worker is preempted there;
 * this module opens it on purpose:
 *
 *  1. When a workqueue named "qaic_bootlog" is allocated, a gate work item
 *     goes at its head, so the boot-log work queued behind it waits (the
 *     workqueue is ordered).
 *  2. When the MHI core starts removing the QAIC_LOGGING device
 *     (mhi_destroy_device(), on an EE change or SYS_ERR), the gate opens and
 *     the removal waits, up to spin_timeout_ms, for a boot-log work item to
 *     get its buffer onto the channel (mhi_gen_tre() succeeds).
 *  3. That work item then waits, up to spin_timeout_ms, for the driver's
 *     mhi_unprepare_from_transfer() to return before it goes on to ring the
 *     doorbell.
 *
 * Upstream 6.12's driver oopses in mhi_queue(). A driver whose remove()
 * waits for its work item to leave mhi_queue() before it tears the channel
 * down does not: step 3 then ends by its timeout, with the channel intact.
 * The gate also opens when its workqueue is flushed, or after
 * gate_timeout_s.
 *
 * Counters in /sys/module/qaic_bootlog_gate/parameters: gated (workqueues
 * gated), held (work items queued behind a closed gate), opened_by_teardown,
 * opened_by_flush, timed_out (gates nobody opened), windows (a work item was
 * inside mhi_queue() as the removal began), missed (a removal waited for one
 * in vain), cut_short (a work item stopped waiting for the teardown, which
 * did not come).
 *
 * Load it after the mhi module, before qaic.
 */

#include <linux/completion.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/mhi.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#define GATE_WQ_NAME	"qaic_bootlog"
#define GATE_CHAN_NAME	"QAIC_LOGGING"
#define MAX_GATES	8

static unsigned int gate_timeout_s = 120;
module_param(gate_timeout_s, uint, 0644);
MODULE_PARM_DESC(gate_timeout_s, "Open a gate that nobody opened after this many seconds");
static unsigned int spin_timeout_ms = 5000;
module_param(spin_timeout_ms, uint, 0644);
MODULE_PARM_DESC(spin_timeout_ms, "Longest wait of the teardown and of the work item for each other");

static int gated;
module_param(gated, int, 0444);
MODULE_PARM_DESC(gated, "Workqueues named " GATE_WQ_NAME " that were gated");
static int held;
module_param(held, int, 0444);
MODULE_PARM_DESC(held, "Work items queued behind a closed gate");
static int opened_by_teardown;
module_param(opened_by_teardown, int, 0444);
MODULE_PARM_DESC(opened_by_teardown, "Gates opened as " GATE_CHAN_NAME " was torn down");
static int opened_by_flush;
module_param(opened_by_flush, int, 0444);
MODULE_PARM_DESC(opened_by_flush, "Gates opened because their workqueue was flushed");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Gates opened by gate_timeout_s");
static int windows;
module_param(windows, int, 0444);
MODULE_PARM_DESC(windows, "Work items held inside mhi_queue() while the channel was torn down");
static int missed;
module_param(missed, int, 0444);
MODULE_PARM_DESC(missed, "Removals during which no work item queued a buffer");
static int cut_short;
module_param(cut_short, int, 0444);
MODULE_PARM_DESC(cut_short, "Work items that stopped waiting for the teardown");

struct gate {
	struct workqueue_struct *wq;	/* NULL: slot free */
	struct work_struct work;
	struct completion open;
	bool closed;
};

static struct gate gates[MAX_GATES];
static DEFINE_SPINLOCK(gates_lock);

/* The removal in progress, between steps 2 and 3 above. */
static struct mhi_device *torn_dev;
static struct mhi_chan *torn_chan;
static bool queued_in_window;	/* step 2 -> 3: a buffer went onto torn_chan */
static bool teardown_done;	/* step 3 may go on */

static void gate_wait(struct work_struct *work)
{
	struct gate *g = container_of(work, struct gate, work);
	unsigned long left, flags;

	left = wait_for_completion_timeout(&g->open, msecs_to_jiffies(gate_timeout_s * 1000));
	spin_lock_irqsave(&gates_lock, flags);
	if (!left) {
		timed_out++;
		pr_warn("qaic_bootlog_gate: nobody opened the gate in %u s; opening\n",
			gate_timeout_s);
	}
	g->closed = false;
	g->wq = NULL;
	spin_unlock_irqrestore(&gates_lock, flags);
}

/* Waits, in a probe handler (which cannot sleep), for *flag. */
static bool spin_for(bool *flag)
{
	ktime_t end = ktime_add_ms(ktime_get(), spin_timeout_ms);

	while (!READ_ONCE(*flag)) {
		if (ktime_after(ktime_get(), end))
			return false;
		cpu_relax();
	}
	return true;
}

/* alloc_workqueue(fmt, ...): the entry remembers whether fmt is ours. */
static int alloc_wq_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const char *fmt = (const char *)regs_get_kernel_argument(regs, 0);
	bool *ours = (bool *)ri->data;

	*ours = fmt && !strcmp(fmt, GATE_WQ_NAME);
	return 0;
}

static int alloc_wq_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_return_value(regs);
	struct gate *g = NULL;
	unsigned long flags;
	int i;

	if (!*(bool *)ri->data || !wq)
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	for (i = 0; i < MAX_GATES && !g; i++)
		if (!gates[i].wq && !work_pending(&gates[i].work))
			g = &gates[i];
	if (g) {
		g->wq = wq;
		g->closed = true;
		reinit_completion(&g->open);
		gated++;
	}
	spin_unlock_irqrestore(&gates_lock, flags);
	if (!g) {
		pr_warn("qaic_bootlog_gate: no free gate for a new " GATE_WQ_NAME " workqueue\n");
		return 0;
	}
	queue_work(wq, &g->work);
	return 0;
}

static struct kretprobe alloc_wq_probe = {
	.entry_handler = alloc_wq_entry,
	.handler = alloc_wq_return,
	.data_size = sizeof(bool),
	.maxactive = 16,
};

/* Opens every closed gate; returns how many. Call with gates_lock held. */
static int open_gates(struct workqueue_struct *only)
{
	int i, n = 0;

	for (i = 0; i < MAX_GATES; i++) {
		if (gates[i].wq && gates[i].closed && (!only || gates[i].wq == only)) {
			gates[i].closed = false;
			complete_all(&gates[i].open);
			n++;
		}
	}
	return n;
}

static bool wq_gated(struct workqueue_struct *wq)
{
	int i;

	for (i = 0; i < MAX_GATES; i++)
		if (gates[i].wq == wq && gates[i].closed)
			return true;
	return false;
}

/* queue_work_on(cpu, wq, work): count what waits behind a closed gate. */
static int queue_work_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_get_kernel_argument(regs, 1);
	struct work_struct *work = (struct work_struct *)regs_get_kernel_argument(regs, 2);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++)
		if (gates[i].wq == wq && gates[i].closed && work != &gates[i].work)
			held++;
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kprobe queue_work_probe = {
	.symbol_name = "queue_work_on",
	.pre_handler = queue_work_pre,
};

/* __flush_workqueue(wq): the owner wants its work done; open its gate. */
static int flush_wq_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_get_kernel_argument(regs, 0);
	unsigned long flags;

	spin_lock_irqsave(&gates_lock, flags);
	if (wq_gated(wq))
		opened_by_flush += open_gates(wq);
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kprobe flush_wq_probe = {
	.symbol_name = "__flush_workqueue",
	.pre_handler = flush_wq_pre,
};

/* mhi_destroy_device(dev, data): step 2. */
static int destroy_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct device *dev = (struct device *)regs_get_kernel_argument(regs, 0);
	struct mhi_device *mhi_dev;
	unsigned long flags;
	const char *name;
	int opened;

	/* MHI names its channel devices <controller>_<channel>. */
	name = dev ? dev_name(dev) : NULL;
	if (!name || !strstr(name, "_" GATE_CHAN_NAME))
		return 0;
	mhi_dev = to_mhi_device(dev);
	if (!mhi_dev->dl_chan)
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	opened = open_gates(NULL);
	opened_by_teardown += opened;
	if (opened && !torn_dev) {
		torn_dev = mhi_dev;
		WRITE_ONCE(queued_in_window, false);
		WRITE_ONCE(teardown_done, false);
		WRITE_ONCE(torn_chan, mhi_dev->dl_chan);
	}
	spin_unlock_irqrestore(&gates_lock, flags);
	if (torn_dev != mhi_dev)
		return 0;
	if (!spin_for(&queued_in_window)) {
		missed++;
		WRITE_ONCE(torn_chan, NULL);
		torn_dev = NULL;
	}
	return 0;
}

static struct kprobe destroy_probe = {
	.symbol_name = "mhi_destroy_device",
	.pre_handler = destroy_pre,
};

/* mhi_unprepare_from_transfer(mhi_dev): step 3 may go on once it returns. */
static int unprepare_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct mhi_device *mhi_dev = (struct mhi_device *)regs_get_kernel_argument(regs, 0);

	if (mhi_dev != READ_ONCE(torn_dev))
		mhi_dev = NULL;
	*(struct mhi_device **)ri->data = mhi_dev;
	return 0;
}

static int unprepare_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (*(struct mhi_device **)ri->data) {
		WRITE_ONCE(teardown_done, true);
		torn_dev = NULL;
	}
	return 0;
}

static struct kretprobe unprepare_probe = {
	.kp.symbol_name = "mhi_unprepare_from_transfer",
	.entry_handler = unprepare_entry,
	.handler = unprepare_return,
	.data_size = sizeof(struct mhi_device *),
	.maxactive = 8,
};

/* mhi_gen_tre(mhi_cntrl, mhi_chan, ...): step 3. */
static int gen_tre_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(struct mhi_chan **)ri->data = (struct mhi_chan *)regs_get_kernel_argument(regs, 1);
	return 0;
}

static int gen_tre_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct mhi_chan *chan = *(struct mhi_chan **)ri->data;

	if (!chan || chan != READ_ONCE(torn_chan) || regs_return_value(regs))
		return 0;
	WRITE_ONCE(torn_chan, NULL);	/* one work item per teardown */
	windows++;
	WRITE_ONCE(queued_in_window, true);
	if (!spin_for(&teardown_done)) {
		cut_short++;
		torn_dev = NULL;
	}
	return 0;
}

static struct kretprobe gen_tre_probe = {
	.kp.symbol_name = "mhi_gen_tre",
	.entry_handler = gen_tre_entry,
	.handler = gen_tre_return,
	.data_size = sizeof(struct mhi_chan *),
	.maxactive = 16,
};

static int __init gate_init(void)
{
	/* Kernels with allocation profiling name the function *_noprof. */
	static const char * const alloc_names[] = { "alloc_workqueue", "alloc_workqueue_noprof" };
	int i, ret = -ENOENT;

	for (i = 0; i < MAX_GATES; i++) {
		INIT_WORK(&gates[i].work, gate_wait);
		init_completion(&gates[i].open);
	}
	for (i = 0; i < ARRAY_SIZE(alloc_names) && ret; i++) {
		alloc_wq_probe.kp.symbol_name = alloc_names[i];
		alloc_wq_probe.kp.addr = NULL;
		ret = register_kretprobe(&alloc_wq_probe);
	}
	if (ret) {
		pr_err("qaic_bootlog_gate: cannot probe alloc_workqueue: %d\n", ret);
		return ret;
	}
	ret = register_kprobe(&queue_work_probe);
	if (ret)
		goto out_alloc;
	ret = register_kprobe(&flush_wq_probe);
	if (ret)
		goto out_queue;
	ret = register_kprobe(&destroy_probe);
	if (ret)
		goto out_flush;
	ret = register_kretprobe(&unprepare_probe);
	if (ret)
		goto out_destroy;
	ret = register_kretprobe(&gen_tre_probe);
	if (ret)
		goto out_unprepare;
	pr_info("qaic_bootlog_gate: holding " GATE_WQ_NAME " work until " GATE_CHAN_NAME
		" is torn down\n");
	return 0;

out_unprepare:
	unregister_kretprobe(&unprepare_probe);
out_destroy:
	unregister_kprobe(&destroy_probe);
out_flush:
	unregister_kprobe(&flush_wq_probe);
out_queue:
	unregister_kprobe(&queue_work_probe);
out_alloc:
	unregister_kretprobe(&alloc_wq_probe);
	pr_err("qaic_bootlog_gate: cannot set up the probes (is mhi loaded?): %d\n", ret);
	return ret;
}

static void __exit gate_exit(void)
{
	unsigned long flags;
	int i;

	unregister_kretprobe(&gen_tre_probe);
	unregister_kretprobe(&unprepare_probe);
	unregister_kprobe(&destroy_probe);
	unregister_kprobe(&flush_wq_probe);
	unregister_kprobe(&queue_work_probe);
	unregister_kretprobe(&alloc_wq_probe);
	/* Our gate function must not run once this module is gone. */
	spin_lock_irqsave(&gates_lock, flags);
	open_gates(NULL);
	spin_unlock_irqrestore(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++)
		flush_work(&gates[i].work);
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Opens upstream qaic's boot-log teardown window on purpose (bug reproducer)");
MODULE_LICENSE("GPL");
