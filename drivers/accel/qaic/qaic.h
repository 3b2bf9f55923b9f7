/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * qaic: driver for the Qualcomm Cloud AI 100 (AIC100/AIC080) accelerator.
 * Definitions shared by the driver's files.
 */
#ifndef QAIC_H_
#define QAIC_H_

#include <drm/drm_device.h>
#include <linux/pci.h>
#include <linux/types.h>

#define QAIC_NAME		"qaic"
#define QAIC_DESC		"Qualcomm Cloud AI Accelerators"

/* BAR0 (MHI), BAR2 (DMA Bridge) and BAR4; SR-IOV resources masked off. */
#define QAIC_BAR_MASK		0x15U	/* BIT(0) | BIT(2) | BIT(4) */
#define QAIC_MSI_VECTORS	32

struct qaic_device {
	struct drm_device	drm;
	struct pci_dev		*pdev;
	void __iomem		*bar_mhi;
	void __iomem		*bar_dbc;
	/* Only one MSI was granted: every interrupt arrives on vector 0. */
	bool			single_msi;
	unsigned int		nr_vectors;
	/* Set once the firmware answered the NNC status exchange. */
	bool			online;
};

static inline struct qaic_device *to_qaic_device(struct drm_device *drm)
{
	return container_of(drm, struct qaic_device, drm);
}

#endif /* QAIC_H_ */
