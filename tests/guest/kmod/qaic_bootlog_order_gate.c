// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_bootlog_order_gate - test module for the reproducer of upstream
 * qaic's late boot-log client (docs/upstream-bugs.md, "The boot log is lost
 * when the card leaves the SBL before the log client registers").
 *
 * Upstream's qaic_init() registers its PCI driver, whose probe starts each
 * card's boot, before its SBL clients. If the card gets through the SBL
 * before qaic_bootlog_register() runs, the log client binds too late and
 * the boot log is lost. A quick host registers it within milliseconds; this
 * module makes the host slow at exactly that point, every time:
 *
 *   When __mhi_driver_register() is called for a driver named
 *   "qaic_bootlog" while MHI controllers exist (a card is booting), the
 *   call is diverted (a kprobe moving the instruction pointer, as error
 *   injection does) to a function that sleeps until every controller is
 *   in mission mode, i.e. the cards left the SBL (at most hold_timeout_ms),
 *   and then registers the driver.
 *
 * A driver that registers its clients before its PCI driver finds no
 * controller and is not held. Binds of "qaic_bootlog" are counted by where
 * they come from (BUS_NOTIFY_BIND_DRIVER): the MHI state worker creating the
 * device, or the driver's registration.
 *
 * Counters in /sys/module/qaic_bootlog_order_gate/parameters:
 *   late_registrations  registrations held (controllers existed)
 *   held_to_mission     those that the cards' mission mode released
 *   timed_out           those released by hold_timeout_ms
 *   worker_binds        binds from the MHI state worker
 *   late_binds          binds from the driver's registration
 *
 * Load it after the mhi module, before qaic.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/device.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/mhi.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

static unsigned int hold_timeout_ms = 60000;
module_param(hold_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hold_timeout_ms, "Longest hold of a registration");

static int late_registrations;
module_param(late_registrations, int, 0444);
MODULE_PARM_DESC(late_registrations, "qaic_bootlog registrations held while a card booted");
static int held_to_mission;
module_param(held_to_mission, int, 0444);
MODULE_PARM_DESC(held_to_mission, "Held registrations released once every controller was in mission mode");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Held registrations released by hold_timeout_ms");
static int worker_binds;
module_param(worker_binds, int, 0444);
MODULE_PARM_DESC(worker_binds, "qaic_bootlog binds from the MHI state worker");
static int late_binds;
module_param(late_binds, int, 0444);
MODULE_PARM_DESC(late_binds, "qaic_bootlog binds from the driver's registration");

static const struct bus_type *mhi_bus;
static struct task_struct *passing; /* the registration let through */

static bool in_mission_mode(struct mhi_controller *mhi_cntrl)
{
	enum mhi_ee_type ee = READ_ONCE(mhi_cntrl->ee);

	return ee == MHI_EE_AMSS || ee == MHI_EE_WFW || ee == MHI_EE_FP;
}

struct census {
	int controllers, in_mission;
};

static int count_controller(struct device *dev, void *data)
{
	struct mhi_device *mhi_dev = to_mhi_device(dev);
	struct census *c = data;

	if (mhi_dev->dev_type != MHI_DEVICE_CONTROLLER)
		return 0;
	c->controllers++;
	c->in_mission += in_mission_mode(mhi_dev->mhi_cntrl);
	return 0;
}

static struct census take_census(void)
{
	struct census c = {};

	bus_for_each_dev(mhi_bus, NULL, &c, count_controller);
	return c;
}

/* Where a held registration goes instead: same arguments, same caller. */
static int held_register(struct mhi_driver *mhi_drv, struct module *owner)
{
	unsigned long end = jiffies + msecs_to_jiffies(hold_timeout_ms);
	struct census c = take_census();
	int ret;

	if (!c.controllers)
		goto do_register; /* no card is booting: nothing to be late for */
	late_registrations++;
	pr_info("holding the registration of qaic_bootlog: %d of %d controllers in mission mode\n",
		c.in_mission, c.controllers);
	while (c.in_mission < c.controllers && time_before(jiffies, end)) {
		msleep(20);
		c = take_census();
	}
	if (c.in_mission == c.controllers)
		held_to_mission++;
	else
		timed_out++;
	pr_info("registering qaic_bootlog: %d of %d controllers in mission mode\n", c.in_mission, c.controllers);
do_register:
	WRITE_ONCE(passing, current);
	ret = __mhi_driver_register(mhi_drv, owner);
	WRITE_ONCE(passing, NULL);
	return ret;
}

static int register_entry(struct kprobe *p, struct pt_regs *regs)
{
	struct mhi_driver *mhi_drv = (struct mhi_driver *)regs_get_kernel_argument(regs, 0);

	if (READ_ONCE(passing) == current || !mhi_drv->driver.name ||
	    strcmp(mhi_drv->driver.name, "qaic_bootlog"))
		return 0;
	instruction_pointer_set(regs, (unsigned long)held_register);
	return 1;
}

static struct kprobe register_probe = {
	.symbol_name = "__mhi_driver_register",
	.pre_handler = register_entry,
};

static int bind_event(struct notifier_block *nb, unsigned long action, void *data)
{
	struct device *dev = data;
	struct mhi_device *mhi_dev;

	if (action != BUS_NOTIFY_BIND_DRIVER || !dev->driver || strcmp(dev->driver->name, "qaic_bootlog"))
		return NOTIFY_DONE;
	mhi_dev = to_mhi_device(dev);
	if (mhi_dev->dev_type != MHI_DEVICE_XFER)
		return NOTIFY_DONE;
	if (current_work() == &mhi_dev->mhi_cntrl->st_worker)
		worker_binds++;
	else
		late_binds++;
	return NOTIFY_DONE;
}

static struct notifier_block bind_nb = {
	.notifier_call = bind_event,
};

/* A driver that matches no channel: registering it tells us the MHI bus. */
static const struct mhi_device_id no_channel[] = {
	{ .chan = "AIC100_ORDER_GATE_NONE" },
	{},
};

static int no_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	return -ENODEV;
}

static void no_remove(struct mhi_device *mhi_dev)
{
}

static void no_xfer(struct mhi_device *mhi_dev, struct mhi_result *result)
{
}

static struct mhi_driver bus_finder = {
	.id_table = no_channel,
	.probe = no_probe,
	.remove = no_remove,
	.ul_xfer_cb = no_xfer,
	.dl_xfer_cb = no_xfer,
	.driver = {
		.name = "qaic_bootlog_order_gate",
	},
};

static int __init gate_init(void)
{
	int ret;

	ret = mhi_driver_register(&bus_finder);
	if (ret) {
		pr_err("cannot register on the MHI bus (is mhi loaded?): %d\n", ret);
		return ret;
	}
	mhi_bus = bus_finder.driver.bus;
	ret = bus_register_notifier(mhi_bus, &bind_nb);
	if (ret)
		goto unregister;
	ret = register_kprobe(&register_probe);
	if (ret) {
		pr_err("cannot probe __mhi_driver_register: %d\n", ret);
		bus_unregister_notifier(mhi_bus, &bind_nb);
		goto unregister;
	}
	pr_info("holding qaic_bootlog's registration while a card boots, until mission mode\n");
	return 0;

unregister:
	mhi_driver_unregister(&bus_finder);
	return ret;
}

static void __exit gate_exit(void)
{
	unregister_kprobe(&register_probe);
	bus_unregister_notifier(mhi_bus, &bind_nb);
	mhi_driver_unregister(&bus_finder);
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Makes upstream qaic register its boot-log client after the card left the SBL (bug reproducer)");
MODULE_LICENSE("GPL");
