// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: the debugfs files of the DBCs: dbcNNN/fifo_size, the elements of
 * its FIFOs, and dbcNNN/queued, the requests the card has not taken yet.
 */

#include <linux/debugfs.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/sprintf.h>

#include "qaic.h"
#include "qaic_data.h"

#define QAIC_DBC_NAME_LEN	8	/* "dbcNNN" */

static struct dentry *qaic_debugfs_root;

static int qaic_dbc_fifo_size_show(struct seq_file *s, void *unused)
{
	struct qaic_dbc *dbc = s->private;
	u32 nelem = 0;

	mutex_lock(&dbc->qdev->dbc_lock);
	if (dbc->in_use)
		nelem = dbc->fifo.nelem;
	mutex_unlock(&dbc->qdev->dbc_lock);
	seq_printf(s, "%u\n", nelem);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qaic_dbc_fifo_size);

/* Requests the card has not consumed yet. */
static int qaic_dbc_queued_show(struct seq_file *s, void *unused)
{
	struct qaic_dbc *dbc = s->private;
	u32 head, tail, nelem, queued = 0;

	mutex_lock(&dbc->qdev->dbc_lock);
	if (dbc->in_use) {
		nelem = dbc->fifo.nelem;
		head = readl(dbc->regs + QAIC_REQHP);
		tail = readl(dbc->regs + QAIC_REQTP);
		if (head < nelem && tail < nelem)
			queued = head <= tail ? tail - head : nelem - head + tail;
	}
	mutex_unlock(&dbc->qdev->dbc_lock);
	seq_printf(s, "%u\n", queued);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(qaic_dbc_queued);

void qaic_data_debugfs_root_init(void)
{
	qaic_debugfs_root = debugfs_create_dir(QAIC_NAME, NULL);
}

void qaic_data_debugfs_root_fini(void)
{
	debugfs_remove(qaic_debugfs_root);
	qaic_debugfs_root = NULL;
}

static struct dentry *qaic_dbc_debugfs_dir(struct qaic_dbc *dbc, struct dentry *parent)
{
	char name[QAIC_DBC_NAME_LEN];
	struct dentry *dir;

	snprintf(name, sizeof(name), "dbc%03u", dbc->id);
	dir = debugfs_create_dir(name, parent);
	debugfs_create_file("fifo_size", 0400, dir, dbc, &qaic_dbc_fifo_size_fops);
	debugfs_create_file("queued", 0400, dir, dbc, &qaic_dbc_queued_fops);
	return dir;
}

/*
 * dbcNNN/{fifo_size,queued} under the accel device's directory (where
 * upstream has them) and under qaic/<bdf>/ (where the open UMD looks).
 */
void qaic_data_debugfs_init(struct qaic_device *qdev)
{
	unsigned int i;

	qdev->dbc_debugfs = debugfs_create_dir(pci_name(qdev->pdev), qaic_debugfs_root);
	for (i = 0; i < QAIC_NUM_DBC; i++) {
		qdev->dbc[i].dentry = qaic_dbc_debugfs_dir(&qdev->dbc[i], qdev->drm.debugfs_root);
		qaic_dbc_debugfs_dir(&qdev->dbc[i], qdev->dbc_debugfs);
	}
}

/* The files read the card's registers: they go before its BAR does. */
void qaic_data_debugfs_fini(struct qaic_device *qdev)
{
	unsigned int i;

	for (i = 0; i < QAIC_NUM_DBC; i++) {
		debugfs_remove(qdev->dbc[i].dentry);
		qdev->dbc[i].dentry = NULL;
	}
	debugfs_remove(qdev->dbc_debugfs);
	qdev->dbc_debugfs = NULL;
}
