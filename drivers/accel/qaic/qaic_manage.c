// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: DRM_IOCTL_QAIC_MANAGE, the user's side of the NNC protocol.
 *
 * The user hands over up to 4 KiB of transactions in the uapi layout. Each
 * becomes a wire transaction of its own (see qaic_nnc.h), except that
 * DEACTIVATE_FROM_USR only detaches a DBC on the host:
 *
 *   PASSTHROUGH_FROM_USR -> PASSTHROUGH_TO_DEV, payload copied as it is;
 *   DMA_XFER_FROM_USR    -> DMA_XFER_TO_DEV, the user's pages pinned and
 *                           mapped for the card, described by bus address
 *                           and length;
 *   ACTIVATE_FROM_USR    -> ACTIVATE_TO_DEV, offering new FIFO memory;
 *   STATUS_FROM_USR      -> STATUS_TO_DEV.
 *
 * A transfer whose description does not fit the 64 KiB message is
 * continued: its transaction carries a chunk id, the card answers with a
 * lone DMA_XFER_CONT, and the rest follows in further messages. The pages
 * of a message are let go as soon as its reply is in.
 *
 * The final reply is turned back into the uapi layout, at most 4 KiB,
 * which replaces the user's message: PASSTHROUGH_FROM_DEV and
 * ACTIVATE/STATUS_FROM_DEV are copied out, DEACTIVATE_FROM_DEV is acted on
 * only. A non-zero status from the card gives -ECANCELED with the reply
 * still copied out.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/bitops.h>
#include <linux/dma-mapping.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "qaic.h"
#include "qaic_accel.h"
#include "qaic_nnc.h"

#define QAIC_MANAGE_MAX_COUNT	(QAIC_MANAGE_MAX_MSG_LENGTH / sizeof(struct qaic_manage_trans_hdr))
/* Room left for the transactions after a transfer described in a message. */
#define QAIC_DMA_RESERVE	SZ_1K
/* A transfer's address/size list goes out in TREs of at most this size. */
#define QAIC_DMA_TRE_LEN	SZ_4K
/* User pages pinned and mapped at a time, and at most per message. */
#define QAIC_DMA_BATCH_PAGES	4096U
#define QAIC_DMA_MAX_MSG_BYTES	SZ_1G
/* Most DMA and ACTIVATE transactions a user message can hold. */
#define QAIC_MAX_DMA_TRANS	(QAIC_MANAGE_MAX_MSG_LENGTH / \
				 sizeof(struct qaic_manage_trans_dma_xfer))
#define QAIC_MAX_ACT_TRANS	(QAIC_MANAGE_MAX_MSG_LENGTH / \
				 sizeof(struct qaic_manage_trans_activate_to_dev))
/* STATUS_FROM_DEV status_flags: the card signs its messages. */
#define QAIC_STATUS_FLAG_CRC	BIT_ULL(0)

/* User pages pinned and mapped for the card while a message is out. */
struct qaic_dma_map {
	struct list_head node;
	struct sg_table sgt;
	struct page **pages;
	unsigned int nr_pages;
	bool mapped;
};

/* A user transfer, with how much of it the card has been told about. */
struct qaic_dma_xfer {
	u32 tag;
	u64 addr;
	u64 size;
	u64 done;
};

/* What one MANAGE call builds up. */
struct qaic_manage_ctx {
	struct qaic_device *qdev;
	struct qaic_user *usr;
	/* Reset generation when the call started. */
	unsigned int gen;
	struct qaic_cntl_req req;
	/* Pages of the message being built or out. */
	struct list_head maps;
	/* Transfers still to be continued, xfers[first_xfer..nr_xfers). */
	struct qaic_dma_xfer *xfers;
	unsigned int nr_xfers;
	unsigned int first_xfer;
	u32 chunk_id;
	/* Bytes described in all transfers of all messages so far. */
	u64 xferred;
	/* FIFO memory offered to the card, in ACTIVATE order. */
	struct qaic_dbc_fifo *fifos;
	unsigned int nr_fifos;
	unsigned int next_fifo;
	/* DBCs this message detached on the host. */
	unsigned long detached;
	/* The reply in the user's layout. */
	u8 *out;
	u32 out_len;
	u32 out_count;
};

static void qaic_dma_release(struct qaic_manage_ctx *ctx)
{
	struct device *dev = &ctx->qdev->pdev->dev;
	struct qaic_dma_map *map, *tmp;

	list_for_each_entry_safe(map, tmp, &ctx->maps, node) {
		list_del(&map->node);
		if (map->mapped)
			dma_unmap_sgtable(dev, &map->sgt, DMA_TO_DEVICE, 0);
		sg_free_table(&map->sgt);
		unpin_user_pages(map->pages, map->nr_pages);
		kvfree(map->pages);
		kfree(map);
	}
}

/* Pin and map the @len bytes of user memory at @addr; a page at most per page. */
static struct qaic_dma_map *qaic_dma_map(struct qaic_manage_ctx *ctx, u64 addr, u64 len)
{
	unsigned int off = offset_in_page(addr);
	struct qaic_dma_map *map;
	unsigned int nr;
	int ret;

	nr = DIV_ROUND_UP(off + len, PAGE_SIZE);
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	map->pages = kvmalloc_array(nr, sizeof(*map->pages), GFP_KERNEL);
	if (!map->pages) {
		kfree(map);
		return ERR_PTR(-ENOMEM);
	}
	/* From here on qaic_dma_release() undoes whatever was done. */
	list_add_tail(&map->node, &ctx->maps);

	ret = pin_user_pages_fast(addr - off, nr, 0, map->pages);
	if (ret < 0)
		return ERR_PTR(ret);
	map->nr_pages = ret;
	if (ret != nr)
		return ERR_PTR(-EFAULT);

	ret = sg_alloc_table_from_pages_segment(&map->sgt, map->pages, nr, off, len,
						qaic_max_dma_segment(&ctx->qdev->pdev->dev),
						GFP_KERNEL);
	if (ret)
		return ERR_PTR(-ENOMEM);
	ret = dma_map_sgtable(&ctx->qdev->pdev->dev, &map->sgt, DMA_TO_DEVICE, 0);
	if (ret)
		return ERR_PTR(ret);
	map->mapped = true;
	return map;
}

/* Copy a DMA_XFER_TO_DEV of @nr pairs into the message, in TREs of at most 4 KiB. */
static int qaic_dma_add_trans(struct qaic_manage_ctx *ctx, u32 tag,
			      struct qaic_wire_addr_size *pairs, u32 nr)
{
	u32 len = sizeof(struct qaic_wire_dma_xfer) + nr * sizeof(*pairs);
	struct qaic_wire_dma_xfer *x;
	u32 seg, copied = 0, n;
	u8 *p;

	/* The header and as many whole pairs as fit go in the first TRE. */
	seg = rounddown(QAIC_DMA_TRE_LEN - sizeof(*x), sizeof(*pairs)) + sizeof(*x);
	seg = min(seg, len);
	x = qaic_cntl_req_add(&ctx->req, seg);
	if (!x)
		return -ENOMEM;
	x->hdr.type = cpu_to_le32(QAIC_TRANS_DMA_XFER_TO_DEV);
	x->hdr.len = cpu_to_le32(len);
	x->tag = cpu_to_le32(tag);
	x->count = cpu_to_le32(nr);
	x->dma_chunk_id = cpu_to_le32(ctx->chunk_id);
	x->padding = 0;
	n = (seg - sizeof(*x)) / sizeof(*pairs);
	memcpy(x + 1, pairs, n * sizeof(*pairs));
	copied = n;

	while (copied < nr) {
		n = min_t(u32, nr - copied, QAIC_DMA_TRE_LEN / sizeof(*pairs));
		p = qaic_cntl_req_add(&ctx->req, n * sizeof(*pairs));
		if (!p)
			return -ENOMEM;
		memcpy(p, pairs + copied, n * sizeof(*pairs));
		copied += n;
	}
	ctx->req.count++;
	return 0;
}

/*
 * Describe as much of @xfer as fits in the message (at least one segment,
 * leaving 1 KiB for what follows when possible). *more tells whether some
 * of it is left for a continuation.
 */
static int qaic_dma_encode(struct qaic_manage_ctx *ctx, struct qaic_dma_xfer *xfer, bool *more)
{
	struct qaic_wire_addr_size *pairs;
	struct qaic_dma_map *map;
	u64 start, end, cursor, len, described = 0;
	struct scatterlist *sg;
	u32 room, max_pairs, nr = 0;
	int ret = 0, i;

	if (xfer->done >= xfer->size ||
	    check_add_overflow(xfer->addr, xfer->size, &end) || end != (unsigned long)end)
		return -EINVAL;
	start = xfer->addr + xfer->done;

	if (size_add(ctx->req.len, sizeof(struct qaic_wire_dma_xfer) + sizeof(*pairs)) >
	    QAIC_NNC_MAX_REQUEST)
		return -ENOMEM;
	room = QAIC_NNC_MAX_REQUEST - ctx->req.len - sizeof(struct qaic_wire_dma_xfer);
	max_pairs = room > QAIC_DMA_RESERVE ? (room - QAIC_DMA_RESERVE) / sizeof(*pairs) : 0;
	max_pairs = max(max_pairs, 1U);

	pairs = kvmalloc_array(max_pairs, sizeof(*pairs), GFP_KERNEL);
	if (!pairs)
		return -ENOMEM;

	cursor = start;
	while (cursor < end && nr < max_pairs && cursor - start < QAIC_DMA_MAX_MSG_BYTES) {
		len = (u64)QAIC_DMA_BATCH_PAGES * PAGE_SIZE - offset_in_page(cursor);
		len = min3(len, end - cursor, QAIC_DMA_MAX_MSG_BYTES - (cursor - start));
		map = qaic_dma_map(ctx, cursor, len);
		if (IS_ERR(map)) {
			ret = PTR_ERR(map);
			goto out;
		}
		for_each_sgtable_dma_sg(&map->sgt, sg, i) {
			if (nr == max_pairs)
				break;
			pairs[nr].addr = cpu_to_le64(sg_dma_address(sg));
			pairs[nr].size = cpu_to_le64(sg_dma_len(sg));
			described += sg_dma_len(sg);
			nr++;
		}
		cursor += len;
	}

	xfer->done += described;
	*more = xfer->done < xfer->size;
	if (*more && !ctx->chunk_id) {
		do {
			ctx->chunk_id = atomic_inc_return(&ctx->usr->chunk_id);
		} while (!ctx->chunk_id);
	}
	ret = qaic_dma_add_trans(ctx, xfer->tag, pairs, nr);
	if (!ret)
		ctx->xferred += described;
out:
	kvfree(pairs);
	return ret;
}

static int qaic_encode_passthrough(struct qaic_manage_ctx *ctx, const u8 *src, u32 len)
{
	struct qaic_wire_trans_hdr *t;

	if (len % 8)
		return -EINVAL;
	if (size_add(ctx->req.len, len) > QAIC_NNC_MAX_REQUEST)
		return -ENOSPC;
	t = qaic_cntl_req_add_trans(&ctx->req, QAIC_TRANS_PASSTHROUGH_TO_DEV, len);
	if (!t)
		return -ENOMEM;
	memcpy(t + 1, src + sizeof(*t), len - sizeof(*t));
	return 0;
}

static int qaic_encode_dma(struct qaic_manage_ctx *ctx, const u8 *src, u32 len)
{
	struct qaic_manage_trans_dma_xfer in;
	struct qaic_dma_xfer *xfer;
	bool more;
	int ret;

	if (len < sizeof(in))
		return -EINVAL;
	memcpy(&in, src, sizeof(in));

	if (!ctx->xfers) {
		ctx->xfers = kcalloc(QAIC_MAX_DMA_TRANS, sizeof(*ctx->xfers), GFP_KERNEL);
		if (!ctx->xfers)
			return -ENOMEM;
	}
	/* in.pad is not checked: the UMD puts a count of 1 there. */
	xfer = &ctx->xfers[ctx->nr_xfers];
	xfer->tag = in.tag;
	xfer->addr = in.addr;
	xfer->size = in.size;
	xfer->done = 0;
	ret = qaic_dma_encode(ctx, xfer, &more);
	if (ret)
		return ret;
	/* Keep it for the continuation messages. */
	if (more)
		ctx->nr_xfers++;
	return 0;
}

static int qaic_encode_activate(struct qaic_manage_ctx *ctx, const u8 *src, u32 len)
{
	struct qaic_manage_trans_activate_to_dev in;
	struct qaic_wire_activate_to_dev *t;
	struct qaic_dbc_fifo *fifo;
	int ret;

	if (len < sizeof(in))
		return -EINVAL;
	memcpy(&in, src, sizeof(in));

	if (size_add(ctx->req.len, sizeof(*t)) > QAIC_MANAGE_STATUS_ACT_ROOM)
		return -ENOSPC;
	if (!in.queue_size || in.pad)
		return -EINVAL;

	if (!ctx->fifos) {
		ctx->fifos = kcalloc(QAIC_MAX_ACT_TRANS, sizeof(*ctx->fifos), GFP_KERNEL);
		if (!ctx->fifos)
			return -ENOMEM;
	}
	fifo = &ctx->fifos[ctx->nr_fifos];
	ret = qaic_dbc_fifo_alloc(ctx->qdev, in.queue_size, fifo);
	if (ret)
		return ret;
	ctx->nr_fifos++;

	t = qaic_cntl_req_add_trans(&ctx->req, QAIC_TRANS_ACTIVATE_TO_DEV, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->req_q_addr = cpu_to_le64(fifo->dma);
	t->rsp_q_addr = cpu_to_le64(fifo->dma + fifo->size -
				    fifo->nelem * QAIC_DBC_RSP_ELEM_SIZE);
	t->req_q_size = cpu_to_le32(fifo->nelem);
	t->rsp_q_size = cpu_to_le32(fifo->nelem);
	t->buf_len = cpu_to_le32(fifo->size);
	t->options = cpu_to_le32(in.options);
	return 0;
}

/*
 * A well-formed DEACTIVATE is consumed (*consumed) before its DBC is
 * detached, so that a DBC the user does not own is reported as such when
 * nothing follows it in the message (see qaic_manage_encode()).
 */
static int qaic_encode_deactivate(struct qaic_manage_ctx *ctx, const u8 *src, u32 len,
				  bool *consumed)
{
	struct qaic_manage_trans_deactivate in;
	int ret;

	if (len < sizeof(in))
		return -EINVAL;
	memcpy(&in, src, sizeof(in));
	if (in.dbc_id >= QAIC_NUM_DBC || in.pad)
		return -EINVAL;
	*consumed = true;

	/* Only the host's side; the card is asked by a passthrough command. */
	ret = qaic_dbc_detach(ctx->qdev, ctx->usr, in.dbc_id);
	if (ret)
		return ret;
	__set_bit(in.dbc_id, &ctx->detached);
	return 0;
}

static int qaic_encode_status(struct qaic_manage_ctx *ctx, u32 len)
{
	if (size_add(ctx->req.len, len) > QAIC_MANAGE_STATUS_ACT_ROOM)
		return -ENOSPC;
	/* As long as the user's transaction; anything after its header is sent as zeros. */
	if (!qaic_cntl_req_add_trans(&ctx->req, QAIC_TRANS_STATUS_TO_DEV, len))
		return -ENOMEM;
	return 0;
}

/*
 * Turn the user's @count transactions in @len bytes at @msg into the first
 * message.
 *
 * The errno is that of the kernel's upstream qaic (qaic_compat.h). Since
 * 6.19 a refused transaction's errno is the answer. Before, when a
 * transaction is refused before it is consumed (no room left for it, a DMA
 * range that cannot be pinned, no memory), part of the user's message is
 * left over and the answer is -EINVAL whatever the reason; only a refusal
 * after the whole message was consumed keeps its own errno: a DEACTIVATE,
 * as the last transaction, of a DBC the user does not own.
 */
static int qaic_manage_encode(struct qaic_manage_ctx *ctx, const u8 *msg, u32 len, u32 count)
{
	struct qaic_manage_trans_hdr hdr;
	bool consumed;
	u32 off = 0, i;
	int ret = 0;

	if (!count || len < sizeof(hdr))
		return -EINVAL;

	for (i = 0; i < count; i++) {
		if (off > len - sizeof(hdr))
			return -EINVAL;
		memcpy(&hdr, msg + off, sizeof(hdr));
		if (hdr.len < sizeof(hdr) || hdr.len > len - off)
			return -EINVAL;

		consumed = false;
		switch (hdr.type) {
		case QAIC_TRANS_PASSTHROUGH_FROM_USR:
			ret = qaic_encode_passthrough(ctx, msg + off, hdr.len);
			break;
		case QAIC_TRANS_DMA_XFER_FROM_USR:
			ret = qaic_encode_dma(ctx, msg + off, hdr.len);
			break;
		case QAIC_TRANS_ACTIVATE_FROM_USR:
			ret = qaic_encode_activate(ctx, msg + off, hdr.len);
			break;
		case QAIC_TRANS_DEACTIVATE_FROM_USR:
			ret = qaic_encode_deactivate(ctx, msg + off, hdr.len, &consumed);
			break;
		case QAIC_TRANS_STATUS_FROM_USR:
			ret = qaic_encode_status(ctx, hdr.len);
			break;
		default:
			ret = -EINVAL;
			break;
		}
		if (ret && QAIC_MANAGE_KEEPS_ERRNO)
			return ret;
		if (!ret || consumed)
			off += hdr.len;
		if (ret)
			break;
	}

	if (off != len)
		return -EINVAL;
	return ret;
}

/* The next message of a continued transfer: that transfer alone. */
static int qaic_manage_encode_cont(struct qaic_manage_ctx *ctx)
{
	struct qaic_dma_xfer *xfer = &ctx->xfers[ctx->first_xfer];
	bool more;
	int ret;

	ret = qaic_dma_encode(ctx, xfer, &more);
	if (!ret && !more)
		ctx->first_xfer++;
	return ret;
}

/*
 * A continuation could not be built: tell the card to drop what it holds
 * for the chunk. Its answer does not matter.
 */
static void qaic_manage_abort(struct qaic_manage_ctx *ctx)
{
	struct qaic_wire_dma_xfer *x;
	void *reply = NULL;

	qaic_cntl_req_free(&ctx->req);
	if (qaic_cntl_req_init(&ctx->req, ctx->usr->handle))
		return;
	x = qaic_cntl_req_add_trans(&ctx->req, QAIC_TRANS_DMA_XFER_TO_DEV, sizeof(*x));
	if (!x)
		return;
	x->dma_chunk_id = cpu_to_le32(ctx->chunk_id);
	if (!qaic_cntl_xfer(ctx->qdev, &ctx->req, true, &reply))
		kfree(reply);
}

/*
 * Is @reply a lone DMA_XFER_CONT? Returns 1 and its contents if so, 0 if
 * it is some other reply, -EINVAL if it is a malformed one.
 */
static int qaic_manage_get_cont(void *reply, u32 *chunk_id, u64 *xferred)
{
	struct qaic_wire_hdr *hdr = reply;
	struct qaic_wire_dma_xfer_cont *c = reply + sizeof(*hdr);
	u32 len = le32_to_cpu(hdr->len);

	if (le32_to_cpu(hdr->count) != 1 || len < sizeof(*hdr) + sizeof(c->hdr) ||
	    le32_to_cpu(c->hdr.type) != QAIC_TRANS_DMA_XFER_CONT)
		return 0;
	if (le32_to_cpu(c->hdr.len) != sizeof(*c) || len != sizeof(*hdr) + sizeof(*c))
		return -EINVAL;
	*chunk_id = le32_to_cpu(c->dma_chunk_id);
	*xferred = le64_to_cpu(c->xferred_size);
	return 1;
}

static int qaic_decode_passthrough(struct qaic_manage_ctx *ctx,
				   const struct qaic_wire_trans_hdr *t, u32 len)
{
	struct qaic_manage_trans_hdr out = {
		.type = QAIC_TRANS_PASSTHROUGH_FROM_DEV,
		.len = len,
	};

	if (len % 8)
		return -EINVAL;
	if (len > QAIC_MANAGE_MAX_MSG_LENGTH - ctx->out_len)
		return -ENOSPC;
	memcpy(ctx->out + ctx->out_len, &out, sizeof(out));
	memcpy(ctx->out + ctx->out_len + sizeof(out), t + 1, len - sizeof(out));
	ctx->out_len += len;
	return 0;
}

static int qaic_decode_activate(struct qaic_manage_ctx *ctx,
				const struct qaic_wire_trans_hdr *t, u32 len)
{
	const struct qaic_wire_activate_from_dev *in = (const void *)t;
	struct qaic_manage_trans_activate_from_dev out;
	struct qaic_dbc_fifo *fifo;

	if (len < sizeof(*in))
		return -EINVAL;
	if (len > QAIC_MANAGE_MAX_MSG_LENGTH - ctx->out_len)
		return -ENOSPC;

	out.hdr.type = QAIC_TRANS_ACTIVATE_FROM_DEV;
	out.hdr.len = len;
	out.status = le32_to_cpu(in->status);
	out.dbc_id = le32_to_cpu(in->dbc_id);
	out.options = le64_to_cpu(in->options);
	/* Bytes past the structure stay zero. */
	memcpy(ctx->out + ctx->out_len, &out, sizeof(out));
	ctx->out_len += len;

	/* An answer to an activation this message did not ask for. */
	if (ctx->next_fifo >= ctx->nr_fifos)
		return -EINVAL;
	fifo = &ctx->fifos[ctx->next_fifo++];

	if (out.dbc_id >= QAIC_NUM_DBC)
		return -ENODEV;
	if (out.status)
		return -ECANCELED;
	return qaic_dbc_bind(ctx->qdev, ctx->usr, out.dbc_id, fifo, ctx->gen);
}

static int qaic_decode_deactivate(struct qaic_manage_ctx *ctx,
				  const struct qaic_wire_trans_hdr *t, u32 len)
{
	const struct qaic_wire_deactivate_from_dev *in = (const void *)t;
	u32 dbc_id, status;

	if (len != sizeof(*in))
		return -EINVAL;
	dbc_id = le32_to_cpu(in->dbc_id);
	status = le32_to_cpu(in->status);
	if (dbc_id >= QAIC_NUM_DBC)
		return -ENODEV;

	if (status) {
		/* The DBC may still be running: the user must try again. */
		qaic_dbc_reattach(ctx->qdev, ctx->usr, dbc_id, ctx->gen);
		return -ECANCELED;
	}
	qaic_dbc_release(ctx->qdev, dbc_id, ctx->gen);
	return 0;
}

static int qaic_decode_status(struct qaic_manage_ctx *ctx, const struct qaic_wire_trans_hdr *t,
			      u32 len, void *reply)
{
	const struct qaic_wire_status_from_dev *in = (const void *)t;
	struct qaic_wire_hdr *hdr = reply;
	struct qaic_manage_trans_status_from_dev out;

	if (len < sizeof(*in))
		return -EINVAL;
	if (len > QAIC_MANAGE_MAX_MSG_LENGTH - ctx->out_len)
		return -ENOSPC;

	out.hdr.type = QAIC_TRANS_STATUS_FROM_DEV;
	out.hdr.len = len;
	out.major = le16_to_cpu(in->major);
	out.minor = le16_to_cpu(in->minor);
	out.status = le32_to_cpu(in->status);
	out.status_flags = le64_to_cpu(in->status_flags);
	memcpy(ctx->out + ctx->out_len, &out, sizeof(out));
	ctx->out_len += len;

	if (out.status)
		return -ECANCELED;
	if ((out.status_flags & QAIC_STATUS_FLAG_CRC) &&
	    !qaic_cntl_reply_crc_ok(reply, le32_to_cpu(hdr->len)))
		return -EPIPE;
	return 0;
}

/*
 * Turn the card's reply into the user's layout in ctx->out. A transaction
 * refused by the card (-ECANCELED) does not stop the others from being
 * decoded, so that the DBCs they activate or release are accounted for.
 */
static int qaic_manage_decode(struct qaic_manage_ctx *ctx, void *reply)
{
	struct qaic_wire_hdr *hdr = reply;
	u32 msg_len = le32_to_cpu(hdr->len);
	u32 count = le32_to_cpu(hdr->count);
	struct qaic_wire_trans_hdr *t;
	u32 off = sizeof(*hdr), len, i;
	bool canceled = false;
	int ret;

	if (msg_len > QAIC_NNC_MAX_REPLY)
		return -EINVAL;
	ctx->out_len = 0;
	ctx->out_count = count;

	for (i = 0; i < count; i++) {
		if (msg_len - off < sizeof(*t))
			return -EINVAL;
		t = reply + off;
		len = le32_to_cpu(t->len);
		if (len < sizeof(*t) || len > msg_len - off)
			return -EINVAL;

		switch (le32_to_cpu(t->type)) {
		case QAIC_TRANS_PASSTHROUGH_FROM_DEV:
			ret = qaic_decode_passthrough(ctx, t, len);
			break;
		case QAIC_TRANS_ACTIVATE_FROM_DEV:
			ret = qaic_decode_activate(ctx, t, len);
			break;
		case QAIC_TRANS_DEACTIVATE_FROM_DEV:
			ret = qaic_decode_deactivate(ctx, t, len);
			break;
		case QAIC_TRANS_STATUS_FROM_DEV:
			ret = qaic_decode_status(ctx, t, len, reply);
			break;
		default:
			/* DMA_XFER_CONT included: it is only valid alone. */
			ret = -EINVAL;
			break;
		}
		if (ret == -ECANCELED)
			canceled = true;
		else if (ret)
			return ret;
		off += len;
	}

	if (off != msg_len)
		return -EINVAL;
	return canceled ? -ECANCELED : 0;
}

/* Send the user's message, continue its transfers, decode the final reply. */
static int qaic_manage(struct qaic_manage_ctx *ctx, const u8 *msg, u32 len, u32 count)
{
	struct qaic_device *qdev = ctx->qdev;
	bool first = true;
	void *reply = NULL;
	unsigned int id;
	u64 xferred;
	u32 chunk;
	int ret;

	ret = qaic_cntl_req_init(&ctx->req, ctx->usr->handle);
	if (ret)
		return ret;
	ret = qaic_manage_encode(ctx, msg, len, count);

	while (!ret) {
		ret = qaic_cntl_xfer(qdev, &ctx->req, true, &reply);
		/* The card has read the pages once it replies (or never will). */
		qaic_dma_release(ctx);
		if (ret)
			break;
		first = false;

		ret = qaic_manage_get_cont(reply, &chunk, &xferred);
		if (ret <= 0)
			break;
		kfree(reply);
		reply = NULL;
		if (!ctx->chunk_id || chunk != ctx->chunk_id || xferred != ctx->xferred ||
		    ctx->first_xfer >= ctx->nr_xfers) {
			ret = -EINVAL;
			break;
		}
		if (qaic_dbc_gen(qdev) != ctx->gen) {
			/* The card was reset: it holds nothing any more. */
			ret = -EIO;
			break;
		}

		qaic_cntl_req_free(&ctx->req);
		ret = qaic_cntl_req_init(&ctx->req, ctx->usr->handle);
		if (!ret)
			ret = qaic_manage_encode_cont(ctx);
		if (ret) {
			qaic_dma_release(ctx);
			qaic_manage_abort(ctx);
		}
	}

	if (first && !ctx->req.queued) {
		/* Nothing reached the card: undo the host-only detaches. */
		for_each_set_bit(id, &ctx->detached, QAIC_NUM_DBC)
			qaic_dbc_reattach(qdev, ctx->usr, id, ctx->gen);
	}
	qaic_dma_release(ctx);
	qaic_cntl_req_free(&ctx->req);

	if (!ret)
		ret = qaic_manage_decode(ctx, reply);
	kfree(reply);
	return ret;
}

static void qaic_manage_ctx_free(struct qaic_manage_ctx *ctx)
{
	unsigned int i;

	/* FIFO memory no DBC took over. */
	for (i = 0; i < ctx->nr_fifos; i++)
		qaic_dbc_fifo_free(ctx->qdev, &ctx->fifos[i]);
	kfree(ctx->fifos);
	kfree(ctx->xfers);
	kfree(ctx->out);
	kfree(ctx);
}

int qaic_manage_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr = file->driver_priv;
	struct qaic_manage_msg *args = data;
	void __user *udata = u64_to_user_ptr(args->data);
	struct qaic_manage_ctx *ctx;
	u8 *msg = NULL;
	int ret, idx;

	if (args->len > QAIC_MANAGE_MAX_MSG_LENGTH)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (!READ_ONCE(qdev->online)) {
		ret = -ENODEV;
		goto out_exit;
	}

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		ret = -ENOMEM;
		goto out_exit;
	}
	ctx->qdev = qdev;
	ctx->usr = usr;
	INIT_LIST_HEAD(&ctx->maps);
	ctx->out = kzalloc(QAIC_MANAGE_MAX_MSG_LENGTH, GFP_KERNEL);
	msg = kzalloc(QAIC_MANAGE_MAX_MSG_LENGTH, GFP_KERNEL);
	if (!ctx->out || !msg) {
		ret = -ENOMEM;
		goto out_free;
	}

	if (copy_from_user(msg, udata, args->len)) {
		ret = -EFAULT;
		goto out_free;
	}
	if (args->count > QAIC_MANAGE_MAX_COUNT) {
		ret = -EINVAL;
		goto out_free;
	}

	ctx->gen = qaic_dbc_gen(qdev);
	ret = qaic_manage(ctx, msg, args->len, args->count);

	/* A refusal by the card still tells the user why. */
	if (!ret || ret == -ECANCELED) {
		if (copy_to_user(udata, ctx->out, ctx->out_len)) {
			ret = -EFAULT;
		} else {
			args->len = ctx->out_len;
			args->count = ctx->out_count;
		}
	}

out_free:
	kfree(msg);
	qaic_manage_ctx_free(ctx);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

/*
 * The user closes its fd: the card must release everything of the
 * handle before the host lets go of the DBCs. Any reply will do; waiting
 * cannot be interrupted, as the card may still be using them.
 */
int qaic_manage_terminate(struct qaic_device *qdev, struct qaic_user *usr)
{
	struct qaic_wire_terminate_to_dev *t;
	struct qaic_cntl_req req;
	void *reply = NULL;
	int ret;

	ret = qaic_cntl_req_init(&req, usr->handle);
	if (ret)
		return ret;
	t = qaic_cntl_req_add_trans(&req, QAIC_TRANS_TERMINATE_TO_DEV, sizeof(*t));
	if (t) {
		t->handle = cpu_to_le32(usr->handle);
		req.one_tre = true;
		ret = qaic_cntl_xfer(qdev, &req, false, &reply);
		if (!ret)
			kfree(reply);
	} else {
		ret = -ENOMEM;
	}
	qaic_cntl_req_free(&req);
	return ret;
}

/*
 * A reply whose sender has stopped waiting. Its DEACTIVATE_FROM_DEV
 * transactions still free their DBCs, whatever their status: there is no
 * user left to retry, and the card releases a handle's DBCs on TERMINATE.
 */
void qaic_manage_orphan(struct qaic_device *qdev, void *reply)
{
	const struct qaic_wire_deactivate_from_dev *d;
	struct qaic_wire_hdr *hdr = reply;
	u32 msg_len = le32_to_cpu(hdr->len);
	u32 count = le32_to_cpu(hdr->count);
	unsigned int gen = qaic_dbc_gen(qdev);
	struct qaic_wire_trans_hdr *t;
	u32 off = sizeof(*hdr), len, i;

	for (i = 0; i < count; i++) {
		if (msg_len - off < sizeof(*t))
			return;
		t = reply + off;
		len = le32_to_cpu(t->len);
		if (len < sizeof(*t) || len > msg_len - off)
			return;
		if (le32_to_cpu(t->type) == QAIC_TRANS_DEACTIVATE_FROM_DEV && len == sizeof(*d)) {
			d = (const void *)t;
			if (le32_to_cpu(d->dbc_id) < QAIC_NUM_DBC)
				qaic_dbc_release(qdev, le32_to_cpu(d->dbc_id), gen);
		}
		off += len;
	}
}
