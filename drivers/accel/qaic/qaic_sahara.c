// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: host side of the Sahara image transfer protocol on QAIC_SAHARA
 * (channels 2 and 3), used by the card's SBL to pull its runtime images.
 *
 * The card drives the exchange: it greets us (HELLO), asks for byte ranges
 * of numbered images (READ_DATA), which we answer with the raw bytes, and
 * reports the end of each image (END_OF_IMAGE), which we acknowledge with
 * DONE when the card is happy. A request we cannot serve is answered with
 * RESET, letting the card decide whether the image was optional.
 *
 * The AIC100 SBL asks for at most 512 KiB at a time and takes the answer
 * as one chained transfer. AIC200's boot loader streams: it asks for a
 * whole image at once and takes it in 64 KiB transfers, the next one sent
 * when the card has consumed the last.
 *
 * After a firmware failure the SBL greets us in memory-debug mode instead
 * and offers a RAM dump (MEM_DEBUG64: where its table is). The roles flip:
 * we read the table and then every region it lists with MEM_READ64, the
 * card answering each read with exactly the bytes asked for (or with
 * END_OF_IMAGE when it will not). The dump goes to devcoredump on the PCI
 * device in the layout of upstream's sahara.c: a 32-byte header {magic,
 * version 1, size of the whole dump, size of the table}, the table, then
 * the regions in table order. RESET ends the dump, and the card goes on
 * with the image transfer.
 */

#include <linux/devcoredump.h>
#include <linux/device.h>
#include <linux/dma-direction.h>
#include <linux/firmware.h>
#include <linux/kernel.h>
#include <linux/mhi.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "qaic.h"

#define SAHARA_HELLO			0x01
#define SAHARA_HELLO_RESP		0x02
#define SAHARA_READ_DATA		0x03
#define SAHARA_END_OF_IMAGE		0x04
#define SAHARA_DONE			0x05
#define SAHARA_DONE_RESP		0x06
#define SAHARA_RESET			0x07
#define SAHARA_RESET_RESP		0x08
#define SAHARA_MEM_DEBUG64		0x10
#define SAHARA_MEM_READ64		0x11

#define SAHARA_HELLO_LEN		0x30
#define SAHARA_READ_DATA_LEN		0x14
#define SAHARA_END_OF_IMAGE_LEN		0x10
#define SAHARA_DONE_LEN			0x08
#define SAHARA_RESET_LEN		0x08
#define SAHARA_MEM_DEBUG64_LEN		0x18
#define SAHARA_MEM_READ64_LEN		0x18

#define SAHARA_VERSION			2
#define SAHARA_MODE_TX_PENDING		0
#define SAHARA_MODE_TX_COMPLETE		1
#define SAHARA_MODE_MEMORY_DEBUG	2

/* Largest packet, and largest TRE, in either direction. */
#define SAHARA_PKT_MAX			0xffffU
/* Largest READ_DATA the card may ask for. */
#define SAHARA_READ_MAX			0x80000U
#define SAHARA_NR_TX			DIV_ROUND_UP(SAHARA_READ_MAX, SAHARA_PKT_MAX)
#define SAHARA_NO_IMAGE			U32_MAX
/* Largest region read: what upstream asks, 16-byte aligned below a TRE. */
#define SAHARA_DUMP_READ_MAX		0xfff0U
#define SAHARA_DUMP_NAME_LEN		20
#define SAHARA_DUMP_MAGIC		0x1234567890abcdefULL
#define SAHARA_DUMP_VERSION		1
/* The most a card may make us hold for one RAM dump. */
#define SAHARA_DUMP_MAX			SZ_64M

struct sahara_hdr {
	__le32 cmd;
	__le32 len;	/* whole packet, this header included */
} __packed;

struct sahara_hello {
	struct sahara_hdr hdr;
	__le32 version;
	__le32 version_compat;
	__le32 max_len;
	__le32 mode;
	__le32 reserved[6];
} __packed;

struct sahara_hello_resp {
	struct sahara_hdr hdr;
	__le32 version;
	__le32 version_compat;
	__le32 status;
	__le32 mode;
	__le32 reserved[6];
} __packed;

struct sahara_read_data {
	struct sahara_hdr hdr;
	__le32 image;
	__le32 offset;
	__le32 len;
} __packed;

struct sahara_end_of_image {
	struct sahara_hdr hdr;
	__le32 image;
	__le32 status;
} __packed;

struct sahara_mem_debug64 {
	struct sahara_hdr hdr;
	__le64 table_addr;
	__le64 table_len;
} __packed;

struct sahara_mem_read64 {
	struct sahara_hdr hdr;
	__le64 addr;
	__le64 len;
} __packed;

/* An entry of the card's dump table, copied as is into the devcoredump. */
struct sahara_dump_entry {
	__le64 type;
	__le64 addr;
	__le64 len;
	char description[SAHARA_DUMP_NAME_LEN];
	char filename[SAHARA_DUMP_NAME_LEN];
} __packed;

/* What opens the devcoredump. */
struct sahara_dump_meta {
	__le64 magic;
	__le64 version;
	__le64 dump_size;	/* this header, the table and the regions */
	__le64 table_size;
} __packed;

static_assert(sizeof(struct sahara_hello) == SAHARA_HELLO_LEN);
static_assert(sizeof(struct sahara_mem_debug64) == SAHARA_MEM_DEBUG64_LEN);
static_assert(sizeof(struct sahara_mem_read64) == SAHARA_MEM_READ64_LEN);
static_assert(sizeof(struct sahara_dump_entry) == 64);
static_assert(sizeof(struct sahara_dump_meta) == 32);
static_assert(sizeof(struct sahara_hello_resp) == SAHARA_HELLO_LEN);
static_assert(sizeof(struct sahara_read_data) == SAHARA_READ_DATA_LEN);
static_assert(sizeof(struct sahara_end_of_image) == SAHARA_END_OF_IMAGE_LEN);

/* Runtime images each family's boot loader may ask for, by Sahara image id. */
static const char * const qaic_aic100_images[] = {
	[1] = "qcom/aic100/fw1.bin",
	[2] = "qcom/aic100/fw2.bin",
	[4] = "qcom/aic100/fw4.bin",
	[5] = "qcom/aic100/fw5.bin",
	[6] = "qcom/aic100/fw6.bin",
	[8] = "qcom/aic100/fw8.bin",
	[9] = "qcom/aic100/fw9.bin",
	[10] = "qcom/aic100/fw10.bin",
};

static const char * const qaic_aic200_images[] = {
	[5] = "qcom/aic200/uefi.elf",
	[12] = "qcom/aic200/aic200-nsp.bin",
	[23] = "qcom/aic200/aop.mbn",
	[32] = "qcom/aic200/tz.mbn",
	[33] = "qcom/aic200/hypvm.mbn",
	[38] = "qcom/aic200/xbl_config.elf",
	[39] = "qcom/aic200/aic200_abl.elf",
	[40] = "qcom/aic200/apdp.mbn",
	[41] = "qcom/aic200/devcfg.mbn",
	[42] = "qcom/aic200/sec.elf",
	[43] = "qcom/aic200/aic200-hlos.elf",
	[49] = "qcom/aic200/shrm.elf",
	[50] = "qcom/aic200/cpucp.elf",
	[51] = "qcom/aic200/aop_devcfg.mbn",
	[54] = "qcom/aic200/qupv3fw.elf",
	[57] = "qcom/aic200/cpucp_dtbs.elf",
	[62] = "qcom/aic200/uefi_dtbs.elf",
	[63] = "qcom/aic200/xbl_ac_config.mbn",
	[64] = "qcom/aic200/tz_ac_config.mbn",
	[65] = "qcom/aic200/hyp_ac_config.mbn",
	[66] = "qcom/aic200/pdp.elf",
	[67] = "qcom/aic200/pdp_cdb.elf",
	[68] = "qcom/aic200/sdi.mbn",
	[69] = "qcom/aic200/dcd.mbn",
	[73] = "qcom/aic200/gearvm.mbn",
	[74] = "qcom/aic200/sti.bin",
	[76] = "qcom/aic200/tz_qti_config.mbn",
	[78] = "qcom/aic200/pvs.bin",
};

struct qaic_sahara_family {
	const char * const	*images;
	u32			nr_images;
	/* READ_DATA is answered in one transfer at a time (see the top). */
	bool			streaming;
};

static const struct qaic_sahara_family qaic_sahara_families[] = {
	[QAIC_FAMILY_AIC100] = {
		.images = qaic_aic100_images,
		.nr_images = ARRAY_SIZE(qaic_aic100_images),
	},
	[QAIC_FAMILY_AIC200] = {
		.images = qaic_aic200_images,
		.nr_images = ARRAY_SIZE(qaic_aic200_images),
		.streaming = true,
	},
};

/* The send buffer of streamed image data; tx[0] carries the commands. */
#define SAHARA_STREAM_TX		1

struct qaic_sahara {
	struct mhi_device *mhi_dev;
	const struct qaic_sahara_family *fam;
	struct work_struct work;
	/* Streaming: sends the next piece once the card consumed the last. */
	struct work_struct stream_work;
	/* Serialises the two works over the image and the stream. */
	struct mutex lock;
	/* The one receive buffer, re-posted after each packet is handled. */
	void *rx;
	size_t rx_len;
	bool rx_overflow;
	/* Enough send buffers for the largest READ_DATA answer. */
	void *tx[SAHARA_NR_TX];
	u32 image_id;
	const struct firmware *fw;
	/* What is left of a streamed READ_DATA. */
	u32 stream_offset;
	u32 stream_left;

	/* Memory debug: a RAM dump being read, from MEM_DEBUG64 to RESET. */
	bool dumping;
	u64 dump_table_len;	/* until the table is in, then 0 */
	u64 dump_requested;	/* bytes the last MEM_READ64 asked for */
	void *dump;		/* what goes to devcoredump */
	size_t dump_size;
	size_t dump_pos;	/* where the next bytes go */
	struct sahara_dump_entry *dump_entries;	/* the table, in dump */
	u64 dump_nents;
	u64 dump_index;		/* the region being read */
	u64 dump_offset;	/* bytes of it already in */
};

static const char *sahara_image_name(struct qaic_sahara *s, u32 id)
{
	if (id < s->fam->nr_images)
		return s->fam->images[id];
	return NULL;
}

static void sahara_release_image(struct qaic_sahara *s)
{
	release_firmware(s->fw);
	s->fw = NULL;
	s->image_id = SAHARA_NO_IMAGE;
	s->stream_left = 0;
}

static void sahara_send(struct qaic_sahara *s, u32 cmd, u32 len)
{
	struct sahara_hdr *hdr = s->tx[0];
	int ret;

	hdr->cmd = cpu_to_le32(cmd);
	hdr->len = cpu_to_le32(len);
	ret = mhi_queue_buf(s->mhi_dev, DMA_TO_DEVICE, s->tx[0], len, MHI_EOT);
	if (ret)
		dev_err(&s->mhi_dev->dev, "cannot send Sahara command %u: %d\n", cmd, ret);
}

static void sahara_send_reset(struct qaic_sahara *s)
{
	memset(s->tx[0], 0, SAHARA_RESET_LEN);
	sahara_send(s, SAHARA_RESET, SAHARA_RESET_LEN);
}

static void sahara_hello(struct qaic_sahara *s)
{
	const struct sahara_hello *hello = s->rx;
	struct sahara_hello_resp *resp = s->tx[0];
	u32 version = le32_to_cpu(hello->version);
	u32 mode = le32_to_cpu(hello->mode);

	if (le32_to_cpu(hello->hdr.len) != SAHARA_HELLO_LEN || s->rx_len < SAHARA_HELLO_LEN) {
		dev_err(&s->mhi_dev->dev, "malformed Sahara HELLO: length %u (%zu received)\n",
			le32_to_cpu(hello->hdr.len), s->rx_len);
		return;
	}
	if (version != SAHARA_VERSION) {
		dev_err(&s->mhi_dev->dev, "unsupported Sahara version %u\n", version);
		return;
	}
	if (mode != SAHARA_MODE_TX_PENDING && mode != SAHARA_MODE_TX_COMPLETE &&
	    mode != SAHARA_MODE_MEMORY_DEBUG) {
		dev_err(&s->mhi_dev->dev, "unsupported Sahara mode %u\n", mode);
		return;
	}

	memset(resp, 0, sizeof(*resp));
	resp->version = cpu_to_le32(SAHARA_VERSION);
	resp->version_compat = cpu_to_le32(SAHARA_VERSION);
	resp->status = 0;
	resp->mode = hello->mode;
	sahara_send(s, SAHARA_HELLO_RESP, SAHARA_HELLO_LEN);
}

/* Make @id the active image, loading its file if needed. */
static int sahara_select_image(struct qaic_sahara *s, u32 id)
{
	struct device *dev = &s->mhi_dev->dev;
	const char *name;
	int ret;

	if (id == s->image_id)
		return 0;
	if (s->image_id != SAHARA_NO_IMAGE) {
		dev_err(dev, "Sahara asked for image %u while image %u is in progress\n",
			id, s->image_id);
		return -EINVAL;
	}

	name = sahara_image_name(s, id);
	if (!name) {
		dev_err(dev, "Sahara asked for unknown image %u\n", id);
		return -EINVAL;
	}

	/* The card may be able to do without the image: no loader warning. */
	ret = firmware_request_nowarn(&s->fw, name, dev);
	if (ret) {
		dev_warn(dev, "firmware file %s (image %u) is missing: %d\n", name, id, ret);
		s->fw = NULL;
		return ret;
	}
	s->image_id = id;
	return 0;
}

/* Send the next piece of a streamed READ_DATA, one transfer of its own. */
static void sahara_stream_next(struct qaic_sahara *s)
{
	u32 chunk = min(s->stream_left, SAHARA_PKT_MAX);
	void *buf = s->tx[SAHARA_STREAM_TX];
	int ret;

	if (!chunk || !s->fw)
		return;
	memcpy(buf, s->fw->data + s->stream_offset, chunk);
	s->stream_offset += chunk;
	s->stream_left -= chunk;
	ret = mhi_queue_buf(s->mhi_dev, DMA_TO_DEVICE, buf, chunk, MHI_EOT);
	if (ret) {
		dev_err(&s->mhi_dev->dev, "cannot send image %u data: %d\n", s->image_id, ret);
		s->stream_left = 0;
	}
}

static void sahara_stream_work(struct work_struct *work)
{
	struct qaic_sahara *s = container_of(work, struct qaic_sahara, stream_work);

	mutex_lock(&s->lock);
	sahara_stream_next(s);
	mutex_unlock(&s->lock);
}

static void sahara_read_data(struct qaic_sahara *s)
{
	const struct sahara_read_data *req = s->rx;
	struct device *dev = &s->mhi_dev->dev;
	u32 id, offset, len, chunk;
	unsigned int i;
	int ret;

	if (le32_to_cpu(req->hdr.len) != SAHARA_READ_DATA_LEN || s->rx_len < SAHARA_READ_DATA_LEN) {
		dev_err(dev, "malformed Sahara READ_DATA: length %u (%zu received)\n",
			le32_to_cpu(req->hdr.len), s->rx_len);
		return;
	}

	id = le32_to_cpu(req->image);
	offset = le32_to_cpu(req->offset);
	len = le32_to_cpu(req->len);
	dev_dbg(dev, "READ_DATA image %u offset %#x length %#x\n", id, offset, len);

	if (sahara_select_image(s, id)) {
		sahara_send_reset(s);
		return;
	}
	/* The image stays selected: END_OF_IMAGE releases it. */
	if (!s->fam->streaming && len > SAHARA_READ_MAX) {
		dev_err(dev, "Sahara READ_DATA of %#x bytes exceeds the %#x limit\n",
			len, SAHARA_READ_MAX);
		sahara_send_reset(s);
		return;
	}
	if (offset >= s->fw->size || len > s->fw->size - offset) {
		dev_err(dev, "Sahara READ_DATA %#x+%#x is outside %s (%zu bytes)\n",
			offset, len, sahara_image_name(s, id), s->fw->size);
		sahara_send_reset(s);
		return;
	}
	if (!len) {
		dev_err(dev, "Sahara READ_DATA of zero bytes ignored\n");
		return;
	}
	if (s->fam->streaming) {
		s->stream_offset = offset;
		s->stream_left = len;
		sahara_stream_next(s);
		return;
	}

	for (i = 0; len; i++) {
		chunk = min(len, SAHARA_PKT_MAX);
		memcpy(s->tx[i], s->fw->data + offset, chunk);
		offset += chunk;
		len -= chunk;
		ret = mhi_queue_buf(s->mhi_dev, DMA_TO_DEVICE, s->tx[i], chunk,
				    len ? MHI_CHAIN : MHI_EOT);
		if (ret) {
			dev_err(dev, "cannot send image %u data: %d\n", id, ret);
			return;
		}
	}
}

static void sahara_end_of_image(struct qaic_sahara *s)
{
	const struct sahara_end_of_image *eoi = s->rx;
	struct device *dev = &s->mhi_dev->dev;
	const char *name;
	u32 id, status;

	if (le32_to_cpu(eoi->hdr.len) != SAHARA_END_OF_IMAGE_LEN ||
	    s->rx_len < SAHARA_END_OF_IMAGE_LEN) {
		dev_err(dev, "malformed Sahara END_OF_IMAGE: length %u (%zu received)\n",
			le32_to_cpu(eoi->hdr.len), s->rx_len);
		return;
	}

	id = le32_to_cpu(eoi->image);
	status = le32_to_cpu(eoi->status);
	if (s->image_id != SAHARA_NO_IMAGE && id != s->image_id) {
		dev_err(dev, "Sahara END_OF_IMAGE for image %u while image %u is in progress\n",
			id, s->image_id);
		return;
	}

	sahara_release_image(s);
	if (status) {
		name = sahara_image_name(s, id);
		dev_err(dev, "card failed to load image %u (%s): status %u\n",
			id, name ? name : "unknown", status);
		return;
	}

	dev_dbg(dev, "image %u transferred\n", id);
	memset(s->tx[0], 0, SAHARA_DONE_LEN);
	sahara_send(s, SAHARA_DONE, SAHARA_DONE_LEN);
}

static void sahara_mem_read(struct qaic_sahara *s, u64 addr, u64 len)
{
	struct sahara_mem_read64 *req = s->tx[0];

	req->addr = cpu_to_le64(addr);
	req->len = cpu_to_le64(len);
	s->dump_requested = len;
	sahara_send(s, SAHARA_MEM_READ64, SAHARA_MEM_READ64_LEN);
}

/* Leave memory debug: the card answers RESET and loads its images. */
static void sahara_dump_end(struct qaic_sahara *s)
{
	vfree(s->dump);
	s->dump = NULL;
	s->dumping = false;
	sahara_send_reset(s);
}

static void sahara_memory_debug(struct qaic_sahara *s)
{
	const struct sahara_mem_debug64 *md = s->rx;
	struct device *dev = &s->mhi_dev->dev;
	u64 len;

	if (le32_to_cpu(md->hdr.len) != SAHARA_MEM_DEBUG64_LEN ||
	    s->rx_len != SAHARA_MEM_DEBUG64_LEN) {
		dev_err(dev, "malformed Sahara MEM_DEBUG64: length %u (%zu received)\n",
			le32_to_cpu(md->hdr.len), s->rx_len);
		sahara_send_reset(s);
		return;
	}
	len = le64_to_cpu(md->table_len);
	/* The table is read in one go, into the receive buffer. */
	if (!len || len % sizeof(struct sahara_dump_entry) || len > SAHARA_PKT_MAX) {
		dev_err(dev, "RAM dump table of %llu bytes refused\n", len);
		sahara_send_reset(s);
		return;
	}
	dev_info(dev, "the card offers a RAM dump after a firmware failure; reading it\n");
	s->dumping = true;
	s->dump_table_len = len;
	sahara_mem_read(s, le64_to_cpu(md->table_addr), len);
}

/* The table is in the receive buffer: make room for the whole dump. */
static int sahara_dump_start(struct qaic_sahara *s)
{
	const struct sahara_dump_entry *table = s->rx;
	struct sahara_dump_meta *meta;
	u64 n = s->dump_table_len / sizeof(*table);
	u64 size = sizeof(*meta) + s->dump_table_len;
	u64 i;

	for (i = 0; i < n; i++)
		if (check_add_overflow(size, le64_to_cpu(table[i].len), &size))
			return -EOVERFLOW;
	if (size > SAHARA_DUMP_MAX)
		return -EFBIG;

	s->dump = vzalloc(size);
	if (!s->dump)
		return -ENOMEM;
	s->dump_size = size;
	meta = s->dump;
	meta->magic = cpu_to_le64(SAHARA_DUMP_MAGIC);
	meta->version = cpu_to_le64(SAHARA_DUMP_VERSION);
	meta->dump_size = cpu_to_le64(size);
	meta->table_size = cpu_to_le64(s->dump_table_len);
	s->dump_entries = s->dump + sizeof(*meta);
	memcpy(s->dump_entries, table, s->dump_table_len);
	/* The names come from the card: make sure they end. */
	for (i = 0; i < n; i++) {
		s->dump_entries[i].description[SAHARA_DUMP_NAME_LEN - 1] = '\0';
		s->dump_entries[i].filename[SAHARA_DUMP_NAME_LEN - 1] = '\0';
	}
	s->dump_nents = n;
	s->dump_index = 0;
	s->dump_offset = 0;
	s->dump_pos = sizeof(*meta) + s->dump_table_len;
	s->dump_table_len = 0;
	return 0;
}

/* Ask for the next piece of the dump; false once every region is in. */
static bool sahara_dump_next(struct qaic_sahara *s)
{
	const struct sahara_dump_entry *e;
	u64 left;

	for (; s->dump_index < s->dump_nents; s->dump_index++, s->dump_offset = 0) {
		e = &s->dump_entries[s->dump_index];
		left = le64_to_cpu(e->len) - s->dump_offset;
		if (!left)
			continue;
		left = min_t(u64, left, SAHARA_DUMP_READ_MAX);
		/* 16 bytes back could not be told from END_OF_IMAGE. */
		if (left == SAHARA_END_OF_IMAGE_LEN)
			left /= 2;
		sahara_mem_read(s, le64_to_cpu(e->addr) + s->dump_offset, left);
		return true;
	}
	return false;
}

/* The card's answer to a MEM_READ64: raw bytes, or END_OF_IMAGE. */
static void sahara_dump_data(struct qaic_sahara *s)
{
	const struct sahara_end_of_image *eoi = s->rx;
	struct device *dev = &s->mhi_dev->dev;
	int ret;

	if (s->rx_overflow || s->rx_len != s->dump_requested) {
		if (!s->rx_overflow && s->rx_len == SAHARA_END_OF_IMAGE_LEN &&
		    le32_to_cpu(eoi->hdr.cmd) == SAHARA_END_OF_IMAGE)
			dev_err(dev, "the card refused a RAM dump read: status %#x\n",
				le32_to_cpu(eoi->status));
		else
			dev_err(dev, "RAM dump read of %llu bytes answered with %zu%s\n",
				s->dump_requested, s->rx_len, s->rx_overflow ? " and more" : "");
		sahara_dump_end(s);
		return;
	}

	if (s->dump_table_len) {
		ret = sahara_dump_start(s);
		if (ret) {
			dev_err(dev, "RAM dump not taken: %d\n", ret);
			sahara_dump_end(s);
			return;
		}
	} else {
		memcpy(s->dump + s->dump_pos, s->rx, s->rx_len);
		s->dump_pos += s->rx_len;
		s->dump_offset += s->rx_len;
	}
	if (sahara_dump_next(s))
		return;

	dev_info(dev, "RAM dump of %zu bytes handed to devcoredump\n", s->dump_size);
	/* devcoredump owns the dump now and vfree()s it. */
	dev_coredumpv(s->mhi_dev->mhi_cntrl->cntrl_dev, s->dump, s->dump_size, GFP_KERNEL);
	s->dump = NULL;
	sahara_dump_end(s);
}

static void sahara_work(struct work_struct *work)
{
	struct qaic_sahara *s = container_of(work, struct qaic_sahara, work);
	const struct sahara_hdr *hdr = s->rx;
	int ret;

	mutex_lock(&s->lock);
	if (s->dumping) {
		sahara_dump_data(s);
		goto requeue;
	}
	if (s->rx_overflow) {
		dev_err(&s->mhi_dev->dev, "dropping a Sahara packet larger than %u bytes\n",
			SAHARA_PKT_MAX);
		goto requeue;
	}
	if (s->rx_len < sizeof(*hdr)) {
		dev_err(&s->mhi_dev->dev, "dropping a %zu-byte Sahara packet\n", s->rx_len);
		goto requeue;
	}

	switch (le32_to_cpu(hdr->cmd)) {
	case SAHARA_HELLO:
		sahara_hello(s);
		break;
	case SAHARA_READ_DATA:
		sahara_read_data(s);
		break;
	case SAHARA_END_OF_IMAGE:
		sahara_end_of_image(s);
		break;
	case SAHARA_DONE_RESP:
	case SAHARA_RESET_RESP:
		/* Nothing left to do: the card moves on by itself. */
		break;
	case SAHARA_MEM_DEBUG64:
		sahara_memory_debug(s);
		break;
	default:
		dev_err(&s->mhi_dev->dev, "unknown Sahara command %u\n", le32_to_cpu(hdr->cmd));
		break;
	}

requeue:
	mutex_unlock(&s->lock);
	ret = mhi_queue_buf(s->mhi_dev, DMA_FROM_DEVICE, s->rx, SAHARA_PKT_MAX, MHI_EOT);
	/* -ENODEV: the channel is being torn down. */
	if (ret && ret != -ENODEV)
		dev_err(&s->mhi_dev->dev, "cannot re-post the Sahara receive buffer: %d\n", ret);
}

static int qaic_sahara_probe(struct mhi_device *mhi_dev, const struct mhi_device_id *id)
{
	struct device *dev = &mhi_dev->dev;
	struct qaic_sahara *s;
	unsigned int i;
	int ret;

	s = devm_kzalloc(dev, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->rx = devm_kzalloc(dev, SAHARA_PKT_MAX, GFP_KERNEL);
	if (!s->rx)
		return -ENOMEM;
	/* A READ_DATA answer must be queued whole before the card consumes it. */
	for (i = 0; i < SAHARA_NR_TX; i++) {
		s->tx[i] = devm_kzalloc(dev, SAHARA_PKT_MAX, GFP_KERNEL);
		if (!s->tx[i])
			return -ENOMEM;
	}
	s->mhi_dev = mhi_dev;
	s->fam = &qaic_sahara_families[mhi_dev_to_qaic(mhi_dev)->cfg->family];
	s->image_id = SAHARA_NO_IMAGE;
	mutex_init(&s->lock);
	INIT_WORK(&s->work, sahara_work);
	INIT_WORK(&s->stream_work, sahara_stream_work);
	dev_set_drvdata(dev, s);

	/* On failure from here on, the MHI core resets the channels. */
	ret = mhi_prepare_for_transfer(mhi_dev);
	if (ret)
		return ret;
	return mhi_queue_buf(mhi_dev, DMA_FROM_DEVICE, s->rx, SAHARA_PKT_MAX, MHI_EOT);
}

static void qaic_sahara_remove(struct mhi_device *mhi_dev)
{
	struct qaic_sahara *s = dev_get_drvdata(&mhi_dev->dev);

	cancel_work_sync(&s->work);
	cancel_work_sync(&s->stream_work);
	vfree(s->dump);
	sahara_release_image(s);
	mhi_unprepare_from_transfer(mhi_dev);
}

static void qaic_sahara_ul_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_sahara *s = dev_get_drvdata(&mhi_dev->dev);

	/*
	 * Command buffers are reused: the card answers only after consuming
	 * them. A streamed piece the card took calls for the next one.
	 */
	if (result->buf_addr == s->tx[SAHARA_STREAM_TX] && !result->transaction_status &&
	    s->fam->streaming)
		schedule_work(&s->stream_work);
}

static void qaic_sahara_dl_xfer_cb(struct mhi_device *mhi_dev, struct mhi_result *result)
{
	struct qaic_sahara *s = dev_get_drvdata(&mhi_dev->dev);

	/* -ENOTCONN: the channel is being reset and the buffer is ours again. */
	if (result->transaction_status && result->transaction_status != -EOVERFLOW)
		return;
	/* A truncated packet is dropped, but the buffer must be posted again. */
	s->rx_overflow = result->transaction_status == -EOVERFLOW;
	s->rx_len = result->bytes_xferd;
	schedule_work(&s->work);
}

static const struct mhi_device_id qaic_sahara_match_table[] = {
	{ .chan = "QAIC_SAHARA" },
	{}
};

struct mhi_driver qaic_sahara_driver = {
	.id_table	= qaic_sahara_match_table,
	.probe		= qaic_sahara_probe,
	.remove		= qaic_sahara_remove,
	.ul_xfer_cb	= qaic_sahara_ul_xfer_cb,
	.dl_xfer_cb	= qaic_sahara_dl_xfer_cb,
	.driver		= {
		.name	= "qaic_sahara",
	},
};
