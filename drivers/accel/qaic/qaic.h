/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: driver for the Qualcomm Cloud AI 100 (AIC100/AIC080) accelerator.
 * Definitions shared by the driver's files.
 */
#ifndef QAIC_H_
#define QAIC_H_

#include <drm/drm_device.h>
#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mhi.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct dentry;

#define QAIC_NAME		"qaic"
#define QAIC_DESC		"Qualcomm Cloud AI Accelerators"

/* BAR0 (MHI), BAR2 (DMA Bridge) and BAR4; SR-IOV resources masked off. */
#define QAIC_BAR_MASK		0x15U	/* BIT(0) | BIT(2) | BIT(4) */
#define QAIC_MSI_VECTORS	32

/*
 * NNC control channel (QAIC_CONTROL), see qaic_control.c.
 *
 * Requests are numbered by a per-device counter that survives channel and
 * card resets. A sender holds @lock from numbering its request until every
 * TRE of it is queued, so the TREs of two requests never interleave. Waiters
 * for replies sit on @pending; the MHI completion path hands each reply to
 * the waiter whose sequence number it echoes.
 */
struct qaic_control {
	/* Serialises senders; protects ch, prepared, next_seq, the CRC flags, spare_dl. */
	struct mutex		lock;
	struct mhi_device	*ch;
	/* Both channels are started and must be reset when we let go. */
	bool			prepared;
	u32			next_seq;
	/* CRC negotiation state, reset whenever the channel (re)opens. */
	bool			gen_crc;
	bool			check_crc;
	/* Receive buffers posted for requests that never went out. */
	unsigned int		spare_dl;
	/* Protects pending and alive; taken in the MHI completion path. */
	spinlock_t		pending_lock;
	struct list_head	pending;
	bool			alive;
	/* Version handshake run after the channel comes up. */
	struct work_struct	status_work;
};

/* Lines the card printed on QAIC_LOGGING while in SBL, see qaic_bootlog.c. */
struct qaic_bootlog {
	spinlock_t		lock;	/* protects lines and nr_lines */
	struct list_head	lines;
	unsigned int		nr_lines;
	struct dentry		*dentry;
};

/* Debugfs echo test on QAIC_LOOPBACK, see qaic_loopback.c. */
struct qaic_loopback {
	/* One user at a time; protects ch, result and result_len. */
	struct mutex		lock;
	struct mhi_device	*ch;
	u8			*result;
	size_t			result_len;
	/* Protects the receive bookkeeping below; taken in the MHI completion path. */
	spinlock_t		rx_lock;
	bool			alive;
	bool			active;
	size_t			expected;
	size_t			received;
	/* Bytes of receive buffers posted to the card and not yet returned. */
	size_t			dl_posted;
	struct completion	done;
	struct dentry		*dentry;
};

struct qaic_device {
	struct drm_device	drm;
	struct pci_dev		*pdev;
	void __iomem		*bar_mhi;
	void __iomem		*bar_dbc;
	/* Only one MSI was granted: every interrupt arrives on vector 0. */
	bool			single_msi;
	unsigned int		nr_vectors;

	/* Serialises changes of online and the uevents announcing them. */
	struct mutex		state_lock;
	/* Set once the firmware answered the NNC status exchange. */
	bool			online;

	/* The MHI host controller; its clients find us through container_of. */
	struct mhi_controller	mhi_cntrl;
	int			mhi_irq;
	bool			mhi_registered;

	struct qaic_control	cntl;
	struct qaic_bootlog	bootlog;
	struct qaic_loopback	lb;
};

static inline struct qaic_device *to_qaic_device(struct drm_device *drm)
{
	return container_of(drm, struct qaic_device, drm);
}

static inline struct qaic_device *mhi_cntrl_to_qaic(struct mhi_controller *mhi_cntrl)
{
	return container_of(mhi_cntrl, struct qaic_device, mhi_cntrl);
}

static inline struct qaic_device *mhi_dev_to_qaic(struct mhi_device *mhi_dev)
{
	return mhi_cntrl_to_qaic(mhi_dev->mhi_cntrl);
}

/* qaic_drv.c */
void qaic_dev_set_online(struct qaic_device *qdev);
void qaic_dev_set_offline(struct qaic_device *qdev, bool always_notify);

/* qaic_mhi.c */
int qaic_mhi_init(struct qaic_device *qdev);
void qaic_mhi_fini(struct qaic_device *qdev, bool graceful);
int qaic_mhi_power_up(struct qaic_device *qdev);
void qaic_mhi_power_down(struct qaic_device *qdev, bool graceful);

/* qaic_control.c */
extern struct mhi_driver qaic_control_driver;
int qaic_control_init(struct qaic_device *qdev);
void qaic_control_wake_all(struct qaic_device *qdev);

/* qaic_sahara.c */
extern struct mhi_driver qaic_sahara_driver;

/* qaic_bootlog.c */
extern struct mhi_driver qaic_bootlog_driver;
int qaic_bootlog_init(struct qaic_device *qdev);
void qaic_bootlog_debugfs_init(struct qaic_device *qdev);
void qaic_bootlog_debugfs_fini(struct qaic_device *qdev);

/* qaic_timesync.c */
extern struct mhi_driver qaic_timesync_driver;
extern struct mhi_driver qaic_timesync_periodic_driver;

/* qaic_loopback.c */
extern struct mhi_driver qaic_loopback_driver;
int qaic_loopback_init(struct qaic_device *qdev);
void qaic_loopback_debugfs_init(struct qaic_device *qdev);
void qaic_loopback_debugfs_fini(struct qaic_device *qdev);

#endif /* QAIC_H_ */
