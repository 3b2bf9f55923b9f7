// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: telemetry on QAIC_TELEMETRY (channels 16 and 17).
 *
 * The host asks the card for one value at a time (a temperature, the
 * board's power, the power limit, NSP counters...) or sets one, with a
 * 23-byte request; the card answers with a response of the same layout
 * that echoes the request's sequence number, command and type. Requests
 * are serialised and wait QAIC_TELE_TIMEOUT for their response; a response
 * that comes later is dropped.
 *
 * Values are millidegrees Celsius and microwatts on the wire already. They are shown through a
 * hwmon device "qaic" under the PCI device, registered while the channel
 * is up, and in the PCI device's "telemetry" directory. Both fail with
 * -ENODEV while the card is not ONLINE or the channel is down.
 */

#include <linux/completion.h>
#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/hwmon.h>
#include <linux/jiffies.h>
#include <linux/kstrtox.h>
#include <linux/mhi.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <drm/drm_managed.h>

#include "qaic.h"

#define QAIC_TELE_MAGIC		0x55aa
#define QAIC_TELE_VERSION	1
#define QAIC_TELE_REQ		1
#define QAIC_TELE_RESP		2
#define QAIC_TELE_READ		0
#define QAIC_TELE_WRITE		1
#define QAIC_TELE_TIMEOUT	HZ
/* Room for a response; anything longer is cut short and dropped. */
#define QAIC_TELE_RX_LEN	64

/* Commands */
#define QAIC_TELE_SOC_TEMP		0
#define QAIC_TELE_SOC_MAX_TEMP		1
#define QAIC_TELE_BOARD_TEMP		2
#define QAIC_TELE_BOARD_MAX_TEMP	3
#define QAIC_TELE_DDR_TEMP		4
#define QAIC_TELE_WARNING_TEMP		5
#define QAIC_TELE_SHUTDOWN_TEMP		6
#define QAIC_TELE_CURRENT_TDP		7
#define QAIC_TELE_BOARD_POWER		8
#define QAIC_TELE_POWER_STATE		9
#define QAIC_TELE_POWER_MAX		10
#define QAIC_TELE_THROTTLE_PERCENT	11
#define QAIC_TELE_THROTTLE_TIME		12
#define QAIC_TELE_NSP_BUSY_NS		64
#define QAIC_TELE_NSP_INFERENCES	65
#define QAIC_TELE_NSP_FAULTS		66
#define QAIC_TELE_NSP_ACTIVE		67

/* Response status */
#define QAIC_TELE_OK			0
#define QAIC_TELE_UNKNOWN_CMD		1
#define QAIC_TELE_READ_ONLY		2
#define QAIC_TELE_OUT_OF_RANGE		3
#define QAIC_TELE_MALFORMED		4

struct qaic_tele_msg {
	struct qaic_status_hdr hdr;
	u8	cmd;
	u8	cmd_type;
	u8	status;
	__le64	val;
} __packed;

#define QAIC_TELE_BODY_LEN	(sizeof(struct qaic_tele_msg) - offsetof(struct qaic_tele_msg, cmd))

static_assert(sizeof(struct qaic_tele_msg) == 23);
static_assert(QAIC_TELE_BODY_LEN == 11);

static int qaic_tele_status_to_errno(u8 status)
{
	switch (status) {
	case QAIC_TELE_OK:
		return 0;
	case QAIC_TELE_UNKNOWN_CMD:
		return -EOPNOTSUPP;
	case QAIC_TELE_READ_ONLY:
		return -EACCES;
	case QAIC_TELE_OUT_OF_RANGE:
		return -EINVAL;
	default:
		return -EPROTO;
	}
}

/*
 * Send request @cmd of @cmd_type (READ or WRITE *val) and wait for its
 * response; on success *val holds the value the card returned.
 */
static int qaic_tele_xfer(struct qaic_device *qdev, u8 cmd, u8 cmd_type, s64 *val)
{
	struct qaic_telemetry *tele = &qdev->tele;
	struct qaic_tele_msg *req;
	unsigned long flags;
	bool answered;
	long left;
	int ret;

	if (!READ_ONCE(qdev->online))
		return -ENODEV;
	ret = mutex_lock_interruptible(&tele->lock);
	if (ret)
		return ret;
	if (!tele->ch) {
		ret = -ENODEV;
		goto out_unlock;
	}
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	req->hdr.magic = cpu_to_le16(QAIC_TELE_MAGIC);
	req->hdr.version = cpu_to_le16(QAIC_TELE_VERSION);
	req->hdr.seq = cpu_to_le32(tele->next_seq);
	req->hdr.type = QAIC_TELE_REQ;
	req->hdr.len = cpu_to_le16(QAIC_TELE_BODY_LEN);
	req->cmd = cmd;
	req->cmd_type = cmd_type;
	if (cmd_type == QAIC_TELE_WRITE)
		req->val = cpu_to_le64(*val);

	spin_lock_irqsave(&tele->rx_lock, flags);
	if (!tele->alive) {
		spin_unlock_irqrestore(&tele->rx_lock, flags);
		kfree(req);
		ret = -ENODEV;
		goto out_unlock;
	}
	tele->waiting = true;
	tele->seq = tele->next_seq++;
	tele->cmd = cmd;
	tele->cmd_type = cmd_type;
	reinit_completion(&tele->done);
	spin_unlock_irqrestore(&tele->rx_lock, flags);

	/* Freed by the send completion. */
	ret = mhi_queue_buf(tele->ch, DMA_TO_DEVICE, req, sizeof(*req), MHI_EOT);
	if (ret) {
		kfree(req);
		left = 0;
	} else {
		left = wait_for_completion_interruptible_timeout(&tele->done, QAIC_TELE_TIMEOUT);
	}

	spin_lock_irqsave(&tele->rx_lock, flags);
	/* No longer waiting: a response still on its way is stale. */
	answered = !tele->waiting;
	tele->waiting = false;
	if (answered) {
		ret = tele->result;
		if (!ret)
			*val = tele->val;
	}
	spin_unlock_irqrestore(&tele->rx_lock, flags);

	if (!answered && !ret)
		ret = left < 0 ? -EINTR : -ETIMEDOUT;
out_unlock:
	mutex_unlock(&tele->lock);
	return ret;
}

static int qaic_tele_read(struct qaic_device *qdev, u8 cmd, s64 *val)
{
	return qaic_tele_xfer(qdev, cmd, QAIC_TELE_READ, val);
}

static int qaic_tele_write(struct qaic_device *qdev, u8 cmd, s64 val)
{
	return qaic_tele_xfer(qdev, cmd, QAIC_TELE_WRITE, &val);
}

/* In the MHI completion path: hand a response to the request it answers. */
static void qaic_tele_rx(struct qaic_device *qdev, const struct qaic_tele_msg *msg, size_t len)
{
	struct qaic_telemetry *tele = &qdev->tele;
	unsigned long flags;

	if (len != sizeof(*msg) || le16_to_cpu(msg->hdr.magic) != QAIC_TELE_MAGIC ||
	    le16_to_cpu(msg->hdr.version) != QAIC_TELE_VERSION || msg->hdr.type != QAIC_TELE_RESP ||
	    le16_to_cpu(msg->hdr.len) != QAIC_TELE_BODY_LEN) {
		dev_warn_ratelimited(&qdev->pdev->dev,
				     "dropping a malformed %zu-byte telemetry response\n", len);
		return;
	}

	spin_lock_irqsave(&tele->rx_lock, flags);
	if (!tele->waiting || le32_to_cpu(msg->hdr.seq) != tele->seq) {
		spin_unlock_irqrestore(&tele->rx_lock, flags);
		dev_dbg(&qdev->pdev->dev, "dropping stale telemetry response %u\n",
			le32_to_cpu(msg->hdr.seq));
		return;
	}
	if (msg->cmd != tele->cmd || msg->cmd_type != tele->cmd_type || msg->hdr.id) {
		tele->result = -EPROTO;
		dev_warn_ratelimited(&qdev->pdev->dev,
				     "telemetry response %u does not match its request\n",
				     tele->seq);
	} else {
		tele->result = qaic_tele_status_to_errno(msg->status);
		tele->val = (s64)le64_to_cpu(msg->val);
	}
	tele->waiting = false;
	complete(&tele->done);
	spin_unlock_irqrestore(&tele->rx_lock, flags);
}

static void qaic_tele_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	int ret;

	/* -ENOTCONN: the channel is being reset and the buffer comes back unused. */
	if (result->transaction_status == -ENOTCONN)
		return;
	if (result->transaction_status)
		dev_warn_ratelimited(&qdev->pdev->dev, "dropping an oversized telemetry response\n");
	else
		qaic_tele_rx(qdev, result->buf_addr, result->bytes_xferd);

	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, result->buf_addr, QAIC_TELE_RX_LEN, MHI_EOT);
	/* -EIO or -ENODEV: the card is being reset or the channel is going. */
	if (ret && ret != -EIO && ret != -ENODEV)
		dev_err_ratelimited(&qdev->pdev->dev,
				    "cannot post the telemetry receive buffer: %d\n", ret);
}

static void qaic_tele_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(result->buf_addr);
}

/* hwmon: temp1 the board, temp2 the SoC, temp3 the DDR; power1 the board. */

static int qaic_hwmon_cmd(enum hwmon_sensor_types type, u32 attr, int channel)
{
	static const int temp_input[] = {
		QAIC_TELE_BOARD_TEMP, QAIC_TELE_SOC_TEMP, QAIC_TELE_DDR_TEMP,
	};

	switch (type) {
	case hwmon_temp:
		switch (attr) {
		case hwmon_temp_input:
			return channel < ARRAY_SIZE(temp_input) ? temp_input[channel] : -1;
		case hwmon_temp_highest:
			return channel == 0 ? QAIC_TELE_BOARD_MAX_TEMP :
			       channel == 1 ? QAIC_TELE_SOC_MAX_TEMP : -1;
		case hwmon_temp_crit:
			return channel == 1 ? QAIC_TELE_WARNING_TEMP : -1;
		case hwmon_temp_emergency:
			return channel == 1 ? QAIC_TELE_SHUTDOWN_TEMP : -1;
		default:
			return -1;
		}
	case hwmon_power:
		switch (attr) {
		case hwmon_power_input:
			return QAIC_TELE_BOARD_POWER;
		case hwmon_power_max:
			return QAIC_TELE_CURRENT_TDP;
		case hwmon_power_rated_max:
			return QAIC_TELE_POWER_MAX;
		default:
			return -1;
		}
	default:
		return -1;
	}
}

static umode_t qaic_hwmon_is_visible(const void *data, enum hwmon_sensor_types type, u32 attr,
				     int channel)
{
	if (qaic_hwmon_cmd(type, attr, channel) < 0)
		return 0;
	if ((type == hwmon_temp && (attr == hwmon_temp_crit || attr == hwmon_temp_emergency)) ||
	    (type == hwmon_power && attr == hwmon_power_max))
		return 0644;
	return 0444;
}

static int qaic_hwmon_read(struct device *dev, enum hwmon_sensor_types type, u32 attr,
			   int channel, long *val)
{
	int cmd = qaic_hwmon_cmd(type, attr, channel);
	s64 v;
	int ret;

	if (cmd < 0)
		return -EOPNOTSUPP;
	ret = qaic_tele_read(dev_get_drvdata(dev), cmd, &v);
	if (ret)
		return ret;
	*val = clamp_t(s64, v, LONG_MIN, LONG_MAX);
	return 0;
}

static int qaic_hwmon_write(struct device *dev, enum hwmon_sensor_types type, u32 attr,
			    int channel, long val)
{
	int cmd = qaic_hwmon_cmd(type, attr, channel);

	if (cmd < 0)
		return -EOPNOTSUPP;
	return qaic_tele_write(dev_get_drvdata(dev), cmd, val);
}

static const struct hwmon_channel_info * const qaic_hwmon_info[] = {
	HWMON_CHANNEL_INFO(temp,
			   HWMON_T_INPUT | HWMON_T_HIGHEST,
			   HWMON_T_INPUT | HWMON_T_HIGHEST | HWMON_T_CRIT | HWMON_T_EMERGENCY,
			   HWMON_T_INPUT),
	HWMON_CHANNEL_INFO(power,
			   HWMON_P_INPUT | HWMON_P_MAX | HWMON_P_RATED_MAX),
	NULL
};

static const struct hwmon_ops qaic_hwmon_ops = {
	.is_visible	= qaic_hwmon_is_visible,
	.read		= qaic_hwmon_read,
	.write		= qaic_hwmon_write,
};

static const struct hwmon_chip_info qaic_hwmon_chip = {
	.ops	= &qaic_hwmon_ops,
	.info	= qaic_hwmon_info,
};

static int qaic_tele_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_telemetry *tele = &qdev->tele;
	struct device *hwmon;
	unsigned long flags;
	void *rx;
	int ret;

	rx = kzalloc(QAIC_TELE_RX_LEN, GFP_KERNEL);
	if (!rx)
		return -ENOMEM;
	/* On failure the MHI core resets the channels; no buffer is posted by then. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		goto err_free;
	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, rx, QAIC_TELE_RX_LEN, MHI_EOT);
	if (ret)
		goto err_free;

	mutex_lock(&tele->lock);
	tele->ch = mhi_dev;
	tele->rx_buf = rx;
	mutex_unlock(&tele->lock);
	spin_lock_irqsave(&tele->rx_lock, flags);
	tele->alive = true;
	spin_unlock_irqrestore(&tele->rx_lock, flags);

	/* The values stay readable in sysfs without it. */
	hwmon = hwmon_device_register_with_info(&qdev->pdev->dev, QAIC_NAME, qdev,
						&qaic_hwmon_chip, NULL);
	if (IS_ERR(hwmon))
		pci_warn(qdev->pdev, "cannot register the hwmon device: %ld\n", PTR_ERR(hwmon));
	else
		tele->hwmon = hwmon;
	return 0;

err_free:
	kfree(rx);
	return ret;
}

static void qaic_tele_remove(struct mhi_device *mhi_dev)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_telemetry *tele = &qdev->tele;
	unsigned long flags;

	/* Fail the request under way and any to come. */
	spin_lock_irqsave(&tele->rx_lock, flags);
	tele->alive = false;
	if (tele->waiting) {
		tele->waiting = false;
		tele->result = -ENODEV;
		complete(&tele->done);
	}
	spin_unlock_irqrestore(&tele->rx_lock, flags);

	/* Waits for the hwmon callbacks under way, which no longer block. */
	if (tele->hwmon) {
		hwmon_device_unregister(tele->hwmon);
		tele->hwmon = NULL;
	}

	mutex_lock(&tele->lock);
	tele->ch = NULL;
	mutex_unlock(&tele->lock);

	/* The MHI core has reset the channels: the receive buffer is back. */
	mhi_unprepare_from_transfer(mhi_dev);
	kfree(tele->rx_buf);
	tele->rx_buf = NULL;
}

static const struct mhi_device_id qaic_tele_match_table[] = {
	{ .chan = "QAIC_TELEMETRY" },
	{}
};

struct mhi_driver qaic_telemetry_driver = {
	.id_table	= qaic_tele_match_table,
	.probe		= qaic_tele_probe,
	.remove		= qaic_tele_remove,
	.ul_xfer_cb	= qaic_tele_ul_xfer_cb,
	.dl_xfer_cb	= qaic_tele_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_telemetry",
	},
};

int qaic_telemetry_init(struct qaic_device *qdev)
{
	struct qaic_telemetry *tele = &qdev->tele;
	int ret;

	ret = drmm_mutex_init(&qdev->drm, &tele->lock);
	if (ret)
		return ret;
	spin_lock_init(&tele->rx_lock);
	init_completion(&tele->done);
	return 0;
}

/* /sys/bus/pci/devices/<bdf>/telemetry/ */

struct qaic_tele_attr {
	struct device_attribute	attr;
	u8			cmd;
};

static ssize_t qaic_tele_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct qaic_tele_attr *a = container_of(attr, struct qaic_tele_attr, attr);
	s64 val;
	int ret;

	ret = qaic_tele_read(pci_get_drvdata(to_pci_dev(dev)), a->cmd, &val);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%llu\n", (u64)val);
}

static ssize_t qaic_tele_store(struct device *dev, struct device_attribute *attr,
			       const char *buf, size_t count)
{
	struct qaic_tele_attr *a = container_of(attr, struct qaic_tele_attr, attr);
	u64 val;
	int ret;

	ret = kstrtou64(buf, 0, &val);
	if (ret)
		return ret;
	ret = qaic_tele_write(pci_get_drvdata(to_pci_dev(dev)), a->cmd, val);
	return ret ? ret : count;
}

#define QAIC_TELE_ATTR_RO(_name, _cmd)					\
static struct qaic_tele_attr qaic_tele_attr_##_name = {		\
	.attr = __ATTR(_name, 0444, qaic_tele_show, NULL),		\
	.cmd = (_cmd),							\
}

#define QAIC_TELE_ATTR_RW(_name, _cmd)					\
static struct qaic_tele_attr qaic_tele_attr_##_name = {		\
	.attr = __ATTR(_name, 0644, qaic_tele_show, qaic_tele_store),	\
	.cmd = (_cmd),							\
}

QAIC_TELE_ATTR_RO(nsp_busy_ns, QAIC_TELE_NSP_BUSY_NS);
QAIC_TELE_ATTR_RO(nsp_inferences, QAIC_TELE_NSP_INFERENCES);
QAIC_TELE_ATTR_RO(nsp_faults, QAIC_TELE_NSP_FAULTS);
QAIC_TELE_ATTR_RO(nsp_active, QAIC_TELE_NSP_ACTIVE);
QAIC_TELE_ATTR_RO(throttle_percent, QAIC_TELE_THROTTLE_PERCENT);
QAIC_TELE_ATTR_RO(throttle_time_ms, QAIC_TELE_THROTTLE_TIME);
QAIC_TELE_ATTR_RW(power_state, QAIC_TELE_POWER_STATE);

static struct attribute *qaic_tele_attrs[] = {
	&qaic_tele_attr_nsp_busy_ns.attr.attr,
	&qaic_tele_attr_nsp_inferences.attr.attr,
	&qaic_tele_attr_nsp_faults.attr.attr,
	&qaic_tele_attr_nsp_active.attr.attr,
	&qaic_tele_attr_throttle_percent.attr.attr,
	&qaic_tele_attr_throttle_time_ms.attr.attr,
	&qaic_tele_attr_power_state.attr.attr,
	NULL
};

const struct attribute_group qaic_telemetry_group = {
	.name	= "telemetry",
	.attrs	= qaic_tele_attrs,
};
