// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_timesync_gate - test module for the reproducer of upstream qaic's
 * boot-timesync teardown race (docs/upstream-bugs.md).
 *
 * Upstream's boot time-sync client hands every message that the card sends
 * on QAIC_TIMESYNC to a work item on its "qaic_ts" workqueue, which first
 * gives the buffer back with mhi_queue_buf() on qdev->qts_ch. Its remove()
 * unprepares the channel and clears qts_ch without waiting for those work
 * items; one that runs after it passes a NULL mhi_device to mhi_queue_buf().
 * On a loaded machine the work item is late by scheduling alone. This module
 * makes it late on purpose, with the card's "timesync hold release=handover"
 * (the SBL sends its time request as it hands over to AMSS, so the host's
 * client is removed with the message's work item still queued):
 *
 *  1. When a workqueue named "qaic_ts" is allocated, it is limited to one
 *     active work item and a gate work item goes at its head, so the work
 *     queued behind it waits.
 *  2. When the MHI core starts removing the QAIC_TIMESYNC device
 *     (mhi_destroy_device(), on an EE change or SYS_ERR) while a gate is
 *     closed, it waits, up to spin_timeout_ms, for a work item to be queued
 *     behind the gate (the card's last message reached the host's client).
 *  3. Once that removal has returned, the gate opens.
 *
 * Upstream's driver then runs the work item on a removed channel and oopses
 * in mhi_queue(). A driver whose remove() flushes the workqueue before it
 * tears the channel down opens the gate itself (the gate opens when its
 * workqueue is flushed) and does not. The gate also opens after
 * gate_timeout_s.
 *
 * Counters in /sys/module/qaic_timesync_gate/parameters: gated (workqueues
 * gated), early (work items queued before the gate was in place), held (work
 * items queued behind a closed gate), opened_after_removal, opened_by_flush,
 * timed_out (gates nobody opened), removals (QAIC_TIMESYNC removals that
 * began with a gate closed and a work item behind it), missed (such
 * removals that waited for a work item in vain).
 *
 * Load it after the mhi module, before qaic.
 */

#include <linux/completion.h>
#include <linux/device.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/mhi.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#define GATE_WQ_NAME	"qaic_ts"
#define GATE_DEV_SUFFIX	"_QAIC_TIMESYNC"
#define MAX_GATES	8

static unsigned int gate_timeout_s = 120;
module_param(gate_timeout_s, uint, 0644);
MODULE_PARM_DESC(gate_timeout_s, "Open a gate that nobody opened after this many seconds");
static unsigned int spin_timeout_ms = 5000;
module_param(spin_timeout_ms, uint, 0644);
MODULE_PARM_DESC(spin_timeout_ms, "Longest wait of a removal for the work item of the card's last message");

static int gated;
module_param(gated, int, 0444);
MODULE_PARM_DESC(gated, "Workqueues named " GATE_WQ_NAME " that were gated");
static int early;
module_param(early, int, 0444);
MODULE_PARM_DESC(early, "Work items queued before their workqueue's gate was in place");
static int held;
module_param(held, int, 0444);
MODULE_PARM_DESC(held, "Work items queued behind a closed gate");
static int opened_after_removal;
module_param(opened_after_removal, int, 0444);
MODULE_PARM_DESC(opened_after_removal, "Gates opened once a QAIC_TIMESYNC removal returned");
static int opened_by_flush;
module_param(opened_by_flush, int, 0444);
MODULE_PARM_DESC(opened_by_flush, "Gates opened because their workqueue was flushed");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Gates opened by gate_timeout_s");
static int removals;
module_param(removals, int, 0444);
MODULE_PARM_DESC(removals, "QAIC_TIMESYNC removals that began with a work item behind a closed gate");
static int missed;
module_param(missed, int, 0444);
MODULE_PARM_DESC(missed, "QAIC_TIMESYNC removals that waited in vain for a work item");

struct gate {
	struct workqueue_struct *wq;	/* NULL: slot free */
	struct work_struct setup;	/* limits wq, then queues work */
	struct work_struct work;	/* the gate itself, on wq */
	struct completion open;
	bool closed;
	bool ready;			/* work is at the head of wq */
	int waiting;			/* work items queued behind it */
};

static struct gate gates[MAX_GATES];
static DEFINE_SPINLOCK(gates_lock);

static void gate_wait(struct work_struct *work)
{
	struct gate *g = container_of(work, struct gate, work);
	unsigned long left, flags;

	left = wait_for_completion_timeout(&g->open, msecs_to_jiffies(gate_timeout_s * 1000));
	spin_lock_irqsave(&gates_lock, flags);
	if (!left) {
		timed_out++;
		pr_warn("qaic_timesync_gate: nobody opened the gate in %u s; opening\n",
			gate_timeout_s);
	}
	g->closed = false;
	g->wq = NULL;
	spin_unlock_irqrestore(&gates_lock, flags);
}

/*
 * Runs in process context, where max_active can change: the workqueue is
 * unbound and not ordered, so a gate at its head holds nothing unless only
 * one of its work items may run at a time.
 */
static void gate_setup(struct work_struct *work)
{
	struct gate *g = container_of(work, struct gate, setup);
	unsigned long flags;

	workqueue_set_max_active(g->wq, 1);
	queue_work(g->wq, &g->work);
	spin_lock_irqsave(&gates_lock, flags);
	g->ready = true;
	spin_unlock_irqrestore(&gates_lock, flags);
}

/* Waits, in a probe handler (which cannot sleep), for *count to be positive. */
static bool spin_for(int *count)
{
	ktime_t end = ktime_add_ms(ktime_get(), spin_timeout_ms);

	while (READ_ONCE(*count) <= 0) {
		if (ktime_after(ktime_get(), end))
			return false;
		cpu_relax();
	}
	return true;
}

/*
 * alloc_workqueue(fmt, flags, max_active, ...): the entry remembers whether
 * the name is ours, given as fmt or (7.3's qaic: "%s", name) as the first
 * argument after max_active.
 */
static int alloc_wq_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	const char *fmt = (const char *)regs_get_kernel_argument(regs, 0);
	const char *arg = (const char *)regs_get_kernel_argument(regs, 3);
	bool *ours = (bool *)ri->data;

	*ours = fmt && (!strcmp(fmt, GATE_WQ_NAME) ||
			(!strcmp(fmt, "%s") && arg && !strcmp(arg, GATE_WQ_NAME)));
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
		if (!gates[i].wq && !work_pending(&gates[i].work) && !work_pending(&gates[i].setup))
			g = &gates[i];
	if (g) {
		g->wq = wq;
		g->closed = true;
		g->ready = false;
		g->waiting = 0;
		reinit_completion(&g->open);
		gated++;
	}
	spin_unlock_irqrestore(&gates_lock, flags);
	if (!g) {
		pr_warn("qaic_timesync_gate: no free gate for a new " GATE_WQ_NAME " workqueue\n");
		return 0;
	}
	schedule_work(&g->setup);
	return 0;
}

static struct kretprobe alloc_wq_probe = {
	.entry_handler = alloc_wq_entry,
	.handler = alloc_wq_return,
	.data_size = sizeof(bool),
	.maxactive = 16,
};

/* Opens every closed gate (of `only`, if given); returns how many. Call with gates_lock held. */
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

/* queue_work_on(cpu, wq, work): count what waits behind a closed gate. */
static int queue_work_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct workqueue_struct *wq = (struct workqueue_struct *)regs_get_kernel_argument(regs, 1);
	struct work_struct *work = (struct work_struct *)regs_get_kernel_argument(regs, 2);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++) {
		if (gates[i].wq != wq || !gates[i].closed || work == &gates[i].work)
			continue;
		if (!gates[i].ready) {
			early++;
			continue;
		}
		held++;
		WRITE_ONCE(gates[i].waiting, gates[i].waiting + 1);
	}
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
	opened_by_flush += open_gates(wq);
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kprobe flush_wq_probe = {
	.symbol_name = "__flush_workqueue",
	.pre_handler = flush_wq_pre,
};

static bool is_timesync_dev(struct device *dev)
{
	const char *name = dev ? dev_name(dev) : NULL;
	size_t n, s = strlen(GATE_DEV_SUFFIX);

	if (!name)
		return false;
	n = strlen(name);
	return n > s && !strcmp(name + n - s, GATE_DEV_SUFFIX);
}

/* The closed, ready gate, or NULL. Call with gates_lock held. */
static struct gate *closed_gate(void)
{
	int i;

	for (i = 0; i < MAX_GATES; i++)
		if (gates[i].wq && gates[i].closed && gates[i].ready)
			return &gates[i];
	return NULL;
}

/* mhi_destroy_device(dev, data): steps 2 and 3. */
static int destroy_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct device *dev = (struct device *)regs_get_kernel_argument(regs, 0);
	bool *ours = (bool *)ri->data;
	unsigned long flags;
	struct gate *g;

	*ours = false;
	if (!is_timesync_dev(dev))
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	g = closed_gate();
	spin_unlock_irqrestore(&gates_lock, flags);
	if (!g)
		return 0;
	*ours = true;
	if (spin_for(&g->waiting))
		removals++;
	else
		missed++;
	return 0;
}

static int destroy_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long flags;

	if (!*(bool *)ri->data)
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	opened_after_removal += open_gates(NULL);
	spin_unlock_irqrestore(&gates_lock, flags);
	return 0;
}

static struct kretprobe destroy_probe = {
	.kp.symbol_name = "mhi_destroy_device",
	.entry_handler = destroy_entry,
	.handler = destroy_return,
	.data_size = sizeof(bool),
	.maxactive = 16,
};

static int __init gate_init(void)
{
	/* Kernels with allocation profiling name the function *_noprof. */
	static const char * const alloc_names[] = { "alloc_workqueue", "alloc_workqueue_noprof" };
	int i, ret = -ENOENT;

	for (i = 0; i < MAX_GATES; i++) {
		INIT_WORK(&gates[i].setup, gate_setup);
		INIT_WORK(&gates[i].work, gate_wait);
		init_completion(&gates[i].open);
	}
	for (i = 0; i < ARRAY_SIZE(alloc_names) && ret; i++) {
		alloc_wq_probe.kp.symbol_name = alloc_names[i];
		alloc_wq_probe.kp.addr = NULL;
		ret = register_kretprobe(&alloc_wq_probe);
	}
	if (ret) {
		pr_err("qaic_timesync_gate: cannot probe alloc_workqueue: %d\n", ret);
		return ret;
	}
	ret = register_kprobe(&queue_work_probe);
	if (ret)
		goto out_alloc;
	ret = register_kprobe(&flush_wq_probe);
	if (ret)
		goto out_queue;
	ret = register_kretprobe(&destroy_probe);
	if (ret)
		goto out_flush;
	pr_info("qaic_timesync_gate: holding " GATE_WQ_NAME
		" work until QAIC_TIMESYNC is removed\n");
	return 0;

out_flush:
	unregister_kprobe(&flush_wq_probe);
out_queue:
	unregister_kprobe(&queue_work_probe);
out_alloc:
	unregister_kretprobe(&alloc_wq_probe);
	pr_err("qaic_timesync_gate: cannot set up the probes (is mhi loaded?): %d\n", ret);
	return ret;
}

static void __exit gate_exit(void)
{
	unsigned long flags;
	int i;

	unregister_kretprobe(&destroy_probe);
	unregister_kprobe(&flush_wq_probe);
	unregister_kprobe(&queue_work_probe);
	unregister_kretprobe(&alloc_wq_probe);
	for (i = 0; i < MAX_GATES; i++)
		flush_work(&gates[i].setup);
	/* Our gate function must not run once this module is gone. */
	spin_lock_irqsave(&gates_lock, flags);
	open_gates(NULL);
	spin_unlock_irqrestore(&gates_lock, flags);
	for (i = 0; i < MAX_GATES; i++)
		flush_work(&gates[i].work);
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Opens upstream qaic's boot-timesync teardown window on purpose (bug reproducer)");
MODULE_LICENSE("GPL");
