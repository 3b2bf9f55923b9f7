/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: what the files of the data path (see qaic_data.c) share: the DBC
 * registers, the requests that move a slice, and the checks of a DBC's
 * user made on entering the data path.
 */
#ifndef QAIC_DATA_H_
#define QAIC_DATA_H_

#include <drm/drm_drv.h>
#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/list.h>
#include <linux/stddef.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "qaic.h"

/* DBC registers, in FIFO elements. */
#define QAIC_REQHP		0x0
#define QAIC_REQTP		0x4
#define QAIC_RSPHP		0x8
#define QAIC_RSPTP		0xc

/* Request element: cmd. */
#define QAIC_CMD_RESPONSE	BIT(4)
#define QAIC_CMD_BULK		BIT(3)
#define QAIC_CMD_XFER		GENMASK(1, 0)
#define QAIC_CMD_TO_DEV		1
#define QAIC_CMD_FROM_DEV	2

/* Module parameters (qaic_irq.c, qaic_wait.c). */
extern bool datapath_polling;
extern unsigned int wait_exec_default_timeout_ms;

/* One element of a DBC's request FIFO (little-endian, in host memory). */
struct qaic_dbc_req {
	__le16	req_id;
	u8	seq_id;
	u8	cmd;
	__le32	resv0;
	__le64	src_addr;
	__le64	dest_addr;
	__le32	len;
	__le32	resv1;
	__le64	db_addr;
	u8	db_len;
	u8	resv2[3];
	__le32	db_data;
	__le32	sem_cmd[4];
};

static_assert(sizeof(struct qaic_dbc_req) == QAIC_DBC_REQ_ELEM_SIZE);
static_assert(offsetof(struct qaic_dbc_req, db_data) == 44);

/* A slice of a BO and the requests that move it. */
struct qaic_slice {
	struct list_head	node;	/* in bo->slices */
	u64			offset;
	u64			size;
	u32			nents;
	struct qaic_dbc_req	*reqs;
};

static inline bool qaic_dbc_is_active(struct qaic_dbc *dbc)
{
	/* Pairs with the release in qaic_dbc_bind(): the FIFOs are set up. */
	return smp_load_acquire(&dbc->active);
}

/* In an SRCU read section of @dbc: may @usr drive it? */
static inline bool qaic_dbc_owned(struct qaic_dbc *dbc, struct qaic_user *usr)
{
	return qaic_dbc_is_active(dbc) && READ_ONCE(dbc->usr) == usr;
}

/* Is the card recovering @dbc from a crash? */
static inline bool qaic_dbc_in_ssr(struct qaic_dbc *dbc)
{
	return READ_ONCE(dbc->state) >= QAIC_DBC_STATE_BEFORE_SHUTDOWN;
}

/*
 * In an SRCU read section of @dbc: 0 if @usr may drive it, -EPIPE while it
 * is under SSR, else @not_owned.
 */
static inline int qaic_dbc_check(struct qaic_dbc *dbc, struct qaic_user *usr, int not_owned)
{
	if (qaic_dbc_in_ssr(dbc))
		return -EPIPE;
	if (qaic_dbc_owned(dbc, usr))
		return 0;
	/* An SSR sets the state before it drops the user: see qaic_dbc_enter_ssr(). */
	smp_rmb();
	if (qaic_dbc_in_ssr(dbc) || READ_ONCE(dbc->lost_handle) == usr->handle)
		return -EPIPE;
	return not_owned;
}

/* The card must be there and ONLINE; on success the caller must drm_dev_exit(). */
static inline int qaic_data_enter(struct qaic_device *qdev, int *idx)
{
	if (!drm_dev_enter(&qdev->drm, idx))
		return -ENODEV;
	if (!READ_ONCE(qdev->online)) {
		drm_dev_exit(*idx);
		return -ENODEV;
	}
	return 0;
}

/* qaic_irq.c */
void qaic_dbc_poll_work(struct work_struct *work);
void qaic_dbc_follow(struct qaic_dbc *dbc);

#endif /* QAIC_DATA_H_ */
