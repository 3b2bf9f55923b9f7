/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: driver for the Qualcomm Cloud AI 100 (AIC100/AIC080) accelerator.
 * Definitions shared by the driver's files.
 */
#ifndef QAIC_H_
#define QAIC_H_

#include <drm/drm_device.h>
#include <drm/drm_gem.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/dma-direction.h>
#include <linux/list.h>
#include <linux/mhi.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "qaic_compat.h"

struct dentry;
struct dma_fence;
struct drm_file;
struct qaic_user;
struct sg_table;

#define QAIC_NAME		"qaic"
#define QAIC_DESC		"Qualcomm Cloud AI Accelerators"

#define QAIC_MSI_VECTORS	32

/* The card generations; each differs only in how it boots (as upstream's). */
enum qaic_family {
	QAIC_FAMILY_AIC100,	/* AIC100 and AIC080 */
	QAIC_FAMILY_AIC200,
};

/*
 * What tells one family from another: which BARs it has and where its
 * MHI and DMA Bridge registers are, which interrupts it offers, and the
 * boot details qaic_mhi.c and qaic_sahara.c look up by family.
 */
struct qaic_family_config {
	enum qaic_family	family;
	const char		*name;
	/* Memory BARs, SR-IOV resources masked off: exactly these. */
	u32			bar_mask;
	u8			mhi_bar;
	u8			dbc_bar;
	unsigned int		irq_types;	/* PCI_IRQ_* */
};

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
	/* Replies no waiter claimed (under pending_lock), see qaic_manage_orphan(). */
	struct list_head	orphans;
	struct work_struct	orphan_work;
};

/*
 * The 12-byte header the QSM's RAS reports (QAIC_STATUS) and telemetry
 * messages (QAIC_TELEMETRY) start with.
 */
struct qaic_status_hdr {
	__le16	magic;
	__le16	version;
	__le32	seq;
	u8	type;
	u8	id;
	__le16	len;		/* of what follows the header */
} __packed;

/*
 * DMA Bridge channels (DBCs). A DBC is "in use" from the card's
 * ACTIVATE_FROM_DEV until its DEACTIVATE_FROM_DEV (status 0), the close of
 * its user's fd or a card reset; meanwhile the host keeps its FIFO memory.
 */
#define QAIC_NUM_DBC		16
#define QAIC_DBC_BASE		0x20000
#define QAIC_DBC_SIZE		0x1000
/* FIFO elements, and the gap and alignment of the FIFO allocation. */
#define QAIC_DBC_REQ_ELEM_SIZE	64
#define QAIC_DBC_RSP_ELEM_SIZE	4
#define QAIC_DBC_FIFO_GAP	256
#define QAIC_DBC_FIFO_ALIGN	SZ_4K

/*
 * What user space sees of a DBC (dbcN_state, DBC_STATE= uevents): free,
 * held by an activation, or one of the four stages of its subsystem
 * restart (SSR), see qaic_ssr.c. From BEFORE_SHUTDOWN on the DBC is under
 * SSR until it goes back to IDLE.
 */
enum qaic_dbc_state {
	QAIC_DBC_STATE_IDLE		= 0,
	QAIC_DBC_STATE_ASSIGNED		= 1,
	QAIC_DBC_STATE_BEFORE_SHUTDOWN	= 2,
	QAIC_DBC_STATE_AFTER_SHUTDOWN	= 3,
	QAIC_DBC_STATE_BEFORE_POWER_UP	= 4,
	QAIC_DBC_STATE_AFTER_POWER_UP	= 5,
};

/*
 * One coherent allocation holding both FIFOs of a DBC: nelem request
 * elements at offset 0, nelem response elements in the last bytes.
 */
struct qaic_dbc_fifo {
	void			*cpu;
	dma_addr_t		dma;
	u32			size;
	u32			nelem;
};

/*
 * Steering of one DBC interrupt vector to the CPU that submits (see
 * qaic_dbc_follow()). One per vector: the DBCs of a single MSI share one.
 */
struct qaic_irq_follow {
	/* Taken with mutex_trylock(): one submitter moves it at a time. */
	struct mutex		lock;
	struct irq_data		*data;		/* the vector: number, affinity */
	/* Where it was steered last (-1: never), and when. */
	int			cpu;
	unsigned long		moved;
	/* Someone else's affinity was seen and logged (until it goes). */
	bool			kept;
	/* The affinity when the vector was requested. */
	cpumask_var_t		home;
};

struct qaic_dbc {
	struct qaic_device	*qdev;
	unsigned int		id;
	void __iomem		*regs;
	/* The fields below are protected by qdev->dbc_lock. */
	bool			in_use;
	/*
	 * The user whose activation runs on the DBC; it stays set while
	 * that user has detached the DBC (DEACTIVATE_FROM_USR) and the card
	 * has not confirmed yet, so that closing the fd still releases it.
	 */
	struct qaic_user	*holder;
	struct list_head	holder_node;	/* in holder->dbcs */
	/* The user allowed to use the DBC, NULL while detached or free. */
	struct qaic_user	*usr;
	struct qaic_dbc_fifo	fifo;
	void			*req_q;		/* fifo.cpu */
	void			*rsp_q;		/* fifo.cpu + size - 4 * nelem */
	/* Woken when the DBC is released or the card is reset. */
	wait_queue_head_t	release_wq;
	/*
	 * enum qaic_dbc_state, changed under qdev->dbc_lock (see
	 * qaic_dbc_set_state()); the data path reads it without the lock.
	 */
	unsigned int		state;
	/*
	 * Handle of the user whose workload on this DBC was lost to the last
	 * SSR, or -1: until the DBC is assigned again that user keeps getting
	 * -EPIPE, however quickly the recovery ended. Under qdev->dbc_lock.
	 */
	int			lost_handle;

	/*
	 * The data path (qaic_data.c and the files it names). Ioctls, the
	 * interrupt thread and the polling work use the DBC's FIFOs and BOs
	 * only inside an SRCU read section of @srcu, having seen @active; a
	 * release clears @active and @usr and waits for them before it
	 * completes the queued BOs, detaches the sliced ones and frees the
	 * FIFOs.
	 */
	struct srcu_struct	srcu;
	/* The FIFOs are valid and the card serves them (set last, cleared first). */
	bool			active;
	/* Serialises submitters; protects next_req_id and req_tail. */
	struct mutex		req_lock;
	u16			next_req_id;
	/*
	 * The host is the only writer of REQTP and RSPHP: the data path keeps
	 * what it last wrote and does not read them back. req_tail is under
	 * req_lock, rsp_head under rsp_lock.
	 */
	u32			req_tail;
	u32			rsp_head;
	/* Serialises draining the response FIFO (interrupts off). */
	spinlock_t		rsp_lock;
	/* Where the DBC's interrupt is steered (qaic_irq.c). */
	struct qaic_irq_follow	*follow;
	/* Protects xfer_list, bos and the queue state of the BOs on them. */
	spinlock_t		xfer_lock;
	/* BOs submitted to the card and not complete yet, oldest first. */
	struct list_head	xfer_list;
	/* BOs sliced for this DBC. */
	struct list_head	bos;
	/* Releases so far, under qdev->dbc_lock: a waiter notices one. */
	unsigned int		releases;
	/* The DBC's interrupt: vector id + 1, or vector 0 on a single MSI. */
	int			irq;
	/* Polls the response FIFO while BOs are queued (datapath_polling). */
	struct work_struct	poll_work;
	/* dbcNNN in the accel device's debugfs directory. */
	struct dentry		*dentry;
};

/*
 * The state of one open file of the accel node. Its handle names it to
 * the card, in every message it sends and in the TERMINATE sent on close.
 */
struct qaic_user {
	struct qaic_device	*qdev;
	int			handle;
	/* Last chunk id of a continued DMA transfer; never hands out 0. */
	atomic_t		chunk_id;
	/* DBCs held by this user, under qdev->dbc_lock. */
	struct list_head	dbcs;
};

/* Host timestamps of a BO's last submission, for DRM_IOCTL_QAIC_PERF_STATS_BO. */
struct qaic_bo_perf {
	u64			received_ns;	/* the execute ioctl was entered */
	u64			submit_ns;	/* REQTP was written */
	u64			processed_ns;	/* the last response came in */
	u32			queue_level_before;
};

/* A buffer object: zeroed pages, mappable by the user. */
struct qaic_bo {
	struct drm_gem_object	base;
	/* Order-0 pages (split from larger chunks where possible). */
	struct page		**pages;
	unsigned long		nr_pages;
	/* The same pages, physically contiguous runs merged; DMA-mapped while sliced. */
	struct sg_table		*sgt;

	/* Serialises the data-path ioctls on the BO; protects the slicing state. */
	struct mutex		lock;
	/* Slicing state: the BO is mapped for @dir and bound to @dbc. */
	bool			sliced;
	enum dma_data_direction	dir;
	struct qaic_dbc		*dbc;
	struct list_head	slices;
	u32			nr_slice;
	/* Requests of all slices. */
	u32			total_slice_nents;
	/* In dbc->bos while sliced. */
	struct list_head	bo_node;
	/*
	 * The mapping needs CPU syncs (bounce buffers, a non-coherent
	 * device): its completion copies, so it is left to the interrupt
	 * thread, never done in the hard handler.
	 */
	bool			cpu_sync;

	/*
	 * Queue state, under dbc->xfer_lock: on dbc->xfer_list (or on a
	 * submitter's private list) while queued.
	 */
	struct list_head	xfer_node;
	u16			req_id;
	u32			nr_slice_done;
	/* The last submission was cut short by a release of its DBC. */
	bool			aborted;
	/*
	 * The last submission was dropped by an SSR of its DBC: WAIT_BO
	 * fails with -EPIPE until the BO is queued again.
	 */
	bool			ssr_aborted;
	/* Non-zero response statuses of the last submission, and the last one. */
	u32			nr_failed;
	u16			last_status;
	/*
	 * The card's fence for the last submission, in the reservation
	 * object, while queued; only for a BO others see (qaic_fence.c).
	 */
	struct dma_fence	*fence;
	struct completion	xfer_done;
	struct qaic_bo_perf	perf;
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

/*
 * Requests on QAIC_TELEMETRY, see qaic_telemetry.c: one at a time, each
 * answered by a response that echoes its sequence number.
 */
struct qaic_telemetry {
	/* Serialises requests; protects ch and next_seq. */
	struct mutex		lock;
	struct mhi_device	*ch;
	u32			next_seq;
	/* Protects what follows; taken in the MHI completion path. */
	spinlock_t		rx_lock;
	/* The channel is up: requests may wait for responses. */
	bool			alive;
	/* The request waiting for its response, and what came back. */
	bool			waiting;
	u32			seq;
	u8			cmd;
	u8			cmd_type;
	int			result;
	s64			val;
	struct completion	done;
	/* The receive buffer, posted while the channel is up. */
	void			*rx_buf;
	struct device		*hwmon;
};

struct qaic_device {
	struct drm_device	drm;
	struct pci_dev		*pdev;
	const struct qaic_family_config *cfg;
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
	struct qaic_telemetry	tele;

	/* RAS events the card reported since probe, saturating (qaic_ras.c). */
	u32			ce_count;
	u32			ue_count;
	u32			ue_nf_count;

	/* Protects the bookkeeping of every DBC and the users' DBC lists. */
	struct mutex		dbc_lock;
	/* Bumped when the card is reset: older replies must not touch DBCs. */
	unsigned int		dbc_gen;
	struct qaic_dbc		dbc[QAIC_NUM_DBC];
	struct qaic_irq_follow	irq_follow[QAIC_NUM_DBC];
	/* <bdf> in the driver's own debugfs directory ("qaic"). */
	struct dentry		*dbc_debugfs;
	/*
	 * The dbcN_state files exist and DBC state changes are announced,
	 * also on @class_dev (see qaic_sysfs.c). Under dbc_lock.
	 */
	bool			dbc_uevents;
	struct device		*class_dev;
};

static inline struct qaic_device *to_qaic_device(struct drm_device *drm)
{
	return container_of(drm, struct qaic_device, drm);
}

static inline struct qaic_bo *to_qaic_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct qaic_bo, base);
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

/* qaic_manage.c */
int qaic_manage_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int qaic_manage_terminate(struct qaic_device *qdev, struct qaic_user *usr);

/* qaic_dbc.c */
int qaic_dbc_init(struct qaic_device *qdev);
unsigned int qaic_dbc_gen(struct qaic_device *qdev);
int qaic_dbc_fifo_alloc(struct qaic_device *qdev, u32 nelem, struct qaic_dbc_fifo *fifo);
void qaic_dbc_fifo_free(struct qaic_device *qdev, struct qaic_dbc_fifo *fifo);
int qaic_dbc_bind(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id,
		  struct qaic_dbc_fifo *fifo, unsigned int gen);
int qaic_dbc_detach(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id);
void qaic_dbc_reattach(struct qaic_device *qdev, struct qaic_user *usr, u32 dbc_id,
		       unsigned int gen);
void qaic_dbc_release(struct qaic_device *qdev, u32 dbc_id, unsigned int gen);
void qaic_dbc_release_user(struct qaic_device *qdev, struct qaic_user *usr, bool card_released);
void qaic_dbc_release_all(struct qaic_device *qdev);
void qaic_dbc_enter_ssr(struct qaic_device *qdev, u32 dbc_id);
bool qaic_dbc_ssr_state(struct qaic_device *qdev, u32 dbc_id, unsigned int state);

/* qaic_gem.c */
struct drm_gem_object *qaic_gem_prime_import(struct drm_device *drm, struct dma_buf *dmabuf);
unsigned int qaic_max_dma_segment(struct device *dev);
int qaic_bo_dma_map(struct qaic_bo *bo, enum dma_data_direction dir);
void qaic_bo_dma_unmap(struct qaic_bo *bo, enum dma_data_direction dir);
int qaic_create_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int qaic_mmap_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

/* qaic_data.c */
int qaic_attach_slice_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int qaic_detach_slice_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
void qaic_data_init_bo(struct qaic_bo *bo);
int qaic_data_init_dbc(struct qaic_device *qdev, struct qaic_dbc *dbc);
void qaic_data_bind_dbc(struct qaic_dbc *dbc);
void qaic_data_release_dbc(struct qaic_dbc *dbc, bool ssr);

/* qaic_submit.c */
int qaic_execute_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int qaic_partial_execute_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

/* qaic_irq.c */
int qaic_data_request_irqs(struct qaic_device *qdev);
void qaic_data_disable_irqs(struct qaic_device *qdev);
void qaic_data_fini(struct qaic_device *qdev);

/* qaic_wait.c */
int qaic_wait_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int qaic_perf_stats_bo_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

/* qaic_debugfs.c */
void qaic_data_debugfs_root_init(void);
void qaic_data_debugfs_root_fini(void);
void qaic_data_debugfs_init(struct qaic_device *qdev);
void qaic_data_debugfs_fini(struct qaic_device *qdev);

/* qaic_fence.c */
/* qaic_fence_publish(): a fence to wait for appeared; wait and try again. */
#define QAIC_DEPS_CHANGED	1
int qaic_fence_wait_bo(struct qaic_bo *bo, const struct qaic_dbc *dbc, long *left);
int qaic_fence_publish(struct qaic_dbc *dbc, struct list_head *pending, u32 count);
void qaic_fence_signal(struct qaic_bo *bo, int error);

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

/* qaic_sysfs.c */
int qaic_sysfs_register(void);
void qaic_sysfs_unregister(void);
int qaic_sysfs_init(struct qaic_device *qdev);
void qaic_sysfs_fini(struct qaic_device *qdev);
void qaic_dbc_set_state(struct qaic_dbc *dbc, unsigned int state);

/* qaic_ssr.c */
extern struct mhi_driver qaic_ssr_driver;

/* qaic_ras.c */
extern struct mhi_driver qaic_ras_driver;
extern const struct attribute_group qaic_ras_group;

/* qaic_telemetry.c */
extern struct mhi_driver qaic_telemetry_driver;
extern const struct attribute_group qaic_telemetry_group;
int qaic_telemetry_init(struct qaic_device *qdev);

/* qaic_loopback.c */
extern struct mhi_driver qaic_loopback_driver;
int qaic_loopback_init(struct qaic_device *qdev);
void qaic_loopback_debugfs_init(struct qaic_device *qdev);
void qaic_loopback_debugfs_fini(struct qaic_device *qdev);

#endif /* QAIC_H_ */
