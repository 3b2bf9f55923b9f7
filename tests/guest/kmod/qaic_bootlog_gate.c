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
 * Counters in /sys/module/qaic_bootlog_gate/parameters: those of every gate
 * module (qaic_wq_gate.h), and opened_by_teardown, windows (a work item was
 * inside mhi_queue() as the removal began), missed (a removal waited for one
 * in vain), cut_short (a work item stopped waiting for the teardown, which
 * did not come).
 *
 * Load it after the mhi module, before qaic.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mhi.h>

#define GATE_WQ_NAME	"qaic_bootlog"
#define GATE_CHAN_NAME	"QAIC_LOGGING"

#include "qaic_wq_gate.h"

static int opened_by_teardown;
module_param(opened_by_teardown, int, 0444);
MODULE_PARM_DESC(opened_by_teardown, "Gates opened as " GATE_CHAN_NAME " was torn down");
static int windows;
module_param(windows, int, 0444);
MODULE_PARM_DESC(windows, "Work items held inside mhi_queue() while the channel was torn down");
static int missed;
module_param(missed, int, 0444);
MODULE_PARM_DESC(missed, "Removals during which no work item queued a buffer");
static int cut_short;
module_param(cut_short, int, 0444);
MODULE_PARM_DESC(cut_short, "Work items that stopped waiting for the teardown");

/* The removal in progress, between steps 2 and 3 above. */
static struct mhi_device *torn_dev;
static struct mhi_chan *torn_chan;
static bool queued_in_window;	/* step 2 -> 3: a buffer went onto torn_chan */
static bool teardown_done;	/* step 3 may go on */

/*
 * Step 1. alloc_workqueue() has not returned yet, so nothing is queued
 * before the gate; the workqueue is ordered, so the gate holds what follows.
 */
static void wq_gate_arm(struct wq_gate *g)
{
	wq_gate_ready(g);
	queue_work(g->wq, &g->work);
}

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
	if (!spin_until(READ_ONCE(queued_in_window))) {
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
	if (!spin_until(READ_ONCE(teardown_done))) {
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
	int ret;

	ret = wq_gate_register(NULL);
	if (ret)
		return ret;
	ret = register_kprobe(&destroy_probe);
	if (ret)
		goto out_gate;
	ret = register_kretprobe(&unprepare_probe);
	if (ret)
		goto out_destroy;
	ret = register_kretprobe(&gen_tre_probe);
	if (ret)
		goto out_unprepare;
	pr_info("holding " GATE_WQ_NAME " work until " GATE_CHAN_NAME " is torn down\n");
	return 0;

out_unprepare:
	unregister_kretprobe(&unprepare_probe);
out_destroy:
	unregister_kprobe(&destroy_probe);
out_gate:
	wq_gate_unregister();
	pr_err("cannot set up the probes (is mhi loaded?): %d\n", ret);
	return ret;
}

static void __exit gate_exit(void)
{
	unregister_kretprobe(&gen_tre_probe);
	unregister_kretprobe(&unprepare_probe);
	unregister_kprobe(&destroy_probe);
	wq_gate_unregister();
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Opens upstream qaic's boot-log teardown window on purpose (bug reproducer)");
MODULE_LICENSE("GPL");
