// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_bootlog_order_gate - test module for the reproducer of upstream
 * qaic's late boot-log client (docs/upstream-bugs.md, "The boot log is lost
 * when the card leaves the SBL before the log client registers").
 *
 * Upstream's qaic_init() registers its PCI driver, whose probe starts each
 * card's boot, before its SBL clients. A client that is registered after
 * the MHI core created its device binds to it from its own registration
 * (driver_attach()), in the thread that loads the module. If the card has
 * left the SBL by then, the boot-log client's probe fails and the boot log
 * is lost. A quick host registers it within milliseconds; this module makes
 * the host slow at exactly that point, every time:
 *
 *   Before the MHI core binds a driver named "qaic_bootlog" to a device
 *   (BUS_NOTIFY_BIND_DRIVER, which may sleep), outside the controller's
 *   state worker, it waits (up to hold_timeout_ms) until the controller
 *   has moved to mission mode, i.e. the card left the SBL.
 *
 * A bind from the state worker itself (the MHI core creating the device
 * with the driver already registered) is counted and not held: holding it
 * would hold up the EE change it waits for.
 *
 * Counters in /sys/module/qaic_bootlog_order_gate/parameters:
 *   late_binds      binds from a driver's registration (held)
 *   held_to_mission those that the card's mission mode released
 *   timed_out       those released by hold_timeout_ms
 *   worker_binds    binds from the state worker (not held)
 *
 * Load it after the mhi module, before qaic.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/device.h>
#include <linux/jiffies.h>
#include <linux/mhi.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/workqueue.h>

static unsigned int hold_timeout_ms = 60000;
module_param(hold_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hold_timeout_ms, "Longest hold of a late bind");

static int late_binds;
module_param(late_binds, int, 0444);
MODULE_PARM_DESC(late_binds, "qaic_bootlog binds from the driver's registration");
static int held_to_mission;
module_param(held_to_mission, int, 0444);
MODULE_PARM_DESC(held_to_mission, "Late binds released once the controller was in mission mode");
static int timed_out;
module_param(timed_out, int, 0444);
MODULE_PARM_DESC(timed_out, "Late binds released by hold_timeout_ms");
static int worker_binds;
module_param(worker_binds, int, 0444);
MODULE_PARM_DESC(worker_binds, "qaic_bootlog binds from the MHI state worker");

static bool in_mission_mode(struct mhi_controller *mhi_cntrl)
{
	enum mhi_ee_type ee = READ_ONCE(mhi_cntrl->ee);

	return ee == MHI_EE_AMSS || ee == MHI_EE_WFW || ee == MHI_EE_FP;
}

static void hold_late_bind(struct mhi_controller *mhi_cntrl)
{
	unsigned long end = jiffies + msecs_to_jiffies(hold_timeout_ms);

	late_binds++;
	while (!in_mission_mode(mhi_cntrl) && time_before(jiffies, end))
		msleep(20);
	if (in_mission_mode(mhi_cntrl))
		held_to_mission++;
	else
		timed_out++;
	pr_info("%s: bind of qaic_bootlog released, controller %s mission mode\n",
		dev_name(&mhi_cntrl->mhi_dev->dev), in_mission_mode(mhi_cntrl) ? "in" : "not in");
}

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
		hold_late_bind(mhi_dev->mhi_cntrl);
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
	ret = bus_register_notifier(bus_finder.driver.bus, &bind_nb);
	if (ret) {
		mhi_driver_unregister(&bus_finder);
		return ret;
	}
	pr_info("holding qaic_bootlog binds from its registration until mission mode\n");
	return 0;
}

static void __exit gate_exit(void)
{
	bus_unregister_notifier(bus_finder.driver.bus, &bind_nb);
	mhi_driver_unregister(&bus_finder);
}

module_init(gate_init);
module_exit(gate_exit);
MODULE_DESCRIPTION("Makes upstream qaic's boot-log client register after the card left the SBL (bug reproducer)");
MODULE_LICENSE("GPL");
