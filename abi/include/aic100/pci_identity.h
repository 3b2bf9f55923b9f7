/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The card as PCI enumerates it: identity, BARs and capabilities, per
 * family. Both front ends build their config space from this one place:
 * the QEMU glue (C) hands these values to QEMU's pci_register_bar,
 * msi_init, msix_init and pcie_* calls; the vfio-user server's
 * PciConfigSpace (C++) writes the bytes those calls would. Plain C, so
 * the glue includes it without C++.
 */
#ifndef AIC100_PCI_IDENTITY_H
#define AIC100_PCI_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#define AIC100_PCI_VENDOR_ID 0x17cb
#define AIC100_PCI_CLASS_ACCEL 0x1200 /* processing accelerator */
#define AIC100_PCI_DEVICE_ID 0xa100
#define AIC200_PCI_DEVICE_ID 0xa110

/* Capabilities: MSI (32 vectors, 64-bit, per-vector mask), PCI Express. */
#define AIC100_PCI_MSI_OFFSET 0x50
#define AIC100_PCI_MSI_VECTORS 32
#define AIC100_PCI_PCIE_OFFSET 0x70
/* Gen4 x8, as the card advertises. */
#define AIC100_PCI_LINK_WIDTH 8
#define AIC100_PCI_LINK_GTS 16
/* The AIC200 adds MSI-X: the table at BAR0 + 0, the PBA after it. */
#define AIC200_PCI_MSIX_OFFSET 0xb0
#define AIC200_PCI_MSIX_VECTORS 32
#define AIC200_PCI_MSIX_PBA_OFFSET 0x800

#define AIC100_PCI_MHI_BAR_SIZE 0x1000u          /* MHI, BHI, QTIMER */
#define AIC100_PCI_DMA_BRIDGE_BAR_SIZE 0x200000u /* the DBCs */
#define AIC100_PCI_BAR4_DEFAULT_SIZE 0x10000u    /* the bar4-size property */
#define AIC200_PCI_MSIX_BAR_SIZE 0x1000u
#define AIC100_PCI_BARS 6

enum aic100_pci_bar_role {
	AIC100_PCI_BAR_NONE, /* no BAR, or the upper half of a 64-bit one */
	AIC100_PCI_BAR_MHI,
	AIC100_PCI_BAR_DMA_BRIDGE,
	AIC100_PCI_BAR_BAR4, /* no function, or the test mailbox */
	AIC100_PCI_BAR_MSIX, /* AIC200: the MSI-X table and PBA */
};

struct aic100_pci_bar {
	enum aic100_pci_bar_role role;
	uint64_t size;
	bool is64;
};

/*
 * The family's BARs, all memory, none prefetchable. AIC100: BAR0 MHI, BAR2
 * DMA Bridge, BAR4, each 64-bit. AIC200: BAR0 MSI-X and BAR1 MHI, 32-bit;
 * BAR2 and BAR4 64-bit. bar4_size is the bar4-size property (a power of
 * two the core checks).
 */
static inline void aic100_pci_bars(bool aic200, uint64_t bar4_size, struct aic100_pci_bar bars[AIC100_PCI_BARS])
{
	int i;

	for (i = 0; i < AIC100_PCI_BARS; i++) {
		bars[i].role = AIC100_PCI_BAR_NONE;
		bars[i].size = 0;
		bars[i].is64 = false;
	}
	if (aic200) {
		bars[0].role = AIC100_PCI_BAR_MSIX;
		bars[0].size = AIC200_PCI_MSIX_BAR_SIZE;
		bars[1].role = AIC100_PCI_BAR_MHI;
		bars[1].size = AIC100_PCI_MHI_BAR_SIZE;
	} else {
		bars[0].role = AIC100_PCI_BAR_MHI;
		bars[0].size = AIC100_PCI_MHI_BAR_SIZE;
		bars[0].is64 = true;
	}
	bars[2].role = AIC100_PCI_BAR_DMA_BRIDGE;
	bars[2].size = AIC100_PCI_DMA_BRIDGE_BAR_SIZE;
	bars[2].is64 = true;
	bars[4].role = AIC100_PCI_BAR_BAR4;
	bars[4].size = bar4_size;
	bars[4].is64 = true;
}

#endif /* AIC100_PCI_IDENTITY_H */
