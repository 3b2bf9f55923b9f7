// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the card's MHI host controller.
 *
 * BAR0 (BAR1 on AIC200) holds the card's MHI and BHI registers. The kernel's MHI host stack
 * (mhi.ko) runs the state machine over them; this file describes the card's
 * channels and event ring to it, supplies the register accessors and
 * reacts to the card's error reports.
 */

#include <linux/delay.h>
#include <linux/dma-direction.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mhi.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/sizes.h>

#include "qaic.h"

/* Offset of SOC_HW_VERSION, which the card does not implement reliably. */
#define QAIC_SOC_HW_VERSION_OFF		0x224
#define QAIC_SOC_HW_VERSION		0x60110200
/* How long a SoC reset may take to bring the card back to PBL, in seconds. */
#define QAIC_SOC_RESET_WAIT_S		26

static unsigned int mhi_timeout_ms = 2000;
module_param(mhi_timeout_ms, uint, 0600);
MODULE_PARM_DESC(mhi_timeout_ms, "MHI state and command timeout in ms (default 2000)");

#define QAIC_CH(_num, _name, _elems, _dir, _ee)		\
	{						\
		.num = (_num),				\
		.name = (_name),			\
		.num_elements = (_elems),		\
		.local_elements = 0,			\
		.event_ring = 0,			\
		.dir = (_dir),				\
		.ee_mask = (_ee),			\
		.pollcfg = 0,				\
		.doorbell = MHI_DB_BRST_DISABLE,	\
		.lpm_notify = false,			\
		.offload_channel = false,		\
		.doorbell_mode_switch = false,		\
		.wake_capable = false,			\
	}

/*
 * Even channels carry host-to-card traffic, odd ones card-to-host. The SBL
 * channels exist while the secondary boot loader runs, the others once the
 * card's runtime (AMSS) is up. Both families have the first rows; AIC100
 * adds the rest (DIAG, QDSS, DEBUG and the boot-time TIMESYNC). The MHI
 * stack places channels by number, not by row.
 */
static const struct mhi_channel_config qaic_mhi_channels[] = {
	QAIC_CH(0, "QAIC_LOOPBACK", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(1, "QAIC_LOOPBACK", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(2, "QAIC_SAHARA", 32, DMA_TO_DEVICE, MHI_CH_EE_SBL),
	QAIC_CH(3, "QAIC_SAHARA", 32, DMA_FROM_DEVICE, MHI_CH_EE_SBL),
	QAIC_CH(6, "QAIC_SSR", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(7, "QAIC_SSR", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(10, "QAIC_CONTROL", 128, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(11, "QAIC_CONTROL", 128, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(12, "QAIC_LOGGING", 32, DMA_TO_DEVICE, MHI_CH_EE_SBL),
	QAIC_CH(13, "QAIC_LOGGING", 32, DMA_FROM_DEVICE, MHI_CH_EE_SBL),
	QAIC_CH(14, "QAIC_STATUS", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(15, "QAIC_STATUS", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(16, "QAIC_TELEMETRY", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(17, "QAIC_TELEMETRY", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(22, "QAIC_TIMESYNC_PERIODIC", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(23, "QAIC_TIMESYNC_PERIODIC", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	/* AIC100 only from here on. */
	QAIC_CH(4, "QAIC_DIAG", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(5, "QAIC_DIAG", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(8, "QAIC_QDSS", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(9, "QAIC_QDSS", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(18, "QAIC_DEBUG", 32, DMA_TO_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(19, "QAIC_DEBUG", 32, DMA_FROM_DEVICE, MHI_CH_EE_AMSS),
	QAIC_CH(20, "QAIC_TIMESYNC", 32, DMA_TO_DEVICE, MHI_CH_EE_SBL),
	QAIC_CH(21, "QAIC_TIMESYNC", 32, DMA_FROM_DEVICE, MHI_CH_EE_SBL),
};

#define QAIC_AIC200_NUM_CHANNELS	16

/*
 * How each family's boot loader is loaded. AIC200's PBL takes the SBL by
 * BHIe in 512 KiB segments; a kernel whose MHI stack loads only by BHI in
 * PBL (6.12) ignores seg_len there and the card takes BHI as well.
 */
struct qaic_mhi_family {
	const char				*name;
	const char				*sbl_image;
	size_t					seg_len;
	u32					num_channels;	/* rows of qaic_mhi_channels */
};

static const struct qaic_mhi_family qaic_mhi_families[] = {
	[QAIC_FAMILY_AIC100] = {
		.name = "AIC100",
		.sbl_image = "qcom/aic100/sbl.bin",
		.num_channels = ARRAY_SIZE(qaic_mhi_channels),
	},
	[QAIC_FAMILY_AIC200] = {
		.name = "AIC200",
		.sbl_image = "qcom/aic200/sbl.bin",
		.seg_len = SZ_512K,
		.num_channels = QAIC_AIC200_NUM_CHANNELS,
	},
};

/*
 * A single software event ring on MSI 0 carries every event of the card.
 * Not const: struct mhi_controller_config wants a mutable pointer.
 */
static struct mhi_event_config qaic_mhi_events[] = {
	{
		.num_elements = 32,
		.irq_moderation_ms = 0,
		.irq = 0,
		.channel = U32_MAX,
		.priority = 1,
		.mode = MHI_DB_BRST_DISABLE,
		.data_type = MHI_ER_CTRL,
		.hardware_event = false,
		.client_managed = false,
		.offload_channel = false,
	},
};

static const struct mhi_controller_config qaic_mhi_config = {
	.max_channels = 128,
	.timeout_ms = 2000,	/* replaced by mhi_timeout_ms at registration */
	.ready_timeout_ms = 0,
	.buf_len = 0,
	.num_events = ARRAY_SIZE(qaic_mhi_events),
	.event_cfg = qaic_mhi_events,
	.use_bounce_buf = false,
	.m2_no_db = false,
};

static int qaic_mhi_read_reg(struct mhi_controller *mhi_cntrl, void __iomem *addr, u32 *out)
{
	u32 val;

	/* The card may return garbage here, all-ones included: report the known value. */
	if (addr - mhi_cntrl->regs == QAIC_SOC_HW_VERSION_OFF) {
		*out = QAIC_SOC_HW_VERSION;
		return 0;
	}

	val = readl_relaxed(addr);
	/* All-ones is what a read returns once the link is gone. */
	if (val == U32_MAX)
		return -EIO;
	*out = val;
	return 0;
}

static void qaic_mhi_write_reg(struct mhi_controller *mhi_cntrl, void __iomem *addr, u32 val)
{
	writel_relaxed(val, addr);
}

/* No runtime power management: the card stays in M0 while bound. */
static int qaic_mhi_runtime_get(struct mhi_controller *mhi_cntrl)
{
	return 0;
}

static void qaic_mhi_runtime_put(struct mhi_controller *mhi_cntrl)
{
}

static void qaic_mhi_status_cb(struct mhi_controller *mhi_cntrl, enum mhi_callback reason)
{
	struct qaic_device *qdev = mhi_cntrl_to_qaic(mhi_cntrl);

	switch (reason) {
	case MHI_CB_FATAL_ERROR:
		/* May run in atomic context: only report it. */
		pci_err(qdev->pdev, "card reported a fatal error in its boot stage; MHI will attempt recovery\n");
		break;
	case MHI_CB_SYS_ERROR:
		/* Runs from the MHI state worker, before the channels are torn down. */
		pci_err(qdev->pdev, "card entered SYS_ERROR, going offline\n");
		qaic_dev_set_offline(qdev, true);
		/* The card is reset next and forgets its DBCs; so does the host. */
		qaic_dbc_release_all(qdev);
		break;
	default:
		break;
	}
}

/*
 * A card left in SBL (e.g. by a previous driver instance) cannot be powered
 * up: reset the SoC, wait for it to come back in PBL and try again.
 */
static int qaic_mhi_recover_from_sbl(struct qaic_device *qdev)
{
	struct mhi_controller *mhi_cntrl = &qdev->mhi_cntrl;
	enum mhi_ee_type ee = MHI_EE_MAX;
	unsigned int i;

	pci_warn(qdev->pdev, "card found in SBL at power-up, requesting a SoC reset\n");
	mhi_soc_reset(mhi_cntrl);

	for (i = 0; i < QAIC_SOC_RESET_WAIT_S; i++) {
		msleep(1000);
		ee = mhi_get_exec_env(mhi_cntrl);
		if (ee == MHI_EE_PBL)
			break;
	}
	if (ee != MHI_EE_PBL) {
		pci_err(qdev->pdev, "card did not return to PBL after a SoC reset (EE %d)\n", ee);
		return -EIO;
	}

	return mhi_async_power_up(mhi_cntrl);
}

int qaic_mhi_power_up(struct qaic_device *qdev)
{
	struct mhi_controller *mhi_cntrl = &qdev->mhi_cntrl;
	int ret;

	ret = mhi_async_power_up(mhi_cntrl);
	if (ret == -EIO && mhi_get_exec_env(mhi_cntrl) == MHI_EE_SBL)
		ret = qaic_mhi_recover_from_sbl(qdev);
	if (ret)
		pci_err(qdev->pdev, "MHI power-up failed: %d\n", ret);
	return ret;
}

void qaic_mhi_power_down(struct qaic_device *qdev, bool graceful)
{
	/* Destroys the channel devices, which detaches every MHI client. */
	mhi_power_down(&qdev->mhi_cntrl, graceful);
}

int qaic_mhi_init(struct qaic_device *qdev)
{
	struct mhi_controller *mhi_cntrl = &qdev->mhi_cntrl;
	struct pci_dev *pdev = qdev->pdev;
	const struct qaic_mhi_family *fam = &qaic_mhi_families[qdev->cfg->family];
	struct mhi_controller_config config = qaic_mhi_config;
	int ret;

	qdev->mhi_irq = pci_irq_vector(pdev, 0);
	if (qdev->mhi_irq < 0)
		return qdev->mhi_irq;

	mhi_cntrl->cntrl_dev = &pdev->dev;
	mhi_cntrl->regs = qdev->bar_mhi;
	mhi_cntrl->reg_len = SZ_4K;
	/* Let the card address all of host memory; stop short of wrapping. */
	mhi_cntrl->iova_start = 0;
	mhi_cntrl->iova_stop = PHYS_ADDR_MAX - 1;
	mhi_cntrl->nr_irqs = 1;
	mhi_cntrl->irq = &qdev->mhi_irq;
	/* On a single MSI the vector is shared with the data path. */
	if (qdev->single_msi)
		mhi_cntrl->irq_flags = IRQF_SHARED;
	mhi_cntrl->name = fam->name;
	mhi_cntrl->fw_image = fam->sbl_image;
	mhi_cntrl->seg_len = fam->seg_len;
	mhi_cntrl->read_reg = qaic_mhi_read_reg;
	mhi_cntrl->write_reg = qaic_mhi_write_reg;
	mhi_cntrl->runtime_get = qaic_mhi_runtime_get;
	mhi_cntrl->runtime_put = qaic_mhi_runtime_put;
	mhi_cntrl->status_cb = qaic_mhi_status_cb;

	config.timeout_ms = mhi_timeout_ms;
	config.num_channels = fam->num_channels;
	config.ch_cfg = qaic_mhi_channels;
	ret = mhi_register_controller(mhi_cntrl, &config);
	if (ret) {
		pci_err(pdev, "MHI controller registration failed: %d\n", ret);
		return ret;
	}

	ret = mhi_prepare_for_power_up(mhi_cntrl);
	if (ret) {
		pci_err(pdev, "MHI preparation failed: %d\n", ret);
		goto err_unregister;
	}

	ret = qaic_mhi_power_up(qdev);
	if (ret)
		goto err_unprepare;

	qdev->mhi_registered = true;
	return 0;

err_unprepare:
	mhi_unprepare_after_power_down(mhi_cntrl);
err_unregister:
	mhi_unregister_controller(mhi_cntrl);
	return ret;
}

void qaic_mhi_fini(struct qaic_device *qdev, bool graceful)
{
	struct mhi_controller *mhi_cntrl = &qdev->mhi_cntrl;

	if (!qdev->mhi_registered)
		return;
	qdev->mhi_registered = false;

	mhi_power_down(mhi_cntrl, graceful);
	mhi_unprepare_after_power_down(mhi_cntrl);
	mhi_unregister_controller(mhi_cntrl);
}
