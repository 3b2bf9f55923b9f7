// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: subsystem restart (SSR) on QAIC_SSR (channels 6 and 7).
 *
 * When a workload crashes, the card recovers its DBC in an exchange with
 * the host, one DBC at a time: the SSR_EVENTs BEFORE_SHUTDOWN,
 * AFTER_SHUTDOWN, BEFORE_POWER_UP and AFTER_POWER_UP, each answered with an
 * SSR_EVENT_RSP, and between the last two the offer of a crash dump
 * (DEBUG_TRANSFER_INFO). The DBC's state follows the events; at
 * BEFORE_SHUTDOWN the host releases the DBC (qaic_dbc_enter_ssr()), and
 * once AFTER_POWER_UP is answered the card gives it out again.
 *
 * A crash dump is a table of 64-byte entries, each naming a region of card
 * memory. The host reads the table, then every region, with MEMORY_READs
 * that fit its large receive buffer, ends the transfer with
 * DEBUG_TRANSFER_DONE and, once the card has answered, hands the dump to
 * devcoredump: a 32-byte header (magic, version, size, table length), the
 * table, then the regions in table order. A transfer that goes wrong is
 * ended with DEBUG_TRANSFER_DONE and dropped; the card is never reset for
 * it.
 *
 * Exactly one receive buffer is posted at a time: the 32-byte command
 * buffer, or the large one while a MEMORY_READ is out. Whatever arrives in
 * either is parsed the same way, so a card that gives up on a transfer
 * does not wedge the exchange. A work item handles the messages one at a
 * time, posts the next receive buffer, then sends what the message called
 * for. Malformed messages are dropped. An SSR from which the card goes
 * silent is given up after QAIC_SSR_STALL_TIMEOUT.
 */

#include <linux/devcoredump.h>
#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/jiffies.h>
#include <linux/mhi.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "qaic.h"

static bool ssr_crashdump = true;
module_param(ssr_crashdump, bool, 0644);
MODULE_PARM_DESC(ssr_crashdump,
		 "Download the card's crash dump after a workload crash and hand it to devcoredump (default 1)");

/* Commands */
#define QAIC_SSR_DEBUG_TRANSFER_INFO		0x001
#define QAIC_SSR_DEBUG_TRANSFER_INFO_RSP	0x002
#define QAIC_SSR_MEMORY_READ			0x004
#define QAIC_SSR_MEMORY_READ_RSP		0x008
#define QAIC_SSR_DEBUG_TRANSFER_DONE		0x010
#define QAIC_SSR_DEBUG_TRANSFER_DONE_RSP	0x020
#define QAIC_SSR_EVENT				0x100
#define QAIC_SSR_EVENT_RSP			0x200

/* SSR_EVENT and SSR_EVENT_RSP events */
#define QAIC_SSR_NACK				1
#define QAIC_SSR_BEFORE_SHUTDOWN		2
#define QAIC_SSR_AFTER_SHUTDOWN			4
#define QAIC_SSR_BEFORE_POWER_UP		8
#define QAIC_SSR_AFTER_POWER_UP			16

/* DEBUG_TRANSFER_INFO_RSP */
#define QAIC_SSR_DUMP_ACK			0
#define QAIC_SSR_DUMP_NACK			1

#define QAIC_SSR_DUMP_MAGIC			0x1234567890abcdefULL
#define QAIC_SSR_DUMP_VERSION			1

#define QAIC_SSR_CMD_BUF_LEN			32
/* Receive buffer for MEMORY_READ_RSP: an MHI transfer holds at most 64 KiB - 1. */
#define QAIC_SSR_READ_BUF_LEN			(SZ_64K - 16)
#define QAIC_SSR_READ_CHUNK			(QAIC_SSR_READ_BUF_LEN - \
						 sizeof(struct qaic_ssr_read_rsp))
/* Limits on what the card may ask the host to hold. */
#define QAIC_SSR_MAX_TABLE			SZ_1M
#define QAIC_SSR_MAX_DUMP			SZ_64M
/* An SSR without a message from the card for this long is given up. */
#define QAIC_SSR_STALL_TIMEOUT			(30 * HZ)
/* Messages one received message may call for. */
#define QAIC_SSR_OUTBOX				3

#define QAIC_SSR_NO_DBC				U32_MAX

struct qaic_ssr_hdr {
	__le32	cmd;
	__le32	len;		/* of the whole message */
	__le32	dbc_id;
};

/* SSR_EVENT(_RSP), DEBUG_TRANSFER_INFO_RSP, DEBUG_TRANSFER_DONE(_RSP). */
struct qaic_ssr_msg {
	struct qaic_ssr_hdr	hdr;
	__le32			val;
};

struct qaic_ssr_transfer_info {
	struct qaic_ssr_hdr	hdr;
	__le32			resv;
	__le64			tbl_addr;
	__le64			tbl_len;
} __packed;

struct qaic_ssr_memory_read {
	struct qaic_ssr_hdr	hdr;
	__le32			resv;
	__le64			addr;
	__le64			len;
} __packed;

struct qaic_ssr_read_rsp {
	struct qaic_ssr_hdr	hdr;
	__le32			resv;
	u8			data[];
};

/* One entry of the card's dump table. */
struct qaic_ssr_table_entry {
	__le64	save_perf;
	__le64	mem_base;
	__le64	len;
	char	desc[20];
	char	filename[20];
};

/* What opens the dump handed to devcoredump. */
struct qaic_ssr_dump_hdr {
	__le64	magic;
	__le64	version;
	__le64	size;
	__le64	tbl_len;
};

static_assert(sizeof(struct qaic_ssr_msg) == 16);
static_assert(sizeof(struct qaic_ssr_transfer_info) == 32);
static_assert(sizeof(struct qaic_ssr_memory_read) == 32);
static_assert(sizeof(struct qaic_ssr_read_rsp) == 16);
static_assert(sizeof(struct qaic_ssr_table_entry) == 64);
static_assert(sizeof(struct qaic_ssr_dump_hdr) == 32);

enum qaic_ssr_phase {
	QAIC_SSR_READ_TABLE,
	QAIC_SSR_READ_REGIONS,
	/* Everything read, DEBUG_TRANSFER_DONE sent: the dump goes out on its answer. */
	QAIC_SSR_DONE_SENT,
	/* DEBUG_TRANSFER_DONE sent after a failure: nothing to deliver. */
	QAIC_SSR_ABORTED,
};

/* A crash dump being downloaded. */
struct qaic_ssr_dump {
	u32			dbc_id;
	enum qaic_ssr_phase	phase;
	u64			tbl_addr;	/* on the card */
	u64			tbl_len;
	struct qaic_ssr_table_entry *tbl;
	/* Header, table and regions, allocated once the table is in. */
	void			*data;
	u64			size;
	/* Bytes of tbl (READ_TABLE) or data (READ_REGIONS) filled so far. */
	u64			off;
	/* The region being read and how much of it is in. */
	u32			entry;
	u64			entry_off;
	/* Length asked for by the MEMORY_READ that is out. */
	u64			req_len;
};

/* The client of one QAIC_SSR channel device. */
struct qaic_ssr {
	struct qaic_device	*qdev;
	struct mhi_device	*mhi_dev;
	/* The channel is going away. */
	bool			dead;
	/*
	 * The completed receive buffer, set by the completion callback before
	 * it queues rx_work; only one buffer is ever posted.
	 */
	void			*rx_buf;
	size_t			rx_len;
	int			rx_status;
	/* A receive buffer is with MHI. */
	bool			posted;
	struct work_struct	rx_work;
	struct delayed_work	stall_work;

	/* Serialises the work items; protects what follows. */
	struct mutex		lock;
	void			*cmd_buf;
	void			*read_buf;	/* allocated with the first dump */
	/* The DBC under recovery, or QAIC_SSR_NO_DBC. */
	u32			dbc_id;
	struct qaic_ssr_dump	*dump;
	unsigned long		last_rx;
	/* Messages to send once the next receive buffer is posted. */
	void			*outbox[QAIC_SSR_OUTBOX];
	size_t			outbox_len[QAIC_SSR_OUTBOX];
	unsigned int		nr_out;
};

static struct device *qaic_ssr_dev(struct qaic_ssr *ssr)
{
	return &ssr->qdev->pdev->dev;
}

/*
 * MHI refused a buffer. -EIO (MHI in error) and -ENODEV (channel stopped)
 * mean the card is being reset or the channel is going: not worth an error.
 */
static void qaic_ssr_queue_failed(struct qaic_ssr *ssr, const char *what, int ret)
{
	if (READ_ONCE(ssr->dead) || ret == -EIO || ret == -ENODEV)
		dev_dbg(qaic_ssr_dev(ssr), "cannot %s: %d\n", what, ret);
	else
		dev_err_ratelimited(qaic_ssr_dev(ssr), "cannot %s: %d\n", what, ret);
}

/* Queue @msg of @len bytes (kmalloc'ed) to go out after the next receive buffer is posted. */
static void qaic_ssr_push(struct qaic_ssr *ssr, void *msg, size_t len)
{
	if (WARN_ON_ONCE(ssr->nr_out == QAIC_SSR_OUTBOX)) {
		kfree(msg);
		return;
	}
	ssr->outbox[ssr->nr_out] = msg;
	ssr->outbox_len[ssr->nr_out] = len;
	ssr->nr_out++;
}

static void qaic_ssr_hdr_init(struct qaic_ssr_hdr *hdr, u32 cmd, size_t len, u32 dbc_id)
{
	hdr->cmd = cpu_to_le32(cmd);
	hdr->len = cpu_to_le32(len);
	hdr->dbc_id = cpu_to_le32(dbc_id);
}

/* A 16-byte message: SSR_EVENT_RSP, DEBUG_TRANSFER_INFO_RSP or DEBUG_TRANSFER_DONE. */
static void qaic_ssr_push_msg(struct qaic_ssr *ssr, u32 cmd, u32 dbc_id, u32 val)
{
	struct qaic_ssr_msg *msg;

	msg = kzalloc(sizeof(*msg), GFP_KERNEL);
	if (!msg)
		return;
	qaic_ssr_hdr_init(&msg->hdr, cmd, sizeof(*msg), dbc_id);
	msg->val = cpu_to_le32(val);
	qaic_ssr_push(ssr, msg, sizeof(*msg));
}

static void qaic_ssr_drop_outbox(struct qaic_ssr *ssr)
{
	while (ssr->nr_out)
		kfree(ssr->outbox[--ssr->nr_out]);
}

static void qaic_ssr_send_outbox(struct qaic_ssr *ssr)
{
	unsigned int i;
	int ret;

	for (i = 0; i < ssr->nr_out; i++) {
		ret = mhi_queue_buf(ssr->mhi_dev, DMA_TO_DEVICE, ssr->outbox[i], ssr->outbox_len[i],
				    MHI_EOT);
		if (ret) {
			qaic_ssr_queue_failed(ssr, "send an SSR message", ret);
			kfree(ssr->outbox[i]);
		}
	}
	ssr->nr_out = 0;
}

static bool qaic_ssr_reading(struct qaic_ssr *ssr)
{
	return ssr->dump && (ssr->dump->phase == QAIC_SSR_READ_TABLE ||
			     ssr->dump->phase == QAIC_SSR_READ_REGIONS);
}

/* A download the card is still in, as opposed to one that was cut short. */
static bool qaic_ssr_dump_active(struct qaic_ssr *ssr)
{
	return ssr->dump && ssr->dump->phase != QAIC_SSR_ABORTED;
}

static void qaic_ssr_dump_free(struct qaic_ssr *ssr)
{
	struct qaic_ssr_dump *dump = ssr->dump;

	if (!dump)
		return;
	ssr->dump = NULL;
	vfree(dump->tbl);
	vfree(dump->data);
	kfree(dump);
}

/*
 * The download goes wrong: drop what was read and end the transfer with
 * DEBUG_TRANSFER_DONE, whose answer is then awaited and ignored.
 */
static void qaic_ssr_dump_fail(struct qaic_ssr *ssr, const char *why)
{
	struct qaic_ssr_dump *dump = ssr->dump;

	dev_warn_ratelimited(qaic_ssr_dev(ssr), "crash dump of DBC %u abandoned: %s\n",
			     dump->dbc_id, why);
	vfree(dump->tbl);
	dump->tbl = NULL;
	vfree(dump->data);
	dump->data = NULL;
	dump->phase = QAIC_SSR_ABORTED;
	qaic_ssr_push_msg(ssr, QAIC_SSR_DEBUG_TRANSFER_DONE, dump->dbc_id, 0);
}

/*
 * The recovery of the DBC under SSR is over: with @recovered through
 * AFTER_POWER_UP, else given up (the card went silent or away). Either
 * way the DBC is free again.
 */
static void qaic_ssr_end(struct qaic_ssr *ssr, bool recovered)
{
	u32 dbc_id = ssr->dbc_id;

	qaic_ssr_dump_free(ssr);
	if (dbc_id == QAIC_SSR_NO_DBC)
		return;
	ssr->dbc_id = QAIC_SSR_NO_DBC;
	if (recovered)
		qaic_dbc_ssr_state(ssr->qdev, dbc_id, QAIC_DBC_STATE_AFTER_POWER_UP);
	qaic_dbc_ssr_state(ssr->qdev, dbc_id, QAIC_DBC_STATE_IDLE);
}

/* Ask for the next chunk of the table or of the current region. */
static void qaic_ssr_read_next(struct qaic_ssr *ssr)
{
	struct qaic_ssr_dump *dump = ssr->dump;
	struct qaic_ssr_table_entry *ent;
	struct qaic_ssr_memory_read *req;
	u64 addr, left;

	if (dump->phase == QAIC_SSR_READ_TABLE) {
		addr = dump->tbl_addr + dump->off;
		left = dump->tbl_len - dump->off;
	} else {
		ent = &dump->tbl[dump->entry];
		addr = le64_to_cpu(ent->mem_base) + dump->entry_off;
		left = le64_to_cpu(ent->len) - dump->entry_off;
	}
	dump->req_len = min_t(u64, left, QAIC_SSR_READ_CHUNK);

	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req) {
		qaic_ssr_dump_fail(ssr, "out of memory");
		return;
	}
	qaic_ssr_hdr_init(&req->hdr, QAIC_SSR_MEMORY_READ, sizeof(*req), dump->dbc_id);
	req->addr = cpu_to_le64(addr);
	req->len = cpu_to_le64(dump->req_len);
	qaic_ssr_push(ssr, req, sizeof(*req));
}

/*
 * The whole table is in: check it, then lay out the dump (header, table,
 * regions) and go on with the regions.
 */
static int qaic_ssr_table_done(struct qaic_ssr *ssr)
{
	struct qaic_ssr_dump *dump = ssr->dump;
	u32 i, nr = dump->tbl_len / sizeof(*dump->tbl);
	struct qaic_ssr_dump_hdr *hdr;
	u64 size, len, end;

	size = sizeof(*hdr) + dump->tbl_len;
	for (i = 0; i < nr; i++) {
		len = le64_to_cpu(dump->tbl[i].len);
		if (!len || check_add_overflow(le64_to_cpu(dump->tbl[i].mem_base), len, &end))
			return -EINVAL;
		if (len > QAIC_SSR_MAX_DUMP - size)
			return -EFBIG;
		size += len;
	}

	dump->data = vzalloc(size);
	if (!dump->data)
		return -ENOMEM;
	dump->size = size;
	hdr = dump->data;
	hdr->magic = cpu_to_le64(QAIC_SSR_DUMP_MAGIC);
	hdr->version = cpu_to_le64(QAIC_SSR_DUMP_VERSION);
	hdr->size = cpu_to_le64(size);
	hdr->tbl_len = cpu_to_le64(dump->tbl_len);
	memcpy(hdr + 1, dump->tbl, dump->tbl_len);

	dump->phase = QAIC_SSR_READ_REGIONS;
	dump->off = sizeof(*hdr) + dump->tbl_len;
	dump->entry = 0;
	dump->entry_off = 0;
	return 0;
}

static void qaic_ssr_read_rsp(struct qaic_ssr *ssr, const struct qaic_ssr_read_rsp *rsp,
			      size_t len, u32 dbc_id)
{
	struct qaic_ssr_dump *dump = ssr->dump;
	u64 n = len - sizeof(*rsp);
	int ret;

	if (!qaic_ssr_reading(ssr)) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "unexpected MEMORY_READ_RSP dropped\n");
		return;
	}
	if (dbc_id != dump->dbc_id) {
		qaic_ssr_dump_fail(ssr, "MEMORY_READ_RSP for another DBC");
		return;
	}
	if (len < sizeof(*rsp) || n != dump->req_len) {
		qaic_ssr_dump_fail(ssr, n ? "MEMORY_READ_RSP of the wrong length" :
				   "MEMORY_READ_RSP without data");
		return;
	}

	if (dump->phase == QAIC_SSR_READ_TABLE) {
		memcpy((u8 *)dump->tbl + dump->off, rsp->data, n);
		dump->off += n;
		if (dump->off == dump->tbl_len) {
			ret = qaic_ssr_table_done(ssr);
			if (ret) {
				qaic_ssr_dump_fail(ssr, ret == -ENOMEM ? "out of memory" :
						   "unusable table");
				return;
			}
		}
	} else {
		memcpy(dump->data + dump->off, rsp->data, n);
		dump->off += n;
		dump->entry_off += n;
		if (dump->entry_off == le64_to_cpu(dump->tbl[dump->entry].len)) {
			dump->entry++;
			dump->entry_off = 0;
		}
		if (dump->off == dump->size) {
			dump->phase = QAIC_SSR_DONE_SENT;
			qaic_ssr_push_msg(ssr, QAIC_SSR_DEBUG_TRANSFER_DONE, dump->dbc_id, 0);
			return;
		}
	}
	qaic_ssr_read_next(ssr);
}

/* The card offers a crash dump of the DBC under recovery. */
static void qaic_ssr_transfer_info(struct qaic_ssr *ssr, const struct qaic_ssr_transfer_info *msg,
				   size_t len, u32 dbc_id)
{
	struct qaic_device *qdev = ssr->qdev;
	struct qaic_ssr_dump *dump;
	u64 tbl_addr, tbl_len;
	u32 ret = QAIC_SSR_DUMP_NACK;

	if (len != sizeof(*msg)) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "dropping a %zu-byte DEBUG_TRANSFER_INFO\n",
				     len);
		return;
	}
	tbl_addr = le64_to_cpu(msg->tbl_addr);
	tbl_len = le64_to_cpu(msg->tbl_len);

	/* A dump left over from an earlier offer is not coming any more. */
	qaic_ssr_dump_free(ssr);

	if (dbc_id != ssr->dbc_id ||
	    READ_ONCE(qdev->dbc[dbc_id].state) != QAIC_DBC_STATE_BEFORE_POWER_UP) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "crash dump offered for DBC %u out of turn\n",
				     dbc_id);
		goto out;
	}
	if (!READ_ONCE(ssr_crashdump))
		goto out;
	if (!tbl_len || tbl_len % sizeof(struct qaic_ssr_table_entry) ||
	    tbl_len > QAIC_SSR_MAX_TABLE || tbl_addr > U64_MAX - tbl_len) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr),
				     "crash dump of DBC %u refused: table of %llu bytes\n", dbc_id,
				     tbl_len);
		goto out;
	}
	if (!ssr->read_buf)
		ssr->read_buf = kmalloc(QAIC_SSR_READ_BUF_LEN, GFP_KERNEL | __GFP_NOWARN);
	dump = kzalloc(sizeof(*dump), GFP_KERNEL);
	if (!ssr->read_buf || !dump) {
		kfree(dump);
		goto out;
	}
	dump->tbl = vzalloc(tbl_len);
	if (!dump->tbl) {
		kfree(dump);
		goto out;
	}
	dump->dbc_id = dbc_id;
	dump->phase = QAIC_SSR_READ_TABLE;
	dump->tbl_addr = tbl_addr;
	dump->tbl_len = tbl_len;
	ssr->dump = dump;
	ret = QAIC_SSR_DUMP_ACK;
out:
	qaic_ssr_push_msg(ssr, QAIC_SSR_DEBUG_TRANSFER_INFO_RSP, dbc_id, ret);
	if (ret == QAIC_SSR_DUMP_ACK)
		qaic_ssr_read_next(ssr);
}

/* The card has answered DEBUG_TRANSFER_DONE: the dump goes to devcoredump. */
static void qaic_ssr_transfer_done(struct qaic_ssr *ssr, const struct qaic_ssr_msg *msg,
				   size_t len, u32 dbc_id)
{
	struct qaic_ssr_dump *dump = ssr->dump;
	u32 status;

	if (len != sizeof(*msg) || !dump || dump->dbc_id != dbc_id ||
	    (dump->phase != QAIC_SSR_DONE_SENT && dump->phase != QAIC_SSR_ABORTED)) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "unexpected DEBUG_TRANSFER_DONE_RSP dropped\n");
		return;
	}
	status = le32_to_cpu(msg->val);
	if (dump->phase == QAIC_SSR_DONE_SENT && !status) {
		/* devcoredump owns the data now and vfree()s it. */
		dev_coredumpv(qaic_ssr_dev(ssr), dump->data, dump->size, GFP_KERNEL);
		dev_info(qaic_ssr_dev(ssr), "crash dump of DBC %u (%llu bytes) handed to devcoredump\n",
			 dbc_id, dump->size);
		dump->data = NULL;
	} else if (dump->phase == QAIC_SSR_DONE_SENT) {
		dev_warn(qaic_ssr_dev(ssr), "card failed the crash dump of DBC %u (%u)\n", dbc_id,
			 status);
	}
	qaic_ssr_dump_free(ssr);
}

/* @dump_cut: a download was under way when this message arrived instead of its data. */
static void qaic_ssr_event(struct qaic_ssr *ssr, const struct qaic_ssr_msg *msg, size_t len,
			   u32 dbc_id, bool dump_cut)
{
	struct qaic_device *qdev = ssr->qdev;
	u32 event, ack;

	if (len != sizeof(*msg)) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "dropping a %zu-byte SSR_EVENT\n", len);
		return;
	}
	event = le32_to_cpu(msg->val);
	ack = event;

	switch (event) {
	case QAIC_SSR_BEFORE_SHUTDOWN:
		/* The card ended an earlier recovery without us: one at a time. */
		if (ssr->dbc_id != dbc_id)
			qaic_ssr_end(ssr, false);
		qaic_ssr_dump_free(ssr);
		ssr->dbc_id = dbc_id;
		dev_warn(qaic_ssr_dev(ssr), "workload on DBC %u crashed; the card is recovering it\n",
			 dbc_id);
		qaic_dbc_enter_ssr(qdev, dbc_id);
		break;
	case QAIC_SSR_AFTER_SHUTDOWN:
	case QAIC_SSR_BEFORE_POWER_UP:
		if (dbc_id != ssr->dbc_id ||
		    !qaic_dbc_ssr_state(qdev, dbc_id, event == QAIC_SSR_AFTER_SHUTDOWN ?
					QAIC_DBC_STATE_AFTER_SHUTDOWN :
					QAIC_DBC_STATE_BEFORE_POWER_UP))
			ack = QAIC_SSR_NACK;
		break;
	case QAIC_SSR_AFTER_POWER_UP:
		if (dbc_id != ssr->dbc_id) {
			ack = QAIC_SSR_NACK;
			break;
		}
		/* As upstream: a dump still coming is refused with the event. */
		if (dump_cut || qaic_ssr_dump_active(ssr)) {
			dev_warn(qaic_ssr_dev(ssr), "crash dump of DBC %u incomplete, dropped\n",
				 dbc_id);
			ack = QAIC_SSR_NACK;
		}
		/* The card frees the DBC either way; before it may give it out again. */
		qaic_ssr_end(ssr, true);
		dev_info(qaic_ssr_dev(ssr), "DBC %u recovered\n", dbc_id);
		break;
	default:
		ack = QAIC_SSR_NACK;
		break;
	}
	if (ack == QAIC_SSR_NACK)
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "SSR event %u for DBC %u refused\n", event,
				     dbc_id);
	qaic_ssr_push_msg(ssr, QAIC_SSR_EVENT_RSP, dbc_id, ack);
}

static void qaic_ssr_handle(struct qaic_ssr *ssr, void *buf, size_t len, int status)
{
	const struct qaic_ssr_hdr *hdr = buf;
	bool reading = qaic_ssr_reading(ssr);
	bool dump_cut = false;
	u32 cmd, dbc_id;

	if (status || len < sizeof(*hdr) || le32_to_cpu(hdr->len) != len ||
	    le32_to_cpu(hdr->dbc_id) >= QAIC_NUM_DBC) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr),
				     "dropping a malformed %zu-byte SSR message (status %d)\n", len,
				     status);
		if (reading)
			qaic_ssr_dump_fail(ssr, "malformed answer to MEMORY_READ");
		return;
	}
	cmd = le32_to_cpu(hdr->cmd);
	dbc_id = le32_to_cpu(hdr->dbc_id);

	if (cmd == QAIC_SSR_MEMORY_READ_RSP) {
		qaic_ssr_read_rsp(ssr, buf, len, dbc_id);
		return;
	}

	/* Anything else while data is expected: the card has given up on the dump. */
	if (reading) {
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "card abandoned the crash dump of DBC %u\n",
				     ssr->dump->dbc_id);
		qaic_ssr_dump_free(ssr);
		dump_cut = true;
	}

	switch (cmd) {
	case QAIC_SSR_EVENT:
		qaic_ssr_event(ssr, buf, len, dbc_id, dump_cut);
		break;
	case QAIC_SSR_DEBUG_TRANSFER_INFO:
		qaic_ssr_transfer_info(ssr, buf, len, dbc_id);
		break;
	case QAIC_SSR_DEBUG_TRANSFER_DONE_RSP:
		qaic_ssr_transfer_done(ssr, buf, len, dbc_id);
		break;
	default:
		dev_warn_ratelimited(qaic_ssr_dev(ssr), "unknown SSR command %#x dropped\n", cmd);
		break;
	}
}

/*
 * Post the receive buffer the exchange needs next: the large one while a
 * MEMORY_READ is out, else the command buffer. If that fails the channel
 * is going down, and what was to be sent is dropped with the download.
 */
static void qaic_ssr_post_rx(struct qaic_ssr *ssr)
{
	bool reading = qaic_ssr_reading(ssr);
	int ret;

	if (READ_ONCE(ssr->posted) || READ_ONCE(ssr->dead))
		return;
	WRITE_ONCE(ssr->posted, true);
	ret = mhi_queue_buf(ssr->mhi_dev, DMA_FROM_DEVICE, reading ? ssr->read_buf : ssr->cmd_buf,
			    reading ? QAIC_SSR_READ_BUF_LEN : QAIC_SSR_CMD_BUF_LEN, MHI_EOT);
	if (!ret)
		return;
	WRITE_ONCE(ssr->posted, false);
	qaic_ssr_queue_failed(ssr, "post the SSR receive buffer", ret);
	if (reading)
		qaic_ssr_dump_free(ssr);
	qaic_ssr_drop_outbox(ssr);
}

static bool qaic_ssr_busy(struct qaic_ssr *ssr)
{
	return ssr->dbc_id != QAIC_SSR_NO_DBC || ssr->dump;
}

static void qaic_ssr_rx_work(struct work_struct *work)
{
	struct qaic_ssr *ssr = container_of(work, struct qaic_ssr, rx_work);

	mutex_lock(&ssr->lock);
	ssr->last_rx = jiffies;
	qaic_ssr_handle(ssr, ssr->rx_buf, ssr->rx_len, ssr->rx_status);
	qaic_ssr_post_rx(ssr);
	qaic_ssr_send_outbox(ssr);
	if (qaic_ssr_busy(ssr))
		mod_delayed_work(system_percpu_wq, &ssr->stall_work, QAIC_SSR_STALL_TIMEOUT);
	mutex_unlock(&ssr->lock);
}

/* Nothing from the card for a long while in the middle of an SSR: give it up. */
static void qaic_ssr_stall_work(struct work_struct *work)
{
	struct qaic_ssr *ssr = container_of(to_delayed_work(work), struct qaic_ssr, stall_work);
	unsigned long deadline;

	mutex_lock(&ssr->lock);
	if (!qaic_ssr_busy(ssr) || READ_ONCE(ssr->dead))
		goto out;
	deadline = ssr->last_rx + QAIC_SSR_STALL_TIMEOUT;
	if (time_before(jiffies, deadline)) {
		mod_delayed_work(system_percpu_wq, &ssr->stall_work, deadline - jiffies);
		goto out;
	}
	if (ssr->dbc_id != QAIC_SSR_NO_DBC)
		dev_warn(qaic_ssr_dev(ssr), "no SSR message for DBC %u in %d s; giving its recovery up\n",
			 ssr->dbc_id, QAIC_SSR_STALL_TIMEOUT / HZ);
	/* A large buffer still posted takes the next command. */
	qaic_ssr_end(ssr, false);
out:
	mutex_unlock(&ssr->lock);
}

static void qaic_ssr_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_ssr *ssr = dev_get_drvdata(&mhi_dev->dev);

	WRITE_ONCE(ssr->posted, false);
	/* -ENOTCONN: the channel is being reset and the buffer comes back unused. */
	if (result->transaction_status == -ENOTCONN || READ_ONCE(ssr->dead))
		return;
	ssr->rx_buf = result->buf_addr;
	ssr->rx_len = result->bytes_xferd;
	ssr->rx_status = result->transaction_status;
	queue_work(system_dfl_wq, &ssr->rx_work);
}

static void qaic_ssr_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	kfree(result->buf_addr);
}

static int qaic_ssr_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_ssr *ssr;
	int ret;

	ssr = kzalloc(sizeof(*ssr), GFP_KERNEL);
	if (!ssr)
		return -ENOMEM;
	ssr->cmd_buf = kzalloc(QAIC_SSR_CMD_BUF_LEN, GFP_KERNEL);
	if (!ssr->cmd_buf) {
		kfree(ssr);
		return -ENOMEM;
	}
	ssr->qdev = mhi_dev_to_qaic(mhi_dev);
	ssr->mhi_dev = mhi_dev;
	ssr->dbc_id = QAIC_SSR_NO_DBC;
	mutex_init(&ssr->lock);
	INIT_WORK(&ssr->rx_work, qaic_ssr_rx_work);
	INIT_DELAYED_WORK(&ssr->stall_work, qaic_ssr_stall_work);
	dev_set_drvdata(&mhi_dev->dev, ssr);

	/* On failure the MHI core resets the channels; no buffer is posted by then. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		goto err_free;
	ssr->posted = true;
	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, ssr->cmd_buf, QAIC_SSR_CMD_BUF_LEN, MHI_EOT);
	if (ret)
		goto err_free;
	return 0;

err_free:
	dev_set_drvdata(&mhi_dev->dev, NULL);
	mutex_destroy(&ssr->lock);
	kfree(ssr->cmd_buf);
	kfree(ssr);
	return ret;
}

/*
 * MHI has reset the channels (the card is reset or the driver goes), so
 * no buffer is posted any more. An SSR under way ends here; the card
 * forgets it too.
 */
static void qaic_ssr_remove(struct mhi_device *mhi_dev)
{
	struct qaic_ssr *ssr = dev_get_drvdata(&mhi_dev->dev);

	WRITE_ONCE(ssr->dead, true);
	mhi_unprepare_from_transfer(mhi_dev);
	cancel_work_sync(&ssr->rx_work);
	/* rx_work arms stall_work, never the other way round. */
	cancel_delayed_work_sync(&ssr->stall_work);

	mutex_lock(&ssr->lock);
	qaic_ssr_end(ssr, false);
	qaic_ssr_drop_outbox(ssr);
	mutex_unlock(&ssr->lock);

	mutex_destroy(&ssr->lock);
	kfree(ssr->read_buf);
	kfree(ssr->cmd_buf);
	kfree(ssr);
}

static const struct mhi_device_id qaic_ssr_match_table[] = {
	{ .chan = "QAIC_SSR" },
	{}
};

struct mhi_driver qaic_ssr_driver = {
	.id_table	= qaic_ssr_match_table,
	.probe		= qaic_ssr_probe,
	.remove		= qaic_ssr_remove,
	.ul_xfer_cb	= qaic_ssr_ul_xfer_cb,
	.dl_xfer_cb	= qaic_ssr_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_ssr",
	},
};
