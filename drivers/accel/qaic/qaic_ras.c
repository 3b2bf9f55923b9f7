// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: error reports (RAS) on QAIC_STATUS (channels 14 and 15).
 *
 * The card pushes one 104-byte message per error it detects: where it
 * happened (the source), how bad it is (correctable, uncorrectable, or
 * uncorrectable but not fatal) and a syndrome whose layout depends on the
 * source. The driver logs each one, counts it in the PCI device's
 * ce_count, ue_count and ue_nonfatal_count, and answers an uncorrectable
 * error with an MHI SoC reset, after which the card boots again.
 *
 * One receive buffer is posted; a work item handles what arrives in it and
 * posts it again. Messages the card sends meanwhile wait in the card.
 */

#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/kernel.h>
#include <linux/mhi.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "qaic.h"

#define QAIC_RAS_MAGIC		0x55aa
#define QAIC_RAS_VERSION	2
#define QAIC_RAS_PUSH		0
#define QAIC_RAS_SYNDROME_LEN	64

enum qaic_ras_err_type {
	QAIC_RAS_CE,		/* corrected */
	QAIC_RAS_UE,		/* uncorrectable: the card must be reset */
	QAIC_RAS_UE_NF,		/* uncorrectable, the card goes on */
	QAIC_RAS_ERR_TYPES
};

enum qaic_ras_source {
	QAIC_RAS_SOC_MEM,
	QAIC_RAS_PCIE,
	QAIC_RAS_DDR,
	QAIC_RAS_SYS_BUS1,
	QAIC_RAS_SYS_BUS2,
	QAIC_RAS_NSP_MEM,
	QAIC_RAS_TSENS,
	QAIC_RAS_SOURCES
};

struct qaic_ras_msg {
	struct qaic_status_hdr hdr;
	__le32	result;
	__le32	source;
	__le32	err_type;
	__le32	err_threshold;
	__le32	ce_count;
	__le32	ue_count;
	__le32	intr_num;
	u8	syndrome[QAIC_RAS_SYNDROME_LEN];
} __packed;

/* The syndromes, by source. */
struct qaic_ras_soc_mem {
	__le64	addr[8];
} __packed;

struct qaic_ras_pcie {
	/* Correctable errors */
	__le32	bad_tlp;
	__le32	bad_dllp;
	__le32	replay_rollover;
	__le32	replay_timeout;
	__le32	rx_err;
	__le32	internal_ce;
	/* Non-fatal uncorrectable errors */
	__le32	fc_timeout;
	__le32	poisoned_tlp;
	__le32	ecrc_err;
	__le32	unsupported_req;
	__le32	completer_abort;
	__le32	completion_timeout;
	/* Fatal errors */
	__le32	addr;
	u8	index;
	u8	flags;		/* version 2: bit 0, the link runs in low power */
} __packed;

struct qaic_ras_ddr {
	__le32	count;
	__le32	irq_status;
	__le32	data[8];	/* bits 31:0, 63:32, 95:64, 127:96, two words each */
	__le32	addr_lsb;
	__le16	addr_msb;
	__le16	parity;
	__le16	instance;
	__le16	err_type;
} __packed;

struct qaic_ras_sys_bus1 {
	__le32	slave;
	__le32	err_type;
	__le16	addr[8];
	u8	instance;
} __packed;

struct qaic_ras_sys_bus2 {
	__le32	lsb3;
	__le32	msb3;
	__le32	lsb2;
	__le32	msb2;
	__le32	ext_id;
	__le16	path;
	__le16	op_type;
	__le16	len;
	__le16	redirect;
	u8	valid;
	u8	word_error;
	u8	non_secure;
	u8	opc;
	u8	error_code;
	u8	trans_type;
	u8	addr_space;
	u8	instance;
} __packed;

struct qaic_ras_nsp_mem {
	__le32	addr[8];
	u8	nsp;
} __packed;

struct qaic_ras_tsens {
	__le32	threshold;	/* 0 lower, 1 upper, 2 critical */
	__le32	temp;		/* degrees C, signed */
} __packed;

static_assert(sizeof(struct qaic_ras_msg) == 104);
static_assert(sizeof(struct qaic_ras_soc_mem) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_pcie) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_ddr) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_sys_bus1) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_sys_bus2) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_nsp_mem) <= QAIC_RAS_SYNDROME_LEN);
static_assert(sizeof(struct qaic_ras_tsens) <= QAIC_RAS_SYNDROME_LEN);

static const char * const qaic_ras_severity[QAIC_RAS_ERR_TYPES] = {
	[QAIC_RAS_CE]		= "corrected",
	[QAIC_RAS_UE]		= "fatal uncorrectable",
	[QAIC_RAS_UE_NF]	= "non-fatal uncorrectable",
};

static const char * const qaic_ras_source_name[QAIC_RAS_SOURCES] = {
	[QAIC_RAS_SOC_MEM]	= "SoC memory",
	[QAIC_RAS_PCIE]		= "PCIe",
	[QAIC_RAS_DDR]		= "DDR",
	[QAIC_RAS_SYS_BUS1]	= "system bus 1",
	[QAIC_RAS_SYS_BUS2]	= "system bus 2",
	[QAIC_RAS_NSP_MEM]	= "NSP memory",
	[QAIC_RAS_TSENS]	= "temperature sensor",
};

static const char * const qaic_ras_threshold_name[] = { "lower", "upper", "critical" };

/* The client of one QAIC_STATUS channel device. */
struct qaic_ras {
	struct qaic_device	*qdev;
	struct mhi_device	*mhi_dev;
	/* The channel is going away. */
	bool			dead;
	/* The receive buffer and what the last completion said of it. */
	struct qaic_ras_msg	*buf;
	size_t			rx_len;
	int			rx_status;
	struct work_struct	work;
};

/*
 * Each qaic_ras_show_*() below describes one source's syndrome into @out
 * (@size bytes) and returns the length written.
 */
static size_t qaic_ras_show_soc_mem(const struct qaic_ras_soc_mem *soc, char *out, size_t size)
{
	size_t n = scnprintf(out, size, "address");
	int i;

	for (i = 0; i < ARRAY_SIZE(soc->addr); i++)
		if (!i || soc->addr[i])
			n += scnprintf(out + n, size - n, " %#llx", le64_to_cpu(soc->addr[i]));
	return n;
}

static size_t qaic_ras_show_pcie(const struct qaic_ras_msg *msg, u32 type, char *out,
				 size_t size)
{
	const struct qaic_ras_pcie *pcie = (const void *)msg->syndrome;
	size_t n;

	if (type == QAIC_RAS_CE)
		n = scnprintf(out, size,
			      "bad TLP %u, bad DLLP %u, replay rollover %u, replay timeout %u, receive errors %u, internal %u",
			      le32_to_cpu(pcie->bad_tlp), le32_to_cpu(pcie->bad_dllp),
			      le32_to_cpu(pcie->replay_rollover),
			      le32_to_cpu(pcie->replay_timeout), le32_to_cpu(pcie->rx_err),
			      le32_to_cpu(pcie->internal_ce));
	else if (type == QAIC_RAS_UE_NF)
		n = scnprintf(out, size,
			      "flow control timeouts %u, poisoned TLP %u, ECRC errors %u, unsupported requests %u, completer aborts %u, completion timeouts %u",
			      le32_to_cpu(pcie->fc_timeout), le32_to_cpu(pcie->poisoned_tlp),
			      le32_to_cpu(pcie->ecrc_err), le32_to_cpu(pcie->unsupported_req),
			      le32_to_cpu(pcie->completer_abort),
			      le32_to_cpu(pcie->completion_timeout));
	else
		n = scnprintf(out, size, "index %u, address %#x", pcie->index,
			      le32_to_cpu(pcie->addr));
	if (le16_to_cpu(msg->hdr.version) >= 2 && (pcie->flags & BIT(0)))
		n += scnprintf(out + n, size - n, ", link in low power");
	return n;
}

static size_t qaic_ras_show_ddr(const struct qaic_ras_ddr *ddr, char *out, size_t size)
{
	return scnprintf(out, size,
			 "controller %u, address %#llx, %u errors, type %u, parity %#x, status %#x, data %*ph",
			 le16_to_cpu(ddr->instance),
			 (u64)le16_to_cpu(ddr->addr_msb) << 32 | le32_to_cpu(ddr->addr_lsb),
			 le32_to_cpu(ddr->count), le16_to_cpu(ddr->err_type),
			 le16_to_cpu(ddr->parity), le32_to_cpu(ddr->irq_status),
			 (int)sizeof(ddr->data), ddr->data);
}

static size_t qaic_ras_show_sys_bus1(const struct qaic_ras_sys_bus1 *b1, char *out, size_t size)
{
	size_t n = scnprintf(out, size, "instance %u, %s side, type %u, address",
			     b1->instance, le32_to_cpu(b1->slave) ? "slave" : "master",
			     le32_to_cpu(b1->err_type));
	int i;

	for (i = 0; i < ARRAY_SIZE(b1->addr); i++)
		n += scnprintf(out + n, size - n, " %04x", le16_to_cpu(b1->addr[i]));
	return n;
}

static size_t qaic_ras_show_sys_bus2(const struct qaic_ras_sys_bus2 *b2, char *out, size_t size)
{
	return scnprintf(out, size,
			 "instance %u, %svalid, word error %u, %ssecure, opcode %u, code %u, transaction %u, space %u, op %u, len %u, redirect %u, path %u, ext id %u, address %#llx/%#llx",
			 b2->instance, b2->valid ? "" : "not ", b2->word_error,
			 b2->non_secure ? "non-" : "", b2->opc, b2->error_code,
			 b2->trans_type, b2->addr_space, le16_to_cpu(b2->op_type),
			 le16_to_cpu(b2->len), le16_to_cpu(b2->redirect),
			 le16_to_cpu(b2->path), le32_to_cpu(b2->ext_id),
			 (u64)le32_to_cpu(b2->msb3) << 32 | le32_to_cpu(b2->lsb3),
			 (u64)le32_to_cpu(b2->msb2) << 32 | le32_to_cpu(b2->lsb2));
}

static size_t qaic_ras_show_nsp_mem(const struct qaic_ras_nsp_mem *nsp, char *out, size_t size)
{
	size_t n = scnprintf(out, size, "NSP %u, address", nsp->nsp);
	int i;

	for (i = 0; i < ARRAY_SIZE(nsp->addr); i++)
		if (!i || nsp->addr[i])
			n += scnprintf(out + n, size - n, " %#x", le32_to_cpu(nsp->addr[i]));
	return n;
}

static size_t qaic_ras_show_tsens(const struct qaic_ras_tsens *ts, char *out, size_t size)
{
	u32 threshold = le32_to_cpu(ts->threshold);

	return scnprintf(out, size, "%s threshold crossed at %d degrees C",
			 threshold < ARRAY_SIZE(qaic_ras_threshold_name) ?
			 qaic_ras_threshold_name[threshold] : "unknown",
			 (s32)le32_to_cpu(ts->temp));
}

/* Describe the syndrome of @msg into @out (@size bytes). */
static void qaic_ras_syndrome(const struct qaic_ras_msg *msg, u32 source, u32 type, char *out,
			      size_t size)
{
	const void *syn = msg->syndrome;

	switch (source) {
	case QAIC_RAS_SOC_MEM:
		qaic_ras_show_soc_mem(syn, out, size);
		break;
	case QAIC_RAS_PCIE:
		qaic_ras_show_pcie(msg, type, out, size);
		break;
	case QAIC_RAS_DDR:
		qaic_ras_show_ddr(syn, out, size);
		break;
	case QAIC_RAS_SYS_BUS1:
		qaic_ras_show_sys_bus1(syn, out, size);
		break;
	case QAIC_RAS_SYS_BUS2:
		qaic_ras_show_sys_bus2(syn, out, size);
		break;
	case QAIC_RAS_NSP_MEM:
		qaic_ras_show_nsp_mem(syn, out, size);
		break;
	case QAIC_RAS_TSENS:
		qaic_ras_show_tsens(syn, out, size);
		break;
	}
}

static void qaic_ras_count(u32 *count)
{
	if (*count != U32_MAX)
		WRITE_ONCE(*count, *count + 1);
}

/* Check, log and count the message in the buffer; true if the card must be reset. */
static bool qaic_ras_handle(struct qaic_ras *ras, size_t len, int status)
{
	struct qaic_device *qdev = ras->qdev;
	const struct qaic_ras_msg *msg = ras->buf;
	struct device *dev = &qdev->pdev->dev;
	u32 source, type;
	char syndrome[320];
	u16 version;

	if (status || len != sizeof(*msg)) {
		dev_warn_ratelimited(dev, "dropping a %zu-byte RAS message (status %d)\n", len,
				     status);
		return false;
	}
	version = le16_to_cpu(msg->hdr.version);
	source = le32_to_cpu(msg->source);
	type = le32_to_cpu(msg->err_type);
	if (le16_to_cpu(msg->hdr.magic) != QAIC_RAS_MAGIC || !version ||
	    version > QAIC_RAS_VERSION || msg->hdr.type != QAIC_RAS_PUSH ||
	    le16_to_cpu(msg->hdr.len) != len - sizeof(msg->hdr) ||
	    type >= QAIC_RAS_ERR_TYPES || source >= QAIC_RAS_SOURCES) {
		dev_warn_ratelimited(dev,
				     "dropping a malformed RAS message (magic %#x, version %u, type %u, len %u, error type %u, source %u)\n",
				     le16_to_cpu(msg->hdr.magic), version, msg->hdr.type,
				     le16_to_cpu(msg->hdr.len), type, source);
		return false;
	}

	switch (type) {
	case QAIC_RAS_CE:
		qaic_ras_count(&qdev->ce_count);
		break;
	case QAIC_RAS_UE:
		qaic_ras_count(&qdev->ue_count);
		break;
	default:
		qaic_ras_count(&qdev->ue_nf_count);
		break;
	}

	qaic_ras_syndrome(msg, source, type, syndrome, sizeof(syndrome));
	dev_printk(type == QAIC_RAS_UE ? KERN_ERR : KERN_WARNING, dev,
		   "RAS event %u: %s error in %s (threshold %u; card counts %u corrected, %u uncorrected; interrupt %u): %s\n",
		   le32_to_cpu(msg->hdr.seq), qaic_ras_severity[type], qaic_ras_source_name[source],
		   le32_to_cpu(msg->err_threshold), le32_to_cpu(msg->ce_count),
		   le32_to_cpu(msg->ue_count), le32_to_cpu(msg->intr_num), syndrome);
	return type == QAIC_RAS_UE;
}

static void qaic_ras_work(struct work_struct *work)
{
	struct qaic_ras *ras = container_of(work, struct qaic_ras, work);
	struct qaic_device *qdev = ras->qdev;
	bool reset;
	int ret;

	reset = qaic_ras_handle(ras, ras->rx_len, ras->rx_status);

	if (READ_ONCE(ras->dead))
		return;
	ret = mhi_queue_buf(ras->mhi_dev, DMA_FROM_DEVICE, ras->buf, sizeof(*ras->buf), MHI_EOT);
	/* -EIO or -ENODEV: the card is being reset or the channel is going. */
	if (ret && ret != -EIO && ret != -ENODEV)
		dev_err(&qdev->pdev->dev, "cannot post the RAS receive buffer: %d\n", ret);

	/*
	 * The card cannot go on. Its reset comes back as SYS_ERR, whose
	 * handling tears the channels down (flushing this work) and boots it.
	 */
	if (reset) {
		dev_err(&qdev->pdev->dev, "uncorrectable error: resetting the card\n");
		mhi_soc_reset(&qdev->mhi_cntrl);
	}
}

static void qaic_ras_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_ras *ras = dev_get_drvdata(&mhi_dev->dev);

	/* -ENOTCONN: the channel is being reset and the buffer comes back unused. */
	if (result->transaction_status == -ENOTCONN || READ_ONCE(ras->dead))
		return;
	ras->rx_len = result->bytes_xferd;
	ras->rx_status = result->transaction_status;
	queue_work(system_dfl_wq, &ras->work);
}

static void qaic_ras_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	/* Nothing is ever sent on channel 14. */
}

static int qaic_ras_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct qaic_ras *ras;
	int ret;

	ras = kzalloc(sizeof(*ras), GFP_KERNEL);
	if (!ras)
		return -ENOMEM;
	ras->buf = kzalloc(sizeof(*ras->buf), GFP_KERNEL);
	if (!ras->buf) {
		kfree(ras);
		return -ENOMEM;
	}
	ras->qdev = mhi_dev_to_qaic(mhi_dev);
	ras->mhi_dev = mhi_dev;
	INIT_WORK(&ras->work, qaic_ras_work);
	dev_set_drvdata(&mhi_dev->dev, ras);

	/* On failure the MHI core resets the channels; no buffer is posted by then. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		goto err_free;
	ret = mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, ras->buf, sizeof(*ras->buf), MHI_EOT);
	if (ret)
		goto err_free;
	return 0;

err_free:
	dev_set_drvdata(&mhi_dev->dev, NULL);
	kfree(ras->buf);
	kfree(ras);
	return ret;
}

/* MHI has reset the channels already: the buffer is back. */
static void qaic_ras_remove(struct mhi_device *mhi_dev)
{
	struct qaic_ras *ras = dev_get_drvdata(&mhi_dev->dev);

	WRITE_ONCE(ras->dead, true);
	mhi_unprepare_from_transfer(mhi_dev);
	cancel_work_sync(&ras->work);
	kfree(ras->buf);
	kfree(ras);
}

static const struct mhi_device_id qaic_ras_match_table[] = {
	{ .chan = "QAIC_STATUS" },
	{}
};

struct mhi_driver qaic_ras_driver = {
	.id_table	= qaic_ras_match_table,
	.probe		= qaic_ras_probe,
	.remove		= qaic_ras_remove,
	.ul_xfer_cb	= qaic_ras_ul_xfer_cb,
	.dl_xfer_cb	= qaic_ras_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_ras",
	},
};

/* On the PCI device: errors reported since the driver bound to it. */
static ssize_t ce_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct qaic_device *qdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%u\n", READ_ONCE(qdev->ce_count));
}
static DEVICE_ATTR_RO(ce_count);

static ssize_t ue_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct qaic_device *qdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%u\n", READ_ONCE(qdev->ue_count));
}
static DEVICE_ATTR_RO(ue_count);

static ssize_t ue_nonfatal_count_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct qaic_device *qdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%u\n", READ_ONCE(qdev->ue_nf_count));
}
static DEVICE_ATTR_RO(ue_nonfatal_count);

static struct attribute *qaic_ras_attrs[] = {
	&dev_attr_ce_count.attr,
	&dev_attr_ue_count.attr,
	&dev_attr_ue_nonfatal_count.attr,
	NULL
};

const struct attribute_group qaic_ras_group = {
	.attrs = qaic_ras_attrs,
};
