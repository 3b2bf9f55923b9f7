// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the NNC control protocol on QAIC_CONTROL (channels 10 and 11).
 *
 * Every request is a 32-byte header followed by transactions, each sent in
 * its own TRE of one chained transfer; the header goes alone in the first.
 * Before a request goes out, one 4 KiB receive buffer is posted for its
 * reply. The card answers with a message that carries the request's
 * sequence number, which is how replies find their waiters.
 *
 * When the channel comes up the driver asks the card for its status. A
 * card speaking protocol 5.0 is then ONLINE.
 *
 * A reply that no waiter claims (its sender timed out, was interrupted or
 * has gone) is handed to qaic_manage_orphan() from a work item, so that the
 * DBC releases it may announce are not lost.
 */

#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/dma-direction.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/mhi.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <drm/drm_managed.h>

#include "qaic.h"
#include "qaic_accel.h"
#include "qaic_nnc.h"

/* Waiting for room in the send ring: QAIC_CNTL_SEND_TRIES x QAIC_CNTL_SEND_WAIT_MS. */
#define QAIC_CNTL_SEND_TRIES		20
#define QAIC_CNTL_SEND_WAIT_MS		100
/*
 * A message of more TREs than this has the TREs after its header packed
 * into fewer, larger ones (the card concatenates them anyway), so that it
 * fits the 128-element send ring.
 */
#define QAIC_CNTL_MAX_TRES		64
#define QAIC_CNTL_PACKED_TRE_LEN	SZ_16K
/* Largest TRE a message asking for one TRE is packed into (TREs count 16 bits). */
#define QAIC_CNTL_ONE_TRE_LEN		SZ_32K
/* Protocol version this driver speaks. */
#define QAIC_CNTL_MAJOR			5
#define QAIC_CNTL_MINOR			0
/* STATUS_FROM_DEV status_flags: the card checks and generates CRCs. */
#define QAIC_CNTL_FLAG_CRC		BIT_ULL(0)

static unsigned int control_resp_timeout_s = 60;
module_param(control_resp_timeout_s, uint, 0600);
MODULE_PARM_DESC(control_resp_timeout_s, "Time to wait for an NNC reply in s (default 60)");

/*
 * One TRE's worth of an outgoing message. Once queued, the segment belongs
 * to MHI and is freed by the send completion.
 */
struct qaic_cntl_seg {
	struct list_head node;
	u32 len;
	u8 data[] __aligned(8);
};

/* A reply no waiter claimed, queued for qaic_cntl_orphan_work(). */
struct qaic_cntl_orphan {
	struct list_head node;
	void *msg;
	size_t len;
};

/* A sender waiting for the reply carrying its sequence number. */
struct qaic_cntl_waiter {
	struct list_head node;
	u32 seq;
	struct completion done;
	/* Set by the receive path; the waiter then owns the buffer. */
	void *reply;
	size_t reply_len;
};

/* Append a segment of @len zeroed bytes, which will go out in its own TRE. */
void *qaic_cntl_req_add(struct qaic_cntl_req *req, u32 len)
{
	struct qaic_cntl_seg *seg;

	if (!len || len > QAIC_NNC_MAX_REQUEST - req->len)
		return NULL;
	seg = kzalloc(struct_size(seg, data, len), GFP_KERNEL);
	if (!seg)
		return NULL;
	seg->len = len;
	list_add_tail(&seg->node, &req->segs);
	req->nr_segs++;
	req->len += len;
	return seg->data;
}

void qaic_cntl_req_free(struct qaic_cntl_req *req)
{
	struct qaic_cntl_seg *seg, *tmp;

	list_for_each_entry_safe(seg, tmp, &req->segs, node) {
		list_del(&seg->node);
		kfree(seg);
	}
	req->nr_segs = 0;
	req->len = 0;
	req->count = 0;
}

/* Start a message on behalf of user @handle (0 for the driver itself). */
int qaic_cntl_req_init(struct qaic_cntl_req *req, u32 handle)
{
	INIT_LIST_HEAD(&req->segs);
	req->nr_segs = 0;
	req->len = 0;
	req->count = 0;
	req->handle = handle;
	req->one_tre = false;
	req->queued = false;
	if (!qaic_cntl_req_add(req, sizeof(struct qaic_wire_hdr)))
		return -ENOMEM;
	return 0;
}

/*
 * Append a transaction of @len bytes (header included) in a segment of its
 * own; returns the transaction, its payload zeroed, or NULL.
 */
void *qaic_cntl_req_add_trans(struct qaic_cntl_req *req, u32 type, u32 len)
{
	struct qaic_wire_trans_hdr *trans;

	if (len < sizeof(*trans))
		return NULL;
	trans = qaic_cntl_req_add(req, len);
	if (!trans)
		return NULL;
	trans->type = cpu_to_le32(type);
	trans->len = cpu_to_le32(len);
	req->count++;
	return trans;
}

/*
 * Concatenate the segments after the first @keep into as few segments of
 * at most @max bytes as possible, keeping their order; a segment that is
 * larger than @max on its own stays as it is.
 */
static int qaic_cntl_req_pack(struct qaic_cntl_req *req, unsigned int keep, u32 max)
{
	struct qaic_cntl_seg *seg, *tmp, *run, *packed;
	LIST_HEAD(out);
	unsigned int i = 0;
	u32 len;

	seg = list_first_entry(&req->segs, struct qaic_cntl_seg, node);
	while (i < keep && !list_entry_is_head(seg, &req->segs, node)) {
		seg = list_next_entry(seg, node);
		i++;
	}

	while (!list_entry_is_head(seg, &req->segs, node)) {
		/* Gather the run of segments that fits in one TRE. */
		len = seg->len;
		run = seg;
		tmp = list_next_entry(seg, node);
		while (!list_entry_is_head(tmp, &req->segs, node) && len <= max &&
		       tmp->len <= max - len) {
			len += tmp->len;
			tmp = list_next_entry(tmp, node);
		}
		if (list_next_entry(run, node) == tmp) {
			/* A run of one: move it as it is. */
			seg = tmp;
			list_move_tail(&run->node, &out);
			continue;
		}
		packed = kmalloc(struct_size(packed, data, len), GFP_KERNEL);
		if (!packed) {
			/* Put back what was moved; the message is unchanged. */
			list_splice_tail(&out, &run->node);
			return -ENOMEM;
		}
		packed->len = 0;
		seg = run;
		while (seg != tmp) {
			run = list_next_entry(seg, node);
			memcpy(packed->data + packed->len, seg->data, seg->len);
			packed->len += seg->len;
			list_del(&seg->node);
			kfree(seg);
			req->nr_segs--;
			seg = run;
		}
		list_add_tail(&packed->node, &out);
		req->nr_segs++;
	}
	list_splice_tail(&out, &req->segs);
	return 0;
}

/* CRC-32 (IEEE 802.3) of the whole message, with its crc32 field still 0. */
static u32 qaic_cntl_req_crc(struct qaic_cntl_req *req)
{
	struct qaic_cntl_seg *seg;
	u32 crc = ~0U;

	list_for_each_entry(seg, &req->segs, node)
		crc = crc32_le(crc, seg->data, seg->len);
	return ~crc;
}

/* Does the CRC-32 of the @len-byte message @reply match its crc32 field? */
bool qaic_cntl_reply_crc_ok(void *reply, u32 len)
{
	struct qaic_wire_hdr *hdr = reply;
	u32 want = le32_to_cpu(hdr->crc32);
	u32 crc;

	hdr->crc32 = 0;
	crc = ~crc32_le(~0U, reply, len);
	hdr->crc32 = cpu_to_le32(want);
	return crc == want;
}

/* Complete every waiter without a reply: the card went away or was reset. */
void qaic_control_wake_all(struct qaic_device *qdev)
{
	struct qaic_control *cntl = &qdev->cntl;
	struct qaic_cntl_waiter *w, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&cntl->pending_lock, flags);
	list_for_each_entry_safe(w, tmp, &cntl->pending, node) {
		list_del_init(&w->node);
		complete(&w->done);
	}
	spin_unlock_irqrestore(&cntl->pending_lock, flags);
}

/*
 * Wait until the send ring has room for @nr TREs. Called with cntl->lock
 * held; only an @interruptible sender gives up on a signal.
 */
static int qaic_cntl_wait_for_room(struct mhi_device *ch, unsigned int nr, bool interruptible)
{
	unsigned int i;

	for (i = 0; i < QAIC_CNTL_SEND_TRIES; i++) {
		if (mhi_get_free_desc_count(ch, DMA_TO_DEVICE) >= nr)
			return 0;
		if (!interruptible) {
			msleep(QAIC_CNTL_SEND_WAIT_MS);
			continue;
		}
		if (msleep_interruptible(QAIC_CNTL_SEND_WAIT_MS) && signal_pending(current))
			return -ERESTARTSYS;
	}
	return -EAGAIN;
}

static void qaic_cntl_unlist(struct qaic_control *cntl, struct qaic_cntl_waiter *w)
{
	unsigned long flags;

	spin_lock_irqsave(&cntl->pending_lock, flags);
	list_del_init(&w->node);
	spin_unlock_irqrestore(&cntl->pending_lock, flags);
}

/* Stamp the wire header of @req's first segment; called with cntl->lock held. */
static void qaic_cntl_stamp_hdr(struct qaic_control *cntl, struct qaic_cntl_req *req, u32 seq)
{
	struct qaic_cntl_seg *seg = list_first_entry(&req->segs, struct qaic_cntl_seg, node);
	struct qaic_wire_hdr *hdr = (struct qaic_wire_hdr *)seg->data;

	hdr->crc32 = 0;
	hdr->magic = cpu_to_le32(QAIC_NNC_MAGIC);
	hdr->seq = cpu_to_le32(seq);
	hdr->len = cpu_to_le32(req->len);
	hdr->count = cpu_to_le32(req->count);
	hdr->handle = cpu_to_le32(req->handle);
	hdr->partition_id = cpu_to_le32(QAIC_NNC_NO_PARTITION);
	hdr->padding = 0;
	if (cntl->gen_crc)
		hdr->crc32 = cpu_to_le32(qaic_cntl_req_crc(req));
}

/* List @w as pending; even an instant reply then finds its waiter. */
static int qaic_cntl_list(struct qaic_control *cntl, struct qaic_cntl_waiter *w)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&cntl->pending_lock, flags);
	if (cntl->alive)
		list_add_tail(&w->node, &cntl->pending);
	else
		ret = -ENODEV;
	spin_unlock_irqrestore(&cntl->pending_lock, flags);
	return ret;
}

/* Post the buffer the reply will land in, unless one is left over. */
static int qaic_cntl_post_reply_buf(struct qaic_control *cntl, struct mhi_device *ch)
{
	void *rx;
	int ret;

	if (cntl->spare_dl) {
		cntl->spare_dl--;
		return 0;
	}
	rx = kmalloc(QAIC_NNC_MAX_REPLY, GFP_KERNEL);
	if (!rx)
		return -ENOMEM;
	ret = mhi_queue_buf(ch, DMA_FROM_DEVICE, rx, QAIC_NNC_MAX_REPLY, MHI_EOT);
	if (ret)
		kfree(rx);
	return ret;
}

/* Hand @req's segments to MHI, chained, the last one ending the transfer. */
static int qaic_cntl_queue_segs(struct qaic_control *cntl, struct mhi_device *ch,
				struct qaic_cntl_req *req, u32 seq)
{
	struct qaic_cntl_seg *seg, *tmp;
	int ret;

	list_for_each_entry_safe(seg, tmp, &req->segs, node) {
		bool last = list_is_last(&seg->node, &req->segs);

		list_del(&seg->node);
		req->nr_segs--;
		ret = mhi_queue_buf(ch, DMA_TO_DEVICE, seg->data, seg->len,
				    last ? MHI_EOT : MHI_CHAIN);
		if (ret) {
			kfree(seg);
			dev_err(&ch->dev, "cannot queue NNC request %u: %d\n", seq, ret);
			/* No reply will use the posted buffer: keep it for the next request. */
			cntl->spare_dl++;
			return ret;
		}
		req->queued = true;
	}
	return 0;
}

/* Number, checksum and queue @req; @w is listed before any TRE goes out. */
static int qaic_cntl_send(struct qaic_device *qdev, struct qaic_cntl_req *req,
			  struct qaic_cntl_waiter *w, bool interruptible, bool *check_crc)
{
	struct qaic_control *cntl = &qdev->cntl;
	struct mhi_device *ch;
	int ret;

	if (req->one_tre)
		ret = qaic_cntl_req_pack(req, 0, QAIC_CNTL_ONE_TRE_LEN);
	else if (req->nr_segs > QAIC_CNTL_MAX_TRES)
		ret = qaic_cntl_req_pack(req, 1, QAIC_CNTL_PACKED_TRE_LEN);
	else
		ret = 0;
	if (ret)
		return ret;

	mutex_lock(&cntl->lock);
	ch = cntl->ch;
	if (!ch) {
		ret = -ENODEV;
		goto out_unlock;
	}
	ret = qaic_cntl_wait_for_room(ch, req->nr_segs, interruptible);
	if (ret)
		goto out_unlock;

	w->seq = cntl->next_seq++;
	qaic_cntl_stamp_hdr(cntl, req, w->seq);
	*check_crc = cntl->check_crc;
	ret = qaic_cntl_list(cntl, w);
	if (ret)
		goto out_unlock;
	ret = qaic_cntl_post_reply_buf(cntl, ch);
	if (!ret)
		ret = qaic_cntl_queue_segs(cntl, ch, req, w->seq);
	if (ret)
		qaic_cntl_unlist(cntl, w);
out_unlock:
	mutex_unlock(&cntl->lock);
	return ret;
}

/*
 * Walk the transactions of a received message. Returns the next one, or
 * NULL when the message is exhausted; *err is set if it is malformed.
 */
static struct qaic_wire_trans_hdr *qaic_cntl_next_trans(void *msg, u32 *off, u32 *left,
							int *err)
{
	struct qaic_wire_hdr *hdr = msg;
	struct qaic_wire_trans_hdr *trans;
	u32 msg_len = le32_to_cpu(hdr->len);
	u32 len;

	*err = 0;
	if (!*left) {
		if (*off != msg_len)
			*err = -EINVAL;	/* transactions do not fill the message */
		return NULL;
	}
	if (*off > msg_len || msg_len - *off < sizeof(*trans)) {
		*err = -EINVAL;
		return NULL;
	}
	trans = msg + *off;
	len = le32_to_cpu(trans->len);
	if (len < sizeof(*trans) || len > msg_len - *off) {
		*err = -EINVAL;
		return NULL;
	}
	*off += len;
	(*left)--;
	return trans;
}

/*
 * Send @req and wait for the card's reply. On success *reply holds the
 * reply (kfree() it); its header has been checked: magic, echoed sequence
 * number, a length that fits what arrived and, once negotiated, the CRC.
 */
int qaic_cntl_xfer(struct qaic_device *qdev, struct qaic_cntl_req *req,
		   bool interruptible, void **reply)
{
	struct qaic_control *cntl = &qdev->cntl;
	unsigned long timeout = (unsigned long)control_resp_timeout_s * HZ;
	struct qaic_cntl_waiter w = { };
	struct qaic_wire_hdr *hdr;
	bool check_crc;
	long left;
	u32 len;
	int ret;

	INIT_LIST_HEAD(&w.node);
	init_completion(&w.done);

	ret = qaic_cntl_send(qdev, req, &w, interruptible, &check_crc);
	if (ret)
		return ret;

	if (interruptible)
		left = wait_for_completion_interruptible_timeout(&w.done, timeout);
	else
		left = wait_for_completion_timeout(&w.done, timeout);

	qaic_cntl_unlist(cntl, &w);

	if (!w.reply) {
		if (left < 0)
			return left;
		/* Woken without a reply: the card was reset or went away. */
		return left ? -EIO : -ETIMEDOUT;
	}

	hdr = w.reply;
	len = le32_to_cpu(hdr->len);
	if (len < sizeof(*hdr) || len > w.reply_len) {
		pci_err(qdev->pdev, "NNC reply %u: bad length %u (%zu received)\n",
			w.seq, len, w.reply_len);
		ret = -EINVAL;
		goto err_free;
	}
	if (check_crc && !qaic_cntl_reply_crc_ok(w.reply, len)) {
		pci_err(qdev->pdev, "NNC reply %u: CRC mismatch\n", w.seq);
		ret = -EPIPE;
		goto err_free;
	}

	*reply = w.reply;
	return 0;

err_free:
	kfree(w.reply);
	return ret;
}

/* Send a STATUS_TO_DEV transaction; *reply is the card's answer. */
static int qaic_cntl_status_xfer(struct qaic_device *qdev, void **reply)
{
	struct qaic_cntl_req req;
	int ret;

	ret = qaic_cntl_req_init(&req, 0);
	if (ret)
		goto out;
	if (!qaic_cntl_req_add_trans(&req, QAIC_TRANS_STATUS_TO_DEV,
				     sizeof(struct qaic_wire_trans_hdr))) {
		ret = -ENOMEM;
		goto out;
	}
	ret = qaic_cntl_xfer(qdev, &req, false, reply);
	if (ret == -ENODEV || ret == -EIO)
		/* The channel is going away under us; whoever takes it down reports why. */
		pci_dbg(qdev->pdev, "NNC status request abandoned: %d\n", ret);
	else if (ret)
		pci_err(qdev->pdev, "NNC status request failed: %d\n", ret);
out:
	qaic_cntl_req_free(&req);
	return ret;
}

/* The reply must hold exactly one STATUS_FROM_DEV transaction. */
static struct qaic_wire_status_from_dev *qaic_cntl_status_trans(struct qaic_device *qdev,
								void *reply)
{
	struct qaic_wire_status_from_dev *st = NULL;
	struct qaic_wire_hdr *hdr = reply;
	struct qaic_wire_trans_hdr *trans;
	u32 off = sizeof(*hdr);
	u32 left = le32_to_cpu(hdr->count);
	int ret = 0;

	while ((trans = qaic_cntl_next_trans(reply, &off, &left, &ret))) {
		if (le32_to_cpu(trans->type) != QAIC_TRANS_STATUS_FROM_DEV ||
		    le32_to_cpu(trans->len) < sizeof(*st) || st) {
			ret = -EINVAL;
			break;
		}
		st = (struct qaic_wire_status_from_dev *)trans;
	}
	if (ret || !st) {
		pci_err(qdev->pdev, "malformed NNC status reply\n");
		return NULL;
	}
	return st;
}

/* Use CRCs from now on if the card asks for them, after checking this reply's. */
static int qaic_cntl_status_crc(struct qaic_device *qdev, void *reply, u64 flags)
{
	struct qaic_control *cntl = &qdev->cntl;
	struct qaic_wire_hdr *hdr = reply;
	int ret = 0;

	mutex_lock(&cntl->lock);
	if (!(flags & QAIC_CNTL_FLAG_CRC)) {
		cntl->gen_crc = false;
		cntl->check_crc = false;
	} else if (qaic_cntl_reply_crc_ok(reply, le32_to_cpu(hdr->len))) {
		cntl->check_crc = true;
	} else {
		pci_err(qdev->pdev, "NNC status reply: CRC mismatch\n");
		ret = -EPIPE;
	}
	mutex_unlock(&cntl->lock);
	return ret;
}

/* Ask the card for its protocol version; on 5.0 the card is ONLINE. */
static int qaic_cntl_status(struct qaic_device *qdev)
{
	struct qaic_wire_status_from_dev *st;
	void *reply = NULL;
	u16 major, minor;
	u32 status;
	int ret;

	ret = qaic_cntl_status_xfer(qdev, &reply);
	if (ret)
		goto out;
	st = qaic_cntl_status_trans(qdev, reply);
	if (!st) {
		ret = -EINVAL;
		goto out;
	}
	major = le16_to_cpu(st->major);
	minor = le16_to_cpu(st->minor);
	status = le32_to_cpu(st->status);
	if (status) {
		pci_err(qdev->pdev, "card refused the NNC status request: status %u\n", status);
		ret = -ECANCELED;
		goto out;
	}
	ret = qaic_cntl_status_crc(qdev, reply, le64_to_cpu(st->status_flags));
	if (ret)
		goto out;
	if (major != QAIC_CNTL_MAJOR || minor > QAIC_CNTL_MINOR) {
		pci_err(qdev->pdev, "card speaks NNC protocol %u.%u, this driver needs %u.%u; staying offline\n",
			major, minor, QAIC_CNTL_MAJOR, QAIC_CNTL_MINOR);
		ret = -EPROTO;
		goto out;
	}
	qaic_dev_set_online(qdev);
	pci_info(qdev->pdev, "card online (NNC %u.%u)\n", major, minor);
out:
	kfree(reply);
	return ret;
}

/* Stop using the channel: fail all waiters and, if asked, reset both channels. */
static void qaic_cntl_close(struct qaic_device *qdev, bool reset)
{
	struct qaic_control *cntl = &qdev->cntl;
	struct mhi_device *ch = NULL;
	unsigned long flags;

	spin_lock_irqsave(&cntl->pending_lock, flags);
	cntl->alive = false;
	spin_unlock_irqrestore(&cntl->pending_lock, flags);
	qaic_control_wake_all(qdev);

	mutex_lock(&cntl->lock);
	if (cntl->prepared && reset)
		ch = cntl->ch;
	cntl->prepared = false;
	cntl->ch = NULL;
	cntl->spare_dl = 0;
	mutex_unlock(&cntl->lock);

	/* Returns every posted buffer through the completion callbacks. */
	if (ch)
		mhi_unprepare_from_transfer(ch);
}

static void qaic_cntl_status_work(struct work_struct *work)
{
	struct qaic_device *qdev = container_of(work, struct qaic_device, cntl.status_work);
	int ret;

	ret = qaic_cntl_status(qdev);
	/*
	 * -ENODEV and -EIO mean the channel is already being torn down (card
	 * reset, SYS_ERROR, removal); that path resets it. For any other
	 * failure the card is alive but unusable: give the channels back.
	 */
	if (ret && ret != -ENODEV && ret != -EIO)
		qaic_cntl_close(qdev, true);
}

/* Hand the replies no waiter claimed to the MANAGE layer. */
static void qaic_cntl_orphan_work(struct work_struct *work)
{
	struct qaic_device *qdev = container_of(work, struct qaic_device, cntl.orphan_work);
	struct qaic_control *cntl = &qdev->cntl;
	struct qaic_cntl_orphan *o;
	struct qaic_wire_hdr *hdr;
	unsigned long flags;
	bool check_crc;
	u32 len;

	for (;;) {
		spin_lock_irqsave(&cntl->pending_lock, flags);
		o = list_first_entry_or_null(&cntl->orphans, struct qaic_cntl_orphan, node);
		if (o)
			list_del(&o->node);
		spin_unlock_irqrestore(&cntl->pending_lock, flags);
		if (!o)
			return;

		hdr = o->msg;
		len = le32_to_cpu(hdr->len);
		mutex_lock(&cntl->lock);
		check_crc = cntl->check_crc;
		mutex_unlock(&cntl->lock);
		if (len < sizeof(*hdr) || len > o->len ||
		    (check_crc && !qaic_cntl_reply_crc_ok(hdr, len)))
			dev_dbg(&qdev->pdev->dev, "dropping a malformed NNC reply %u\n",
				le32_to_cpu(hdr->seq));
		else
			qaic_manage_orphan(qdev, hdr);
		kfree(hdr);
		kfree(o);
	}
}

/* Drop the orphans not handled yet; the channel is gone. */
static void qaic_cntl_drop_orphans(struct qaic_device *qdev)
{
	struct qaic_control *cntl = &qdev->cntl;
	struct qaic_cntl_orphan *o, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	cancel_work_sync(&cntl->orphan_work);
	spin_lock_irqsave(&cntl->pending_lock, flags);
	list_splice_init(&cntl->orphans, &list);
	spin_unlock_irqrestore(&cntl->pending_lock, flags);
	list_for_each_entry_safe(o, tmp, &list, node) {
		kfree(o->msg);
		kfree(o);
	}
}

static int qaic_control_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_control *cntl = &qdev->cntl;
	unsigned long flags;
	int ret;

	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;

	mutex_lock(&cntl->lock);
	cntl->ch = mhi_dev;
	cntl->prepared = true;
	/* Send CRCs but do not check them until the card says it uses them. */
	cntl->gen_crc = true;
	cntl->check_crc = false;
	cntl->spare_dl = 0;
	mutex_unlock(&cntl->lock);

	spin_lock_irqsave(&cntl->pending_lock, flags);
	cntl->alive = true;
	spin_unlock_irqrestore(&cntl->pending_lock, flags);

	/* The exchange can take long; keep it off the MHI state worker. */
	queue_work(system_dfl_wq, &cntl->status_work);
	return 0;
}

static void qaic_control_remove(struct mhi_device *mhi_dev)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);

	/* Fail any waiter first so the handshake cannot hold us up. */
	qaic_cntl_close(qdev, true);
	cancel_work_sync(&qdev->cntl.status_work);
	qaic_cntl_drop_orphans(qdev);
	/* Without the control channel the card is unusable. */
	qaic_dev_set_offline(qdev, false);
}

static void qaic_control_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(container_of(result->buf_addr, struct qaic_cntl_seg, data));
}

static void qaic_control_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_device *qdev = mhi_dev_to_qaic(mhi_dev);
	struct qaic_control *cntl = &qdev->cntl;
	struct qaic_wire_hdr *hdr = result->buf_addr;
	struct qaic_cntl_orphan *o;
	struct qaic_cntl_waiter *w;
	unsigned long flags;
	bool found = false;
	u32 seq;

	/* Channel reset (-ENOTCONN) or a truncated reply (-EOVERFLOW). */
	if (result->transaction_status) {
		kfree(hdr);
		return;
	}
	if (result->bytes_xferd < sizeof(*hdr) || le32_to_cpu(hdr->magic) != QAIC_NNC_MAGIC) {
		dev_dbg(&mhi_dev->dev, "dropping a %zu-byte message without the NNC header\n",
			result->bytes_xferd);
		kfree(hdr);
		return;
	}

	seq = le32_to_cpu(hdr->seq);
	spin_lock_irqsave(&cntl->pending_lock, flags);
	list_for_each_entry(w, &cntl->pending, node) {
		if (w->seq == seq) {
			list_del_init(&w->node);
			w->reply = hdr;
			w->reply_len = result->bytes_xferd;
			complete(&w->done);
			found = true;
			break;
		}
	}
	spin_unlock_irqrestore(&cntl->pending_lock, flags);

	if (!found) {
		/*
		 * Nobody waits for it any more (timed out or interrupted): it
		 * may still release DBCs, which is for process context to do.
		 */
		o = kmalloc(sizeof(*o), GFP_ATOMIC);
		if (!o) {
			kfree(hdr);
			return;
		}
		o->msg = hdr;
		o->len = result->bytes_xferd;
		spin_lock_irqsave(&cntl->pending_lock, flags);
		if (cntl->alive) {
			list_add_tail(&o->node, &cntl->orphans);
			queue_work(system_dfl_wq, &cntl->orphan_work);
			o = NULL;
		}
		spin_unlock_irqrestore(&cntl->pending_lock, flags);
		if (o) {
			kfree(hdr);
			kfree(o);
		}
	}
}

int qaic_control_init(struct qaic_device *qdev)
{
	struct qaic_control *cntl = &qdev->cntl;
	int ret;

	ret = drmm_mutex_init(&qdev->drm, &cntl->lock);
	if (ret)
		return ret;
	spin_lock_init(&cntl->pending_lock);
	INIT_LIST_HEAD(&cntl->pending);
	INIT_WORK(&cntl->status_work, qaic_cntl_status_work);
	INIT_LIST_HEAD(&cntl->orphans);
	INIT_WORK(&cntl->orphan_work, qaic_cntl_orphan_work);
	cntl->next_seq = 0;
	return 0;
}

static const struct mhi_device_id qaic_control_match_table[] = {
	{ .chan = "QAIC_CONTROL" },
	{}
};

struct mhi_driver qaic_control_driver = {
	.id_table	= qaic_control_match_table,
	.probe		= qaic_control_probe,
	.remove		= qaic_control_remove,
	.ul_xfer_cb	= qaic_control_ul_xfer_cb,
	.dl_xfer_cb	= qaic_control_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_control",
	},
};
