// SPDX-License-Identifier: GPL-2.0
/*
 * defer_reason_leak - forced reproducer of the driver core's leaked
 * deferred-probe reason (docs/upstream-bugs.md, "the driver core's
 * deferred-probe reason"; patches/linux/0014).
 *
 * device_add() links a device into its bus before it sets ready_to_probe.
 * A driver registered in that window finds the device, and
 * __driver_probe_device() answers it with dev_err_probe(-EPROBE_DEFER,
 * "Device not ready to probe"), which stores the message as the device's
 * deferred-probe reason without putting the device on the deferred list;
 * device_add() then binds the device itself. Only taking a device off the
 * deferred list frees a reason, so this one outlives the device.
 *
 * The window is made certain, not timed: the module's own bus has a
 * notifier, and on BUS_NOTIFY_ADD_DEVICE, which device_add() sends from
 * inside that window, it registers the matching driver. At load the
 * module adds one device and removes it again; the counters below say
 * what happened. With the leak, kmemleak's next scan reports a 32-byte
 * object "defer_reason_leak: Device not ready to probe".
 *
 * Counters in /sys/module/defer_reason_leak/parameters:
 *   probes      probe calls (1: device_add() bound the device)
 *   registered  driver registrations from the notifier (1)
 */
#include <linux/device.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/slab.h>

static int probes;
module_param(probes, int, 0444);
static int registered;
module_param(registered, int, 0444);

static int leak_match(struct device *dev, const struct device_driver *drv)
{
	return 1;
}

static const struct bus_type leak_bus = {
	.name = "defer_reason_leak",
	.match = leak_match,
};

static int leak_probe(struct device *dev)
{
	probes++;
	return 0;
}

static struct device_driver leak_driver = {
	.name = "defer_reason_leak",
	.bus = &leak_bus,
	.probe = leak_probe,
	.probe_type = PROBE_FORCE_SYNCHRONOUS,
};

static int leak_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	if (action != BUS_NOTIFY_ADD_DEVICE || registered)
		return NOTIFY_DONE;
	if (!driver_register(&leak_driver))
		registered = 1;
	return NOTIFY_OK;
}

static struct notifier_block leak_nb = {
	.notifier_call = leak_notify,
};

static void leak_release(struct device *dev)
{
	kfree(dev);
}

static int __init leak_init(void)
{
	struct device *dev;
	int ret;

	ret = bus_register(&leak_bus);
	if (ret)
		return ret;
	ret = bus_register_notifier(&leak_bus, &leak_nb);
	if (ret)
		goto out_bus;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev) {
		ret = -ENOMEM;
		goto out_nb;
	}
	dev->bus = &leak_bus;
	dev->release = leak_release;
	dev_set_name(dev, "leak0");
	ret = device_register(dev);
	if (ret) {
		put_device(dev);
		goto out_nb;
	}
	pr_info("defer_reason_leak: device added, %d probe(s), driver registered from the notifier: %d\n",
		probes, registered);
	device_unregister(dev);
	return 0;

out_nb:
	bus_unregister_notifier(&leak_bus, &leak_nb);
out_bus:
	bus_unregister(&leak_bus);
	return ret;
}

static void __exit leak_exit(void)
{
	if (registered)
		driver_unregister(&leak_driver);
	bus_unregister_notifier(&leak_bus, &leak_nb);
	bus_unregister(&leak_bus);
}

module_init(leak_init);
module_exit(leak_exit);
MODULE_DESCRIPTION("Forced reproducer of the driver core's leaked deferred-probe reason");
MODULE_LICENSE("GPL");
