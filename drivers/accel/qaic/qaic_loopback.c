// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: echo test over QAIC_LOOPBACK (channels 0 and 1), driven from
 * debugfs "loopback" under the accel device's directory.
 *
 * A write() of 1 to 64 KiB goes to the card as one transfer; the card
 * sends the same bytes back, filling the receive buffers posted for them
 * in order. The write returns once all of them are back, and a read() then
 * returns them from offset 0.
 */

#include <linux/debugfs.h>
#include <linux/dma-direction.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/mhi.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <drm/drm_managed.h>

#include "qaic.h"

#define QAIC_LB_MAX_LEN		SZ_64K
#define QAIC_LB_CHUNK		SZ_32K
#define QAIC_LB_MAX_CHUNKS	(QAIC_LB_MAX_LEN / QAIC_LB_CHUNK)
#define QAIC_LB_TIMEOUT		(5 * HZ)

/*
 * A buffer handed to MHI. It belongs to MHI until its completion callback,
 * which frees it, runs; the header records its size for the bookkeeping.
 */
struct qaic_lb_buf {
	size_t len;
	u8 data[] __aligned(8);
};

static struct qaic_lb_buf *qaic_lb_buf_alloc(size_t len)
{
	struct qaic_lb_buf *b;

	b = kmalloc(struct_size(b, data, len), GFP_KERNEL);
	if (b)
		b->len = len;
	return b;
}

static void qaic_lb_free_all(struct qaic_lb_buf **bufs, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		kfree(bufs[i]);
		bufs[i] = NULL;
	}
}

static void qaic_lb_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_lb_buf *b = container_of(result->buf_addr, struct qaic_lb_buf, data);
	struct qaic_loopback *lb = &qdev->lb;
	unsigned long flags;
	size_t n;

	spin_lock_irqsave(&lb->rx_lock, flags);
	lb->dl_posted -= min(lb->dl_posted, b->len);
	/* -ENOTCONN: the channel is being reset and nothing arrived. */
	if (lb->active && (!result->transaction_status ||
			   result->transaction_status == -EOVERFLOW)) {
		n = min(result->bytes_xferd, lb->expected - lb->received);
		memcpy(lb->result + lb->received, b->data, n);
		lb->received += n;
		if (lb->received == lb->expected)
			complete(&lb->done);
	}
	spin_unlock_irqrestore(&lb->rx_lock, flags);
	kfree(b);
}

static void qaic_lb_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(container_of(result->buf_addr, struct qaic_lb_buf, data));
}

/*
 * Post receive buffers until @len bytes of them are outstanding. Buffers
 * left over from an earlier, failed echo count: the card fills them first.
 */
static int qaic_lb_post_rx(struct qaic_loopback *lb, struct mhi_device *ch, size_t len)
{
	struct qaic_lb_buf *rx[QAIC_LB_MAX_CHUNKS] = { };
	unsigned int nr = 0, i;
	size_t need, chunk;
	int ret;

	spin_lock_irq(&lb->rx_lock);
	need = len > lb->dl_posted ? len - lb->dl_posted : 0;
	spin_unlock_irq(&lb->rx_lock);

	while (need) {
		chunk = min_t(size_t, need, QAIC_LB_CHUNK);
		rx[nr] = qaic_lb_buf_alloc(chunk);
		if (!rx[nr]) {
			ret = -ENOMEM;
			goto err_free;
		}
		need -= chunk;
		nr++;
	}
	if (mhi_get_free_desc_count(ch, DMA_FROM_DEVICE) < nr) {
		ret = -EBUSY;
		goto err_free;
	}

	for (i = 0; i < nr; i++) {
		/* Account first: the completion may run before mhi_queue_buf() returns. */
		spin_lock_irq(&lb->rx_lock);
		lb->dl_posted += rx[i]->len;
		spin_unlock_irq(&lb->rx_lock);
		ret = mhi_queue_buf(ch, DMA_FROM_DEVICE, rx[i]->data, rx[i]->len, MHI_EOT);
		if (ret) {
			spin_lock_irq(&lb->rx_lock);
			lb->dl_posted -= rx[i]->len;
			spin_unlock_irq(&lb->rx_lock);
			qaic_lb_free_all(&rx[i], nr - i);
			return ret;
		}
	}
	return 0;

err_free:
	qaic_lb_free_all(rx, nr);
	return ret;
}

/* Send @len bytes from user space as one transfer of chained TREs. */
static int qaic_lb_send(struct mhi_device *ch, const char __user *ubuf, size_t len)
{
	struct qaic_lb_buf *tx[QAIC_LB_MAX_CHUNKS] = { };
	unsigned int nr = 0, i;
	size_t off, chunk;
	int ret;

	for (off = 0; off < len; off += chunk) {
		chunk = min_t(size_t, len - off, QAIC_LB_CHUNK);
		tx[nr] = qaic_lb_buf_alloc(chunk);
		if (!tx[nr]) {
			ret = -ENOMEM;
			goto err_free;
		}
		nr++;
		if (copy_from_user(tx[nr - 1]->data, ubuf + off, chunk)) {
			ret = -EFAULT;
			goto err_free;
		}
	}
	if (mhi_get_free_desc_count(ch, DMA_TO_DEVICE) < nr) {
		ret = -EBUSY;
		goto err_free;
	}

	for (i = 0; i < nr; i++) {
		ret = mhi_queue_buf(ch, DMA_TO_DEVICE, tx[i]->data, tx[i]->len,
				    i == nr - 1 ? MHI_EOT : MHI_CHAIN);
		if (ret) {
			dev_err(&ch->dev, "loopback transfer only partly queued: %d\n", ret);
			qaic_lb_free_all(&tx[i], nr - i);
			return ret;
		}
	}
	return 0;

err_free:
	qaic_lb_free_all(tx, nr);
	return ret;
}

static ssize_t qaic_lb_write(struct file *file, const char __user *ubuf, size_t len,
			     loff_t *ppos)
{
	struct qaic_device *qdev = file->private_data;
	struct qaic_loopback *lb = &qdev->lb;
	long left;
	int ret;

	if (!len || len > QAIC_LB_MAX_LEN)
		return -EINVAL;

	ret = mutex_lock_interruptible(&lb->lock);
	if (ret)
		return ret;

	lb->result_len = 0;
	*ppos = 0;
	if (!lb->ch) {
		ret = -ENODEV;
		goto out_unlock;
	}

	spin_lock_irq(&lb->rx_lock);
	if (!lb->alive) {
		spin_unlock_irq(&lb->rx_lock);
		ret = -ENODEV;
		goto out_unlock;
	}
	reinit_completion(&lb->done);
	lb->expected = len;
	lb->received = 0;
	lb->active = true;
	spin_unlock_irq(&lb->rx_lock);

	ret = qaic_lb_post_rx(lb, lb->ch, len);
	if (!ret)
		ret = qaic_lb_send(lb->ch, ubuf, len);
	if (!ret) {
		left = wait_for_completion_interruptible_timeout(&lb->done, QAIC_LB_TIMEOUT);
		if (left < 0)
			ret = left;
		else if (!left)
			ret = -ETIMEDOUT;
	}

	spin_lock_irq(&lb->rx_lock);
	lb->active = false;
	if (!ret && lb->received != lb->expected)
		ret = -ENODEV;	/* woken because the channel went away */
	spin_unlock_irq(&lb->rx_lock);

	if (!ret)
		lb->result_len = len;

out_unlock:
	mutex_unlock(&lb->lock);
	if (ret)
		return ret;
	return len;
}

static ssize_t qaic_lb_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	struct qaic_device *qdev = file->private_data;
	struct qaic_loopback *lb = &qdev->lb;
	ssize_t ret;

	ret = mutex_lock_interruptible(&lb->lock);
	if (ret)
		return ret;
	ret = simple_read_from_buffer(ubuf, len, ppos, lb->result, lb->result_len);
	mutex_unlock(&lb->lock);
	return ret;
}

static const struct file_operations qaic_lb_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.read	= qaic_lb_read,
	.write	= qaic_lb_write,
	.llseek	= default_llseek,
};

static int qaic_lb_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_loopback *lb = &qdev->lb;
	int ret;

	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;

	mutex_lock(&lb->lock);
	lb->ch = mhi_dev;
	spin_lock_irq(&lb->rx_lock);
	lb->alive = true;
	lb->dl_posted = 0;
	spin_unlock_irq(&lb->rx_lock);
	mutex_unlock(&lb->lock);
	return 0;
}

static void qaic_lb_remove(struct mhi_device *mhi_dev)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_loopback *lb = &qdev->lb;

	/* Wake a writer first: it holds lb->lock while it waits. */
	spin_lock_irq(&lb->rx_lock);
	lb->alive = false;
	complete(&lb->done);
	spin_unlock_irq(&lb->rx_lock);

	mutex_lock(&lb->lock);
	lb->ch = NULL;
	mutex_unlock(&lb->lock);

	mhi_unprepare_from_transfer(mhi_dev);
}

void qaic_loopback_debugfs_init(struct qaic_device *qdev)
{
	qdev->lb.dentry = debugfs_create_file("loopback", 0600, qdev->drm.debugfs_root,
					      qdev, &qaic_lb_fops);
}

void qaic_loopback_debugfs_fini(struct qaic_device *qdev)
{
	debugfs_remove(qdev->lb.dentry);
	qdev->lb.dentry = NULL;
}

static void qaic_loopback_release(struct drm_device *drm, void *data)
{
	kvfree(data);
}

int qaic_loopback_init(struct qaic_device *qdev)
{
	struct qaic_loopback *lb = &qdev->lb;
	int ret;

	ret = drmm_mutex_init(&qdev->drm, &lb->lock);
	if (ret)
		return ret;
	spin_lock_init(&lb->rx_lock);
	init_completion(&lb->done);

	lb->result = kvzalloc(QAIC_LB_MAX_LEN, GFP_KERNEL);
	if (!lb->result)
		return -ENOMEM;
	return drmm_add_action_or_reset(&qdev->drm, qaic_loopback_release, lb->result);
}

static const struct mhi_device_id qaic_lb_match_table[] = {
	{ .chan = "QAIC_LOOPBACK" },
	{}
};

struct mhi_driver qaic_loopback_driver = {
	.id_table	= qaic_lb_match_table,
	.probe		= qaic_lb_probe,
	.remove		= qaic_lb_remove,
	.ul_xfer_cb	= qaic_lb_ul_xfer_cb,
	.dl_xfer_cb	= qaic_lb_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_loopback",
	},
};
