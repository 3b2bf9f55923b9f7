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
 * Counters in /sys/module/qaic_timesync_gate/parameters: those of every gate
 * module (qaic_wq_gate.h), and opened_after_removal, removals (QAIC_TIMESYNC
 * removals that began with a gate closed and a work item behind it), missed
 * (such removals that waited for a work item in vain).
 *
 * Load it after the mhi module, before qaic.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/mhi.h>

#define GATE_WQ_NAME	"qaic_ts"
#define GATE_DEV_SUFFIX	"_QAIC_TIMESYNC"

#include "qaic_wq_gate.h"

static int opened_after_removal;
module_param(opened_after_removal, int, 0444);
MODULE_PARM_DESC(opened_after_removal, "Gates opened once a QAIC_TIMESYNC removal returned");
static int removals;
module_param(removals, int, 0444);
MODULE_PARM_DESC(removals, "QAIC_TIMESYNC removals that began with a work item behind a closed gate");
static int missed;
module_param(missed, int, 0444);
MODULE_PARM_DESC(missed, "QAIC_TIMESYNC removals that waited in vain for a work item");

/*
 * Step 1, in process context, where max_active can change: the workqueue is
 * unbound and not ordered, so a gate at its head holds nothing unless only
 * one of its work items may run at a time.
 */
static void gate_setup(struct work_struct *work)
{
	struct wq_gate *g = container_of(work, struct wq_gate, setup);

	workqueue_set_max_active(g->wq, 1);
	queue_work(g->wq, &g->work);
	wq_gate_ready(g);
}

static void wq_gate_arm(struct wq_gate *g)
{
	schedule_work(&g->setup);
}

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
static struct wq_gate *closed_gate(void)
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
	struct wq_gate *g;

	*ours = false;
	if (!is_timesync_dev(dev))
		return 0;
	spin_lock_irqsave(&gates_lock, flags);
	g = closed_gate();
	spin_unlock_irqrestore(&gates_lock, flags);
	if (!g)
		return 0;
	*ours = true;
	if (spin_until(READ_ONCE(g->waiting) > 0))
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
	int ret;

	ret = wq_gate_register(gate_setup);
	if (ret)
		return ret;
	ret = register_kretprobe(&destroy_probe);
	if (ret) {
		wq_gate_unregister();
		pr_err("cannot set up the probes (is mhi loaded?): %d\n", ret);
		return ret;
	}
	pr_info("holding " GATE_WQ_NAME " work until QAIC_TIMESYNC is removed\n");
	return 0;
}

static void __exit gate_exit(void)
{
	unregister_kretprobe(&destroy_probe);
	wq_gate_unregister();
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Opens upstream qaic's boot-timesync teardown window on purpose (bug reproducer)");
MODULE_LICENSE("GPL");
