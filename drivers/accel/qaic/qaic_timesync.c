// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: keeping the card's clock in step with the host's.
 *
 * While the SBL runs, the card asks for the time on QAIC_TIMESYNC (channels
 * 20 and 21) and gets the host's UTC time back. Once the runtime is up, the
 * host sends the offset between its UTC time and the card's QTIMER on
 * QAIC_TIMESYNC_PERIODIC (channel 22) at a fixed interval, unasked.
 */

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/mhi.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/time64.h>
#include <linux/timekeeping.h>
#include <linux/timer.h>

#include "qaic.h"

/* The card's free-running 19.2 MHz QTIMER, beside the MHI registers. */
#define QAIC_QTIMER_OFF			0xa28
#define QAIC_TS_SIGNATURE		0x55aa

/* Message types */
#define QAIC_TS_CMD_TO_HOST		0	/* card asks for the time */
#define QAIC_TS_SYNC_REQ		1	/* host sends the time */
#define QAIC_TS_ACK_TO_HOST		2	/* card confirms */

static unsigned int timesync_delay_ms = 1000;
module_param(timesync_delay_ms, uint, 0600);
MODULE_PARM_DESC(timesync_delay_ms, "Interval between periodic time syncs in ms (default 1000)");

struct qaic_ts_hdr {
	__le16 signature;
	__le16 reserved0;
	u8 reserved1;
	u8 msg_type;
	__le16 reserved2;
} __packed;

struct qaic_ts_msg {
	struct qaic_ts_hdr hdr;
	__le64 tv_sec;
	__le64 tv_usec;
} __packed;

static_assert(sizeof(struct qaic_ts_hdr) == 8);
static_assert(sizeof(struct qaic_ts_msg) == 24);

/* QTIMER ticks (19.2 MHz) to microseconds. */
static u64 qaic_qtimer_to_us(u64 ticks)
{
	return mul_u64_u32_div(ticks, 10, 192);
}

/* Boot timesync (SBL). */

static void qaic_boot_ts_reply(struct mhi_device *mhi_dev, const struct qaic_ts_hdr *req)
{
	struct qaic_ts_msg *msg;
	struct timespec64 now;
	int ret;

	msg = kzalloc(sizeof(*msg), GFP_ATOMIC);
	if (!msg)
		return;

	msg->hdr = *req;
	msg->hdr.msg_type = QAIC_TS_SYNC_REQ;
	ktime_get_real_ts64(&now);
	msg->tv_sec = cpu_to_le64(now.tv_sec);
	msg->tv_usec = cpu_to_le64(now.tv_nsec / NSEC_PER_USEC);

	ret = mhi_queue_buf(mhi_dev, DMA_TO_DEVICE, msg, sizeof(*msg), MHI_EOT);
	if (ret) {
		dev_err(&mhi_dev->dev, "cannot send the boot time sync: %d\n", ret);
		kfree(msg);
	}
}

static void qaic_boot_ts_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_ts_hdr *buf = result->buf_addr;
	struct qaic_ts_hdr hdr = *buf;
	int status = result->transaction_status;

	/* -ENOTCONN: the channel is being reset; the buffer is ours to free. */
	if (status && status != -EOVERFLOW) {
		kfree(buf);
		return;
	}

	/* Post the buffer again first, so the card's next message has a place to go. */
	if (mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, buf, sizeof(*buf), MHI_EOT)) {
		dev_err(&mhi_dev->dev, "cannot re-post the time sync receive buffer\n");
		kfree(buf);
	}

	if (status || result->bytes_xferd != sizeof(hdr)) {
		dev_dbg(&mhi_dev->dev, "dropping a %zu-byte time sync message (status %d)\n",
			result->bytes_xferd, status);
		return;
	}

	switch (hdr.msg_type) {
	case QAIC_TS_CMD_TO_HOST:
		qaic_boot_ts_reply(mhi_dev, &hdr);
		break;
	case QAIC_TS_ACK_TO_HOST:
		dev_dbg(&mhi_dev->dev, "card acknowledged the boot time sync\n");
		break;
	default:
		dev_err(&mhi_dev->dev, "unknown time sync message type %u\n", hdr.msg_type);
		break;
	}
}

static void qaic_boot_ts_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(result->buf_addr);
}

static int qaic_boot_ts_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_ts_hdr *buf;
	int ret;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	/* On failure the MHI core resets the channels. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		goto err_free;
	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, buf, sizeof(*buf), MHI_EOT);
	if (ret)
		goto err_free;
	return 0;

err_free:
	kfree(buf);
	return ret;
}

static void qaic_boot_ts_remove(struct mhi_device *mhi_dev)
{
	/* Posted buffers came back through the callbacks when MHI reset the channels. */
	mhi_unprepare_from_transfer(mhi_dev);
}

static const struct mhi_device_id qaic_boot_ts_match_table[] = {
	{ .chan = "QAIC_TIMESYNC" },
	{}
};

struct mhi_driver qaic_timesync_driver = {
	.id_table	= qaic_boot_ts_match_table,
	.probe		= qaic_boot_ts_probe,
	.remove		= qaic_boot_ts_remove,
	.ul_xfer_cb	= qaic_boot_ts_ul_xfer_cb,
	.dl_xfer_cb	= qaic_boot_ts_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_timesync",
	},
};

/* Periodic timesync (AMSS). */

struct qaic_periodic_ts {
	struct mhi_device *mhi_dev;
	void __iomem *qtimer;
	struct timer_list timer;
	/* The message buffer is queued and not yet completed. */
	atomic_t busy;
	struct qaic_ts_msg *msg;
};

static void qaic_periodic_ts_arm(struct qaic_periodic_ts *ts)
{
	mod_timer(&ts->timer, jiffies + msecs_to_jiffies(max(timesync_delay_ms, 1U)));
}

static void qaic_periodic_ts_fire(struct timer_list *t)
{
	struct qaic_periodic_ts *ts = timer_container_of(ts, t, timer);
	struct qaic_ts_msg *msg = ts->msg;
	u64 host_us, card_us, offset_us;
	u32 usec;
	int ret;

	/* Only one message in flight: skip this round if the last is still queued. */
	if (atomic_cmpxchg(&ts->busy, 0, 1)) {
		qaic_periodic_ts_arm(ts);
		return;
	}

	host_us = div_u64(ktime_get_real_ns(), NSEC_PER_USEC);
	card_us = qaic_qtimer_to_us(readq(ts->qtimer));
	offset_us = host_us - card_us;

	memset(msg, 0, sizeof(*msg));
	msg->hdr.signature = cpu_to_le16(QAIC_TS_SIGNATURE);
	msg->hdr.msg_type = QAIC_TS_SYNC_REQ;
	msg->tv_sec = cpu_to_le64(div_u64_rem(offset_us, USEC_PER_SEC, &usec));
	msg->tv_usec = cpu_to_le64(usec);

	ret = mhi_queue_buf(ts->mhi_dev, DMA_TO_DEVICE, msg, sizeof(*msg), MHI_EOT);
	if (ret) {
		atomic_set(&ts->busy, 0);
		/* A full ring clears up; anything else means the channel is going. */
		if (ret != -EAGAIN) {
			dev_err(&ts->mhi_dev->dev, "periodic time sync stopped: %d\n", ret);
			return;
		}
	}
	qaic_periodic_ts_arm(ts);
}

static void qaic_periodic_ts_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_periodic_ts *ts = dev_get_drvdata(&mhi_dev->dev);

	atomic_set(&ts->busy, 0);
}

static void qaic_periodic_ts_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	/* No buffer is ever posted on channel 23. */
	dev_err(&mhi_dev->dev, "unexpected data on the periodic time sync channel\n");
}

static int qaic_periodic_ts_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_periodic_ts *ts;
	int ret;

	ts = devm_kzalloc(&mhi_dev->dev, sizeof(*ts), GFP_KERNEL);
	if (!ts)
		return -ENOMEM;
	ts->msg = devm_kzalloc(&mhi_dev->dev, sizeof(*ts->msg), GFP_KERNEL);
	if (!ts->msg)
		return -ENOMEM;
	ts->mhi_dev = mhi_dev;
	ts->qtimer = qdev->bar_mhi + QAIC_QTIMER_OFF;
	atomic_set(&ts->busy, 0);
	timer_setup(&ts->timer, qaic_periodic_ts_fire, 0);
	dev_set_drvdata(&mhi_dev->dev, ts);

	/* On failure the MHI core resets the channels. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;

	qaic_periodic_ts_arm(ts);
	return 0;
}

static void qaic_periodic_ts_remove(struct mhi_device *mhi_dev)
{
	struct qaic_periodic_ts *ts = dev_get_drvdata(&mhi_dev->dev);

	/* The timer re-arms itself: shut it down for good before the buffer goes. */
	timer_shutdown_sync(&ts->timer);
	mhi_unprepare_from_transfer(mhi_dev);
}

static const struct mhi_device_id qaic_periodic_ts_match_table[] = {
	{ .chan = "QAIC_TIMESYNC_PERIODIC" },
	{}
};

struct mhi_driver qaic_timesync_periodic_driver = {
	.id_table	= qaic_periodic_ts_match_table,
	.probe		= qaic_periodic_ts_probe,
	.remove		= qaic_periodic_ts_remove,
	.ul_xfer_cb	= qaic_periodic_ts_ul_xfer_cb,
	.dl_xfer_cb	= qaic_periodic_ts_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_timesync_periodic",
	},
};
