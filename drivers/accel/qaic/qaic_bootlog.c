// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the card's boot log on QAIC_LOGGING (channel 13), sent while its
 * SBL runs. Every receive buffer the card fills holds one NUL-terminated
 * line. The lines go to the kernel log and are kept, most recent last, in
 * debugfs "bootlog" under the accel device's directory; they outlive the
 * channel, which disappears when the card enters its runtime.
 */

#include <linux/debugfs.h>
#include <linux/dma-direction.h>
#include <linux/list.h>
#include <linux/mhi.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <drm/drm_managed.h>

#include "qaic.h"

#define QAIC_BOOTLOG_NR_BUFS	16
#define QAIC_BOOTLOG_BUF_SIZE	512
#define QAIC_BOOTLOG_MAX_LINES	256

struct qaic_bootlog_line {
	struct list_head node;
	char text[];
};

static void qaic_bootlog_free_lines(struct list_head *lines)
{
	struct qaic_bootlog_line *line, *tmp;

	list_for_each_entry_safe(line, tmp, lines, node) {
		list_del(&line->node);
		kfree(line);
	}
}

/* Forget what an earlier boot of the card logged. */
static void qaic_bootlog_clear(struct qaic_bootlog *log)
{
	unsigned long flags;
	LIST_HEAD(old);

	spin_lock_irqsave(&log->lock, flags);
	list_splice_init(&log->lines, &old);
	log->nr_lines = 0;
	spin_unlock_irqrestore(&log->lock, flags);
	qaic_bootlog_free_lines(&old);
}

/* Called from the MHI completion path: no sleeping. */
static void qaic_bootlog_add(struct qaic_device *qdev, const char *text, size_t len)
{
	struct qaic_bootlog *log = &qdev->bootlog;
	struct qaic_bootlog_line *line, *oldest = NULL;
	unsigned long flags;

	dev_info(&qdev->pdev->dev, "card: %s\n", text);

	line = kmalloc(struct_size(line, text, len + 1), GFP_ATOMIC);
	if (!line)
		return;
	memcpy(line->text, text, len + 1);

	spin_lock_irqsave(&log->lock, flags);
	list_add_tail(&line->node, &log->lines);
	if (log->nr_lines < QAIC_BOOTLOG_MAX_LINES) {
		log->nr_lines++;
	} else {
		oldest = list_first_entry(&log->lines, struct qaic_bootlog_line, node);
		list_del(&oldest->node);
	}
	spin_unlock_irqrestore(&log->lock, flags);
	kfree(oldest);
}

static void qaic_bootlog_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	char *buf = result->buf_addr;
	size_t len = min_t(size_t, result->bytes_xferd, QAIC_BOOTLOG_BUF_SIZE);

	/* -ENOTCONN: the channel is being reset; the buffer is ours to free. */
	if (result->transaction_status && result->transaction_status != -EOVERFLOW) {
		kfree(buf);
		return;
	}

	/* An empty completion carries no line; anything else is cut at its NUL. */
	if (len) {
		if (len == QAIC_BOOTLOG_BUF_SIZE || buf[len - 1] == '\0')
			buf[len - 1] = '\0';
		else
			buf[len] = '\0';
		len = strlen(buf);
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = '\0';
		if (len)
			qaic_bootlog_add(qdev, buf, len);
	}

	if (mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, buf, QAIC_BOOTLOG_BUF_SIZE, MHI_EOT))
		kfree(buf);
}

static void qaic_bootlog_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	/* Nothing is ever sent on the logging channel. */
}

static int qaic_bootlog_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	unsigned int i;
	void *buf;
	int ret;

	qaic_bootlog_clear(&qdev->bootlog);

	/* On failure from here on, the MHI core resets the channels and frees what is posted. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;

	for (i = 0; i < QAIC_BOOTLOG_NR_BUFS; i++) {
		buf = kmalloc(QAIC_BOOTLOG_BUF_SIZE, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, buf, QAIC_BOOTLOG_BUF_SIZE, MHI_EOT);
		if (ret) {
			kfree(buf);
			return ret;
		}
	}
	return 0;
}

static void qaic_bootlog_remove(struct mhi_device *mhi_dev)
{
	/* The posted buffers came back through the callback when MHI reset the channel. */
	mhi_unprepare_from_transfer(mhi_dev);
}

static int qaic_bootlog_show(struct seq_file *m, void *unused)
{
	struct qaic_device *qdev = m->private;
	struct qaic_bootlog *log = &qdev->bootlog;
	struct qaic_bootlog_line *line;
	unsigned long flags;

	spin_lock_irqsave(&log->lock, flags);
	list_for_each_entry(line, &log->lines, node)
		seq_printf(m, "%s\n", line->text);
	spin_unlock_irqrestore(&log->lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qaic_bootlog);

void qaic_bootlog_debugfs_init(struct qaic_device *qdev)
{
	qdev->bootlog.dentry = debugfs_create_file("bootlog", 0400, qdev->drm.debugfs_root,
						   qdev, &qaic_bootlog_fops);
}

void qaic_bootlog_debugfs_fini(struct qaic_device *qdev)
{
	debugfs_remove(qdev->bootlog.dentry);
	qdev->bootlog.dentry = NULL;
}

static void qaic_bootlog_release(struct drm_device *drm, void *data)
{
	struct qaic_device *qdev = data;

	qaic_bootlog_free_lines(&qdev->bootlog.lines);
}

int qaic_bootlog_init(struct qaic_device *qdev)
{
	struct qaic_bootlog *log = &qdev->bootlog;

	spin_lock_init(&log->lock);
	INIT_LIST_HEAD(&log->lines);
	log->nr_lines = 0;
	return drmm_add_action_or_reset(&qdev->drm, qaic_bootlog_release, qdev);
}

static const struct mhi_device_id qaic_bootlog_match_table[] = {
	{ .chan = "QAIC_LOGGING" },
	{}
};

struct mhi_driver qaic_bootlog_driver = {
	.id_table	= qaic_bootlog_match_table,
	.probe		= qaic_bootlog_probe,
	.remove		= qaic_bootlog_remove,
	.ul_xfer_cb	= qaic_bootlog_ul_xfer_cb,
	.dl_xfer_cb	= qaic_bootlog_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_bootlog",
	},
};
