// SPDX-License-Identifier: GPL-2.0
/*
 * qaic_dma_aim - test module that aims a card's DMA at an address of the
 * test's choosing (tests/guest/qaic_hostile_dma_tests.cc).
 *
 * What a card writes and where is the card's to choose: a broken or hostile
 * card may write into QEMU's config space (ECAM) or another card's BARs. The
 * virtual card must survive doing so, and so must QEMU and the guest. The
 * card's loopback channel (QAIC_LOOPBACK) echoes what it is sent into the
 * next receive buffer that the host posted, so a receive buffer whose bus
 * address is replaced makes the card write chosen bytes at a chosen address:
 *
 *  1. The test writes the card's PCI address to "device", the bus address
 *     to "target", the buffer's length to "len", and 1 to "armed".
 *  2. The next receive (DMA_FROM_DEVICE) buffer of exactly len bytes that
 *     the card's MHI controller maps gets target as its bus address, in a
 *     kretprobe on mhi_map_single_no_bb() (the controller's map_single when
 *     it has no bounce buffers; called through a pointer, so never inlined).
 *     With map=1 (the default) target is mapped for the card first with
 *     dma_map_resource(), so that an IOMMU lets the write through; with
 *     map=0 it is used as it is, and an IOMMU refuses the write.
 *  3. When MHI unmaps that buffer (at its completion, or when the channel
 *     is reset), a kprobe on mhi_unmap_single_no_bb() first puts the
 *     buffer's own bus address back, so that the DMA API unmaps what it
 *     mapped, and this module unmaps target.
 *
 * The buffers are posted by the driver's own loopback client (ours: debugfs
 * "loopback"), or with client=1 by this module's client of the channel
 * (upstream qaic binds none): a write of 1 to "send" posts a receive buffer
 * of len bytes on the card named by "device", then sends it len bytes (at
 * most 8) of "payload", least significant byte first.
 *
 * Counters, read-only: aimed, restored, map_failed; clients (loopback
 * channels this module's client is bound to) and echoed (its receive
 * buffers that completed without error).
 *
 * Load it after qaic (which loads mhi).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/kprobes.h>
#include <linux/mhi.h>
#include <linux/minmax.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

/*
 * struct mhi_buf_info of drivers/bus/mhi/host/internal.h, which no header
 * outside the MHI core has; the same in 6.12 and 7.3.
 */
struct aim_buf_info {
	void *v_addr;
	void *bb_addr;
	void *wp;
	void *cb_buf;
	dma_addr_t p_addr;
	size_t len;
	enum dma_data_direction dir;
	bool used;
	bool pre_mapped;
};

#define AIM_NAME_LEN	32
#define AIM_MAX_CLIENTS	16

static char device[AIM_NAME_LEN];
module_param_string(device, device, sizeof(device), 0644);
MODULE_PARM_DESC(device, "PCI address of the card whose buffer is aimed");
static unsigned long long target;
module_param(target, ullong, 0644);
MODULE_PARM_DESC(target, "Bus address the buffer is aimed at");
static unsigned int len = 2;
module_param(len, uint, 0644);
MODULE_PARM_DESC(len, "Length of the receive buffer to aim (and of what send sends)");
static bool map = true;
module_param(map, bool, 0644);
MODULE_PARM_DESC(map, "Map target for the card with dma_map_resource() (else use it as it is)");
static unsigned long long payload;
module_param(payload, ullong, 0644);
MODULE_PARM_DESC(payload, "What send sends, least significant byte first");
static bool client;
module_param(client, bool, 0444);
MODULE_PARM_DESC(client, "Bind a loopback client of our own (for drivers that bind none)");
static int aimed;
module_param(aimed, int, 0444);
MODULE_PARM_DESC(aimed, "Buffers aimed so far");
static int restored;
module_param(restored, int, 0444);
MODULE_PARM_DESC(restored, "Aimed buffers given their own address back at their unmap");
static int map_failed;
module_param(map_failed, int, 0444);
MODULE_PARM_DESC(map_failed, "Buffers left alone because dma_map_resource() failed");
static int clients;
module_param(clients, int, 0444);
MODULE_PARM_DESC(clients, "Loopback channels our client is bound to");
static int echoed;
module_param(echoed, int, 0444);
MODULE_PARM_DESC(echoed, "Receive buffers of our client that the card filled");

/* What "armed" took from the parameters when it was set. */
static struct {
	char device[AIM_NAME_LEN];
	u64 target;
	size_t len;
	bool map;
} next_aim;

static DEFINE_SPINLOCK(aim_lock);
static bool is_armed;
/* The buffer aimed and not yet unmapped, and what to undo at its unmap. */
static struct aim_buf_info *aimed_buf;
static struct device *aimed_dev;
static dma_addr_t aimed_orig;
static dma_addr_t aimed_dma;
static bool aimed_mapped;

/* sysfs writes of parameters hold the module's parameter lock: device is stable. */
static int armed_set(const char *val, const struct kernel_param *kp)
{
	unsigned long flags;
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
	spin_lock_irqsave(&aim_lock, flags);
	strscpy(next_aim.device, device, sizeof(next_aim.device));
	next_aim.target = target;
	next_aim.len = len;
	next_aim.map = map;
	is_armed = on;
	spin_unlock_irqrestore(&aim_lock, flags);
	return 0;
}

static int armed_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(is_armed));
}

static const struct kernel_param_ops armed_ops = {
	.set = armed_set,
	.get = armed_get,
};
module_param_cb(armed, &armed_ops, NULL, 0644);
MODULE_PARM_DESC(armed, "1: aim the next matching buffer");

/* mhi_map_single_no_bb(mhi_cntrl, buf_info): its arguments, kept for its return. */
struct map_call {
	struct mhi_controller *cntrl;
	struct aim_buf_info *buf;
};

static int map_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_call *call = (struct map_call *)ri->data;

	if (!READ_ONCE(is_armed))
		return 1;	/* nothing to do at its return */
	call->cntrl = (struct mhi_controller *)regs_get_kernel_argument(regs, 0);
	call->buf = (struct aim_buf_info *)regs_get_kernel_argument(regs, 1);
	return 0;
}

/* Step 2, once MHI has mapped the buffer and before it writes the TRE. */
static int map_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct map_call *call = (struct map_call *)ri->data;
	struct aim_buf_info *buf = call->buf;
	struct device *dev = call->cntrl->cntrl_dev;
	unsigned long flags;
	dma_addr_t dma;

	if (regs_return_value(regs))
		return 0;
	spin_lock_irqsave(&aim_lock, flags);
	if (!is_armed || aimed_buf || buf->dir != DMA_FROM_DEVICE ||
	    buf->len != next_aim.len || !sysfs_streq(dev_name(dev), next_aim.device))
		goto out;
	is_armed = false;
	dma = next_aim.target;
	if (next_aim.map) {
		dma = dma_map_resource(dev, next_aim.target, buf->len, DMA_FROM_DEVICE, 0);
		if (dma_mapping_error(dev, dma)) {
			map_failed++;
			goto out;
		}
	}
	aimed_buf = buf;
	aimed_dev = dev;
	aimed_orig = buf->p_addr;
	aimed_dma = dma;
	aimed_mapped = next_aim.map;
	buf->p_addr = dma;
	aimed++;
	pr_info("%s: a %zu-byte receive buffer aimed at %#llx (%s)\n", next_aim.device,
		buf->len, next_aim.target, next_aim.map ? "mapped" : "unmapped");
out:
	spin_unlock_irqrestore(&aim_lock, flags);
	return 0;
}

/* Step 3: mhi_unmap_single_no_bb(mhi_cntrl, buf_info). */
static int unmap_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct aim_buf_info *buf = (struct aim_buf_info *)regs_get_kernel_argument(regs, 1);
	unsigned long flags;

	spin_lock_irqsave(&aim_lock, flags);
	if (buf == aimed_buf && buf->p_addr == aimed_dma) {
		if (aimed_mapped)
			dma_unmap_resource(aimed_dev, aimed_dma, buf->len, DMA_FROM_DEVICE, 0);
		buf->p_addr = aimed_orig;
		aimed_buf = NULL;
		restored++;
	}
	spin_unlock_irqrestore(&aim_lock, flags);
	return 0;
}

static struct kretprobe map_probe = {
	.kp.symbol_name = "mhi_map_single_no_bb",
	.entry_handler = map_entry,
	.handler = map_return,
	.data_size = sizeof(struct map_call),
	.maxactive = 16,
};

static struct kprobe unmap_probe = {
	.symbol_name = "mhi_unmap_single_no_bb",
	.pre_handler = unmap_pre,
};

/* The loopback client (client=1): the channels it is bound to. */
static DEFINE_MUTEX(client_lock);
static struct mhi_device *bound[AIM_MAX_CLIENTS];

static int lb_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	unsigned int i;
	int ret;

	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;
	mutex_lock(&client_lock);
	for (i = 0; i < AIM_MAX_CLIENTS && bound[i]; i++)
		;
	if (i < AIM_MAX_CLIENTS) {
		bound[i] = mhi_dev;
		clients++;
	}
	mutex_unlock(&client_lock);
	if (i == AIM_MAX_CLIENTS) {
		mhi_unprepare_from_transfer(mhi_dev);
		return -ENOSPC;
	}
	return 0;
}

static void lb_remove(struct mhi_device *mhi_dev)
{
	unsigned int i;

	mutex_lock(&client_lock);
	for (i = 0; i < AIM_MAX_CLIENTS; i++) {
		if (bound[i] == mhi_dev) {
			bound[i] = NULL;
			clients--;
		}
	}
	mutex_unlock(&client_lock);
	/* Pending buffers come back through the callbacks, which free them. */
	mhi_unprepare_from_transfer(mhi_dev);
}

static void lb_ul_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(result->buf_addr);
}

static void lb_dl_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	if (!result->transaction_status)
		echoed++;
	kfree(result->buf_addr);
}

/* A receive buffer of len bytes, then len bytes of payload to echo into it. */
static int lb_send(struct mhi_device *mhi_dev, size_t n)
{
	u8 *rx, *tx;
	__le64 bytes = cpu_to_le64(payload);
	int ret;

	rx = kzalloc(n, GFP_KERNEL);
	tx = kzalloc(n, GFP_KERNEL);
	if (!rx || !tx) {
		ret = -ENOMEM;
		goto err_free;
	}
	memcpy(tx, &bytes, min(n, sizeof(bytes)));
	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, rx, n, MHI_EOT);
	if (ret)
		goto err_free;
	ret = mhi_queue_buf(mhi_dev, DMA_TO_DEVICE, tx, n, MHI_EOT);
	if (ret) {
		/* rx belongs to MHI now; the channel's reset gives it back. */
		kfree(tx);
	}
	return ret;

err_free:
	kfree(rx);
	kfree(tx);
	return ret;
}

static int send_set(const char *val, const struct kernel_param *kp)
{
	struct mhi_device *mhi_dev = NULL;
	unsigned int i;
	int ret;

	if (!len || len > sizeof(u64))
		return -EINVAL;
	mutex_lock(&client_lock);
	for (i = 0; i < AIM_MAX_CLIENTS; i++) {
		if (bound[i] && sysfs_streq(dev_name(bound[i]->mhi_cntrl->cntrl_dev), device))
			mhi_dev = bound[i];
	}
	ret = mhi_dev ? lb_send(mhi_dev, len) : -ENODEV;
	mutex_unlock(&client_lock);
	return ret;
}

static const struct kernel_param_ops send_ops = {
	.set = send_set,
};
module_param_cb(send, &send_ops, NULL, 0200);
MODULE_PARM_DESC(send, "Post a receive buffer, then send payload (client=1)");

static const struct mhi_device_id lb_ids[] = {
	{ .chan = "QAIC_LOOPBACK" },
	{},
};

static struct mhi_driver lb_driver = {
	.id_table = lb_ids,
	.probe = lb_probe,
	.remove = lb_remove,
	.ul_xfer_cb = lb_ul_cb,
	.dl_xfer_cb = lb_dl_cb,
	.driver = {
		.name = "qaic_dma_aim_loopback",
	},
};

static int __init aim_init(void)
{
	int ret;

	ret = register_kretprobe(&map_probe);
	if (ret)
		goto fail;
	ret = register_kprobe(&unmap_probe);
	if (ret)
		goto unregister_map;
	if (client) {
		ret = mhi_driver_register(&lb_driver);
		if (ret)
			goto unregister_unmap;
	}
	return 0;

unregister_unmap:
	unregister_kprobe(&unmap_probe);
unregister_map:
	unregister_kretprobe(&map_probe);
fail:
	pr_err("cannot set up (is mhi loaded?): %d\n", ret);
	return ret;
}

static void __exit aim_exit(void)
{
	if (client)
		mhi_driver_unregister(&lb_driver);
	unregister_kprobe(&unmap_probe);
	unregister_kretprobe(&map_probe);
	/* Its unmap would unmap target instead of the buffer: say so. */
	if (aimed_buf)
		pr_warn("unloaded with a buffer still aimed at %pad\n", &aimed_dma);
}

module_init(aim_init);
module_exit(aim_exit);
MODULE_DESCRIPTION("Aims a qaic card's loopback receive buffer at a chosen bus address (test)");
MODULE_LICENSE("GPL");
