/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: NNC wire formats and the interface of the control transport
 * (qaic_control.c) to its users (qaic_manage.c). Everything on the wire is
 * little-endian.
 */
#ifndef QAIC_NNC_H_
#define QAIC_NNC_H_

#include <linux/build_bug.h>
#include <linux/list.h>
#include <linux/sizes.h>
#include <linux/types.h>

struct qaic_device;

#define QAIC_NNC_MAGIC			0x43494151	/* "QAIC" */
/* Largest message the card may send, and the host, respectively. */
#define QAIC_NNC_MAX_REPLY		SZ_4K
#define QAIC_NNC_MAX_REQUEST		SZ_64K
#define QAIC_NNC_NO_PARTITION		U32_MAX

struct qaic_wire_hdr {
	__le32 crc32;
	__le32 magic;
	__le32 seq;
	__le32 len;		/* whole message, this header included */
	__le32 count;		/* number of transactions */
	__le32 handle;
	__le32 partition_id;
	__le32 padding;
} __packed;

struct qaic_wire_trans_hdr {
	__le32 type;
	__le32 len;		/* whole transaction, this header included */
} __packed;

/* DMA_XFER_TO_DEV: followed by count address/size pairs. */
struct qaic_wire_dma_xfer {
	struct qaic_wire_trans_hdr hdr;
	__le32 tag;
	__le32 count;
	__le32 dma_chunk_id;	/* 0: not continued */
	__le32 padding;
} __packed;

struct qaic_wire_addr_size {
	__le64 addr;
	__le64 size;
} __packed;

/* DMA_XFER_CONT: the card wants the next part of a continued transfer. */
struct qaic_wire_dma_xfer_cont {
	struct qaic_wire_trans_hdr hdr;
	__le32 dma_chunk_id;
	__le32 padding;
	__le64 xferred_size;
} __packed;

struct qaic_wire_activate_to_dev {
	struct qaic_wire_trans_hdr hdr;
	__le64 req_q_addr;
	__le64 rsp_q_addr;
	__le32 req_q_size;
	__le32 rsp_q_size;
	__le32 buf_len;
	__le32 options;
} __packed;

struct qaic_wire_activate_from_dev {
	struct qaic_wire_trans_hdr hdr;
	__le32 status;
	__le32 dbc_id;
	__le64 options;
} __packed;

struct qaic_wire_deactivate_from_dev {
	struct qaic_wire_trans_hdr hdr;
	__le32 status;
	__le32 dbc_id;
} __packed;

struct qaic_wire_status_from_dev {
	struct qaic_wire_trans_hdr hdr;
	__le16 major;
	__le16 minor;
	__le32 status;
	__le64 status_flags;
} __packed;

struct qaic_wire_terminate_to_dev {
	struct qaic_wire_trans_hdr hdr;
	__le32 handle;
	__le32 padding;
} __packed;

static_assert(sizeof(struct qaic_wire_hdr) == 32);
static_assert(sizeof(struct qaic_wire_trans_hdr) == 8);
static_assert(sizeof(struct qaic_wire_dma_xfer) == 24);
static_assert(sizeof(struct qaic_wire_addr_size) == 16);
static_assert(sizeof(struct qaic_wire_dma_xfer_cont) == 24);
static_assert(sizeof(struct qaic_wire_activate_to_dev) == 40);
static_assert(sizeof(struct qaic_wire_activate_from_dev) == 24);
static_assert(sizeof(struct qaic_wire_deactivate_from_dev) == 16);
static_assert(sizeof(struct qaic_wire_status_from_dev) == 24);
static_assert(sizeof(struct qaic_wire_terminate_to_dev) == 16);

/*
 * An outgoing message under construction: a list of segments, each of
 * which goes out in its own TRE. The first segment is the 32-byte header,
 * which the transport fills in when it sends the message.
 */
struct qaic_cntl_req {
	struct list_head segs;
	unsigned int nr_segs;
	u32 len;		/* bytes in all segments */
	u32 count;		/* transactions */
	u32 handle;
	/* Send the whole message in a single TRE. */
	bool one_tre;
	/* Set once any of it has been handed to the card. */
	bool queued;
};

int qaic_cntl_req_init(struct qaic_cntl_req *req, u32 handle);
void qaic_cntl_req_free(struct qaic_cntl_req *req);
void *qaic_cntl_req_add(struct qaic_cntl_req *req, u32 len);
void *qaic_cntl_req_add_trans(struct qaic_cntl_req *req, u32 type, u32 len);
int qaic_cntl_xfer(struct qaic_device *qdev, struct qaic_cntl_req *req,
		   bool interruptible, void **reply);
bool qaic_cntl_reply_crc_ok(void *reply, u32 len);

/* qaic_manage.c: a reply nobody waited for, in process context. */
void qaic_manage_orphan(struct qaic_device *qdev, void *reply);

#endif /* QAIC_NNC_H_ */
