// SPDX-License-Identifier: GPL-2.0-only
/*
 * qaic: PCI probe and removal, MSI set-up and DRM accel registration.
 */

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "qaic.h"
#include "qaic_accel.h"

#define PCI_VENDOR_ID_QCOM		0x17cb
#define PCI_DEVICE_ID_QCOM_AIC100	0xa100
#define PCI_DEVICE_ID_QCOM_AIC080	0xa080

static int qaic_open(struct drm_device *drm, struct drm_file *file)
{
	struct qaic_device *qdev = to_qaic_device(drm);

	/* As upstream: nothing can be done with the card until it is ONLINE. */
	if (!READ_ONCE(qdev->online))
		return -ENODEV;
	return 0;
}

DEFINE_DRM_ACCEL_FOPS(qaic_accel_fops);

static const struct drm_driver qaic_drm_driver = {
	.driver_features	= DRIVER_GEM | DRIVER_COMPUTE_ACCEL,
	.name			= QAIC_NAME,
	.desc			= QAIC_DESC,
	.major			= 0,
	.minor			= 1,
	.fops			= &qaic_accel_fops,
	.open			= qaic_open,
};

static int qaic_init_pci(struct qaic_device *qdev)
{
	struct pci_dev *pdev = qdev->pdev;
	int bars, ret;

	bars = pci_select_bars(pdev, IORESOURCE_MEM) & 0x3f;
	if (bars != QAIC_BAR_MASK) {
		pci_err(pdev, "expected memory BARs 0, 2 and 4 (mask 0x%x), found mask 0x%x\n",
			QAIC_BAR_MASK, bars);
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

	qdev->bar_mhi = devm_ioremap_resource(&pdev->dev, &pdev->resource[0]);
	if (IS_ERR(qdev->bar_mhi))
		return PTR_ERR(qdev->bar_mhi);
	qdev->bar_dbc = devm_ioremap_resource(&pdev->dev, &pdev->resource[2]);
	if (IS_ERR(qdev->bar_dbc))
		return PTR_ERR(qdev->bar_dbc);
	return 0;
}

static int qaic_init_msi(struct qaic_device *qdev)
{
	struct pci_dev *pdev = qdev->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, QAIC_MSI_VECTORS, QAIC_MSI_VECTORS, PCI_IRQ_MSI);
	if (ret == -ENOSPC) {
		/* No multi-MSI (e.g. x86 without interrupt remapping): share vector 0. */
		ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
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

static int qaic_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct qaic_device *qdev;
	int ret;

	qdev = devm_drm_dev_alloc(&pdev->dev, &qaic_drm_driver, struct qaic_device, drm);
	if (IS_ERR(qdev))
		return PTR_ERR(qdev);
	qdev->pdev = pdev;
	pci_set_drvdata(pdev, qdev);

	ret = qaic_init_pci(qdev);
	if (ret)
		return ret;

	ret = qaic_init_msi(qdev);
	if (ret)
		return ret;
	ret = devm_add_action_or_reset(&pdev->dev, qaic_free_irq_vectors, pdev);
	if (ret)
		return ret;

	ret = drm_dev_register(&qdev->drm, 0);
	if (ret) {
		pci_err(pdev, "DRM registration failed: %d\n", ret);
		return ret;
	}

	pci_info(pdev, "%s card, %u MSI vector%s\n",
		 id->device == PCI_DEVICE_ID_QCOM_AIC080 ? "AIC080" : "AIC100",
		 qdev->nr_vectors, qdev->nr_vectors == 1 ? "" : "s");
	return 0;
}

static void qaic_pci_remove(struct pci_dev *pdev)
{
	struct qaic_device *qdev = pci_get_drvdata(pdev);

	drm_dev_unplug(&qdev->drm);
}

static const struct pci_device_id qaic_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_QCOM, PCI_DEVICE_ID_QCOM_AIC100), },
	{ PCI_DEVICE(PCI_VENDOR_ID_QCOM, PCI_DEVICE_ID_QCOM_AIC080), },
	{ }
};
MODULE_DEVICE_TABLE(pci, qaic_ids);

static struct pci_driver qaic_pci_driver = {
	.name		= QAIC_NAME,
	.id_table	= qaic_ids,
	.probe		= qaic_pci_probe,
	.remove		= qaic_pci_remove,
};
module_pci_driver(qaic_pci_driver);

MODULE_AUTHOR("aic100-virt developers");
MODULE_DESCRIPTION("Qualcomm Cloud AI 100 accelerator driver");
MODULE_LICENSE("GPL");
