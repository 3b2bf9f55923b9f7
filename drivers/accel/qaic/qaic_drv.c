// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: PCI probe and removal, MSI set-up, DRM accel registration, the
 * card's ONLINE/OFFLINE state and module set-up.
 *
 * Besides the accel device, a bound card has sysfs attributes of its own:
 * the RAS counters and the telemetry directory on the PCI device, the DBC
 * states on the accel device (qaic_sysfs.c) and a hwmon device while the
 * telemetry channel is up.
 */

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <linux/dma-mapping.h>
#include <linux/idr.h>
#include <linux/kobject.h>
#include <linux/mhi.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "qaic.h"
#include "qaic_accel.h"

#define PCI_VENDOR_ID_QCOM		0x17cb
#define PCI_DEVICE_ID_QCOM_AIC100	0xa100
#define PCI_DEVICE_ID_QCOM_AIC080	0xa080
#define PCI_DEVICE_ID_QCOM_AIC200	0xa110

/* MHI on BAR0, the DMA Bridge on BAR2; BAR4 is there but unused. */
static const struct qaic_family_config qaic_aic100_config = {
	.family = QAIC_FAMILY_AIC100,
	.name = "AIC100",
	.bar_mask = BIT(0) | BIT(2) | BIT(4),
	.mhi_bar = 0,
	.dbc_bar = 2,
	.irq_types = PCI_IRQ_MSI,
};

static const struct qaic_family_config qaic_aic080_config = {
	.family = QAIC_FAMILY_AIC100,
	.name = "AIC080",
	.bar_mask = BIT(0) | BIT(2) | BIT(4),
	.mhi_bar = 0,
	.dbc_bar = 2,
	.irq_types = PCI_IRQ_MSI,
};

/* MHI moves to BAR1; the card offers MSI-X as well as MSI. */
static const struct qaic_family_config qaic_aic200_config = {
	.family = QAIC_FAMILY_AIC200,
	.name = "AIC200",
	.bar_mask = BIT(0) | BIT(1) | BIT(2) | BIT(4),
	.mhi_bar = 1,
	.dbc_bar = 2,
	.irq_types = PCI_IRQ_MSI | PCI_IRQ_MSIX,
};

/* User handles, unique across all cards, starting at 0 as upstream's. */
static DEFINE_IDA(qaic_usrs);

static int qaic_open(struct drm_device *drm, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr;
	int handle;

	/* As upstream: nothing can be done with the card until it is ONLINE. */
	if (!READ_ONCE(qdev->online))
		return -ENODEV;

	usr = kzalloc(sizeof(*usr), GFP_KERNEL);
	if (!usr)
		return -ENOMEM;
	handle = ida_alloc(&qaic_usrs, GFP_KERNEL);
	if (handle < 0) {
		kfree(usr);
		return handle;
	}
	usr->qdev = qdev;
	usr->handle = handle;
	atomic_set(&usr->chunk_id, 0);
	INIT_LIST_HEAD(&usr->dbcs);
	file->driver_priv = usr;
	return 0;
}

/*
 * The last reference to the file is gone (its BO handles already are).
 * While the card is ONLINE it is told to release everything of the user.
 * Only once it has may the host free the user's DBC memory; otherwise the
 * DBCs go on without a user until the card is reset.
 */
static void qaic_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);
	struct qaic_user *usr = file->driver_priv;
	bool card_released = false;
	int idx;

	if (drm_dev_enter(drm, &idx)) {
		if (READ_ONCE(qdev->online))
			card_released = !qaic_manage_terminate(qdev, usr);
		drm_dev_exit(idx);
	} else {
		/* Unplugged: remove() has already released every DBC. */
		card_released = true;
	}
	qaic_dbc_release_user(qdev, usr, card_released);

	file->driver_priv = NULL;
	ida_free(&qaic_usrs, usr->handle);
	kfree(usr);
}

static const struct drm_ioctl_desc qaic_drm_ioctls[] = {
	DRM_IOCTL_DEF_DRV(QAIC_MANAGE, qaic_manage_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_CREATE_BO, qaic_create_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_MMAP_BO, qaic_mmap_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_ATTACH_SLICE_BO, qaic_attach_slice_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_EXECUTE_BO, qaic_execute_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_PARTIAL_EXECUTE_BO, qaic_partial_execute_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_WAIT_BO, qaic_wait_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_PERF_STATS_BO, qaic_perf_stats_bo_ioctl, 0),
	DRM_IOCTL_DEF_DRV(QAIC_DETACH_SLICE_BO, qaic_detach_slice_bo_ioctl, 0),
};

DEFINE_DRM_ACCEL_FOPS(qaic_accel_fops);

static const struct drm_driver qaic_drm_driver = {
	.driver_features	= DRIVER_GEM | DRIVER_COMPUTE_ACCEL,
	.name			= QAIC_NAME,
	.desc			= QAIC_DESC,
	.major			= 0,
	.minor			= 1,
	.fops			= &qaic_accel_fops,
	.open			= qaic_open,
	.postclose		= qaic_postclose,
	.ioctls			= qaic_drm_ioctls,
	.num_ioctls		= ARRAY_SIZE(qaic_drm_ioctls),
	.gem_prime_import	= qaic_gem_prime_import,
};

static void qaic_uevent(struct qaic_device *qdev, enum kobject_action action)
{
	kobject_uevent(&qdev->drm.accel->kdev->kobj, action);
}

/* The firmware answered the NNC handshake: user space may use the card. */
void qaic_dev_set_online(struct qaic_device *qdev)
{
	mutex_lock(&qdev->state_lock);
	WRITE_ONCE(qdev->online, true);
	qaic_uevent(qdev, KOBJ_ONLINE);
	mutex_unlock(&qdev->state_lock);
}

/*
 * The card was reset, crashed or is going away. With @always_notify the
 * OFFLINE uevent goes out even if the card never got ONLINE, as upstream
 * does on reset; otherwise only an actual change is announced. Anyone
 * waiting for the card is woken.
 */
void qaic_dev_set_offline(struct qaic_device *qdev, bool always_notify)
{
	bool was_online;

	mutex_lock(&qdev->state_lock);
	was_online = qdev->online;
	WRITE_ONCE(qdev->online, false);
	if (was_online || always_notify)
		qaic_uevent(qdev, KOBJ_OFFLINE);
	mutex_unlock(&qdev->state_lock);

	qaic_control_wake_all(qdev);
}

static int qaic_init_pci(struct qaic_device *qdev)
{
	struct pci_dev *pdev = qdev->pdev;
	int bars, ret;

	bars = pci_select_bars(pdev, IORESOURCE_MEM) & 0x3f;
	if (bars != qdev->cfg->bar_mask) {
		pci_err(pdev, "expected memory BAR mask 0x%x for an %s, found 0x%x\n",
			qdev->cfg->bar_mask, qdev->cfg->name, bars);
		return -EINVAL;
	}

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;

	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	pci_set_master(pdev);

	qdev->bar_mhi = devm_ioremap_resource(&pdev->dev, &pdev->resource[qdev->cfg->mhi_bar]);
	if (IS_ERR(qdev->bar_mhi))
		return PTR_ERR(qdev->bar_mhi);
	qdev->bar_dbc = devm_ioremap_resource(&pdev->dev, &pdev->resource[qdev->cfg->dbc_bar]);
	if (IS_ERR(qdev->bar_dbc))
		return PTR_ERR(qdev->bar_dbc);
	return 0;
}

static int qaic_init_msi(struct qaic_device *qdev)
{
	unsigned int types = qdev->cfg->irq_types;
	struct pci_dev *pdev = qdev->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, QAIC_MSI_VECTORS, QAIC_MSI_VECTORS, types);
	if (ret == -ENOSPC) {
		/* No multi-MSI (e.g. x86 without interrupt remapping): share vector 0. */
		ret = pci_alloc_irq_vectors(pdev, 1, 1, types);
		if (ret < 0)
			return ret;
		qdev->single_msi = true;
		pci_info(pdev, "%d MSI vectors unavailable, running on a single MSI\n",
			 QAIC_MSI_VECTORS);
	} else if (ret < 0) {
		return ret;
	}
	qdev->nr_vectors = ret;
	return 0;
}

static void qaic_free_irq_vectors(void *data)
{
	pci_free_irq_vectors(data);
}

static int qaic_init_state(struct qaic_device *qdev)
{
	int ret;

	ret = drmm_mutex_init(&qdev->drm, &qdev->state_lock);
	if (ret)
		return ret;
	ret = qaic_control_init(qdev);
	if (ret)
		return ret;
	ret = qaic_bootlog_init(qdev);
	if (ret)
		return ret;
	ret = qaic_telemetry_init(qdev);
	if (ret)
		return ret;
	return qaic_loopback_init(qdev);
}

static void qaic_debugfs_init(struct qaic_device *qdev)
{
	qaic_bootlog_debugfs_init(qdev);
	qaic_loopback_debugfs_init(qdev);
	qaic_data_debugfs_init(qdev);
}

static void qaic_debugfs_fini(struct qaic_device *qdev)
{
	qaic_data_debugfs_fini(qdev);
	qaic_loopback_debugfs_fini(qdev);
	qaic_bootlog_debugfs_fini(qdev);
}

static int qaic_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct qaic_device *qdev;
	int ret;

	qdev = devm_drm_dev_alloc(&pdev->dev, &qaic_drm_driver, struct qaic_device, drm);
	if (IS_ERR(qdev))
		return PTR_ERR(qdev);
	qdev->pdev = pdev;
	qdev->cfg = (const struct qaic_family_config *)id->driver_data;
	pci_set_drvdata(pdev, qdev);

	ret = qaic_init_state(qdev);
	if (ret)
		return ret;

	ret = qaic_init_pci(qdev);
	if (ret)
		return ret;
	ret = qaic_dbc_init(qdev);
	if (ret)
		return ret;

	ret = qaic_init_msi(qdev);
	if (ret)
		return ret;
	ret = devm_add_action_or_reset(&pdev->dev, qaic_free_irq_vectors, pdev);
	if (ret)
		return ret;
	/* Before MHI's, which share vector 0 with them on a single MSI. */
	ret = qaic_data_request_irqs(qdev);
	if (ret)
		return ret;

	ret = drm_dev_register(&qdev->drm, 0);
	if (ret) {
		pci_err(pdev, "DRM registration failed: %d\n", ret);
		return ret;
	}
	ret = qaic_sysfs_init(qdev);
	if (ret) {
		pci_err(pdev, "cannot create the DBC state attributes: %d\n", ret);
		drm_dev_unregister(&qdev->drm);
		return ret;
	}
	qaic_debugfs_init(qdev);

	pci_info(pdev, "%s card, %u %s vector%s\n", qdev->cfg->name, qdev->nr_vectors,
		 pdev->msix_enabled ? "MSI-X" : "MSI", qdev->nr_vectors == 1 ? "" : "s");

	/* From here on the card boots asynchronously, up to ONLINE. */
	ret = qaic_mhi_init(qdev);
	if (ret)
		goto err_unregister;
	return 0;

err_unregister:
	qaic_debugfs_fini(qdev);
	qaic_sysfs_fini(qdev);
	drm_dev_unregister(&qdev->drm);
	return ret;
}

static void qaic_pci_remove(struct pci_dev *pdev)
{
	struct qaic_device *qdev = pci_get_drvdata(pdev);

	qaic_dev_set_offline(qdev, true);
	/* Before MHI frees vector 0: see qaic_data_disable_irqs(). */
	qaic_data_disable_irqs(qdev);
	/* Leave the card in MHI RESET unless it is gone from the bus. */
	qaic_mhi_fini(qdev, pci_device_is_present(pdev));
	/* Users may keep their fds; the DBCs' memory and BO mappings go now. */
	qaic_dbc_release_all(qdev);
	qaic_data_fini(qdev);
	qaic_debugfs_fini(qdev);
	/* After the last DBC state change. */
	qaic_sysfs_fini(qdev);
	drm_dev_unplug(&qdev->drm);
}

static void qaic_pci_shutdown(struct pci_dev *pdev)
{
	struct qaic_device *qdev = pci_get_drvdata(pdev);

	/* Stop the card's DMA into host memory before reboot or kexec. */
	qaic_dev_set_offline(qdev, true);
	qaic_mhi_power_down(qdev, true);
	qaic_dbc_release_all(qdev);
	qaic_data_fini(qdev);
}

static pci_ers_result_t qaic_pci_error_detected(struct pci_dev *pdev,
						pci_channel_state_t state)
{
	return PCI_ERS_RESULT_NEED_RESET;
}

static void qaic_pci_reset_prepare(struct pci_dev *pdev)
{
	struct qaic_device *qdev = pci_get_drvdata(pdev);

	qaic_dev_set_offline(qdev, true);
	qaic_mhi_power_down(qdev, true);
	/* The card forgets its DBCs in the reset; so does the host. */
	qaic_dbc_release_all(qdev);
}

static void qaic_pci_reset_done(struct pci_dev *pdev)
{
	struct qaic_device *qdev = pci_get_drvdata(pdev);

	/* The card boots again asynchronously and comes back ONLINE. */
	qaic_mhi_power_up(qdev);
}

static const struct pci_device_id qaic_ids[] = {
	{ PCI_DEVICE_DATA(QCOM, AIC100, &qaic_aic100_config) },
	{ PCI_DEVICE_DATA(QCOM, AIC080, &qaic_aic080_config) },
	{ PCI_DEVICE_DATA(QCOM, AIC200, &qaic_aic200_config) },
	{ }
};
MODULE_DEVICE_TABLE(pci, qaic_ids);

/* On the PCI device while bound: created after probe, removed before remove. */
static const struct attribute_group *qaic_pci_groups[] = {
	&qaic_ras_group,
	&qaic_telemetry_group,
	NULL
};

static const struct pci_error_handlers qaic_pci_err_handlers = {
	.error_detected	= qaic_pci_error_detected,
	.reset_prepare	= qaic_pci_reset_prepare,
	.reset_done	= qaic_pci_reset_done,
};

static struct pci_driver qaic_pci_driver = {
	.name		= QAIC_NAME,
	.id_table	= qaic_ids,
	.probe		= qaic_pci_probe,
	.remove		= qaic_pci_remove,
	.shutdown	= qaic_pci_shutdown,
	.err_handler	= &qaic_pci_err_handlers,
	.dev_groups	= qaic_pci_groups,
};

/* Clients of the card's MHI channels, registered before any card probes. */
static struct mhi_driver * const qaic_mhi_drivers[] = {
	&qaic_sahara_driver,
	&qaic_bootlog_driver,
	&qaic_timesync_driver,
	&qaic_timesync_periodic_driver,
	&qaic_control_driver,
	&qaic_loopback_driver,
	&qaic_ssr_driver,
	&qaic_ras_driver,
	&qaic_telemetry_driver,
};

static void qaic_unregister_mhi_drivers(unsigned int count)
{
	while (count--)
		mhi_driver_unregister(qaic_mhi_drivers[count]);
}

static int __init qaic_init(void)
{
	unsigned int i;
	int ret;

	qaic_data_debugfs_root_init();
	ret = qaic_sysfs_register();
	if (ret) {
		pr_err("qaic: cannot register the device class: %d\n", ret);
		goto err_debugfs;
	}
	for (i = 0; i < ARRAY_SIZE(qaic_mhi_drivers); i++) {
		ret = mhi_driver_register(qaic_mhi_drivers[i]);
		if (ret) {
			pr_err("qaic: cannot register MHI driver %s: %d\n",
			       qaic_mhi_drivers[i]->driver.name, ret);
			goto err_unregister;
		}
	}

	ret = pci_register_driver(&qaic_pci_driver);
	if (ret) {
		pr_err("qaic: cannot register the PCI driver: %d\n", ret);
		goto err_unregister;
	}
	return 0;

err_unregister:
	qaic_unregister_mhi_drivers(i);
	qaic_sysfs_unregister();
err_debugfs:
	qaic_data_debugfs_root_fini();
	return ret;
}

static void __exit qaic_exit(void)
{
	/* Removing the cards powers MHI down, which detaches every client. */
	pci_unregister_driver(&qaic_pci_driver);
	qaic_unregister_mhi_drivers(ARRAY_SIZE(qaic_mhi_drivers));
	qaic_sysfs_unregister();
	qaic_data_debugfs_root_fini();
}

module_init(qaic_init);
module_exit(qaic_exit);

MODULE_AUTHOR("aic100-virt developers");
MODULE_DESCRIPTION("Qualcomm Cloud AI 100 accelerator driver");
MODULE_LICENSE("GPL");
/*
 * The dma-buf namespace, spelt as MODULE_IMPORT_NS() expands it on 6.12
 * (a bare name) and on 6.13 and later (a string) alike.
 */
MODULE_INFO(import_ns, "DMA_BUF");
