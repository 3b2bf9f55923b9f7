// SPDX-License-Identifier: GPL-2.0-or-later
// The card's PCI configuration space as the vfio-user server presents it:
// the same identity, BARs and capabilities as -device aic100 / aic200 in
// our QEMU (glue/aic100.c), with the values QEMU's msi_init, msix_init,
// pcie_endpoint_cap_init and pcie_cap_fill_link_ep_usp give them for the
// glue's arguments, and QEMU's write masks. QEMU's vfio-user client reads
// this space, emulates much of it (BAR addresses, MSI, MSI-X) and forwards
// the guest's writes, so the server keeps the bytes a guest would see.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "aic100/pci_identity.h"

namespace aic100::vfio_user {

// The card's identity, as both front ends take it from the ABI
// (aic100/pci_identity.h).
namespace pci {
inline constexpr uint16_t kVendorId = AIC100_PCI_VENDOR_ID;
inline constexpr uint16_t kClassAccel = AIC100_PCI_CLASS_ACCEL;
inline constexpr uint16_t kAic100DeviceId = AIC100_PCI_DEVICE_ID;
inline constexpr uint16_t kAic200DeviceId = AIC200_PCI_DEVICE_ID;
inline constexpr uint8_t kMsiOffset = AIC100_PCI_MSI_OFFSET;
inline constexpr unsigned kMsiVectors = AIC100_PCI_MSI_VECTORS;
inline constexpr uint8_t kPcieOffset = AIC100_PCI_PCIE_OFFSET;
inline constexpr uint8_t kMsixOffset = AIC200_PCI_MSIX_OFFSET;
inline constexpr unsigned kMsixVectors = AIC200_PCI_MSIX_VECTORS;
inline constexpr uint32_t kMsixPbaOffset = AIC200_PCI_MSIX_PBA_OFFSET;
inline constexpr unsigned kLinkWidth = AIC100_PCI_LINK_WIDTH;
static_assert(AIC100_PCI_LINK_GTS == 16, "LNKCAP's speed code below is 16 GT/s's");
inline constexpr unsigned kLinkSpeed = 4;  // 16 GT/s (LNKCAP's speed code)
inline constexpr unsigned kBars = AIC100_PCI_BARS;
inline constexpr uint64_t kConfigSize = 4096;  // PCI Express: extended space

// Standard config-space offsets and bits used here (PCI Local Bus and PCI
// Express specifications).
inline constexpr unsigned kCommand = 0x04, kStatus = 0x06, kBar0 = 0x10, kCapPtr = 0x34;
inline constexpr uint16_t kStatusCapList = 0x10;
inline constexpr uint8_t kCapIdMsi = 0x05, kCapIdPcie = 0x10, kCapIdMsix = 0x11;
inline constexpr uint16_t kMsiFlagsEnable = 0x0001;
inline constexpr uint16_t kMsixFlagsEnable = 0x8000;
}  // namespace pci

struct PciBar {
	uint64_t size = 0;  // 0: no BAR at this index (or the upper half of a 64-bit one)
	bool is64 = false;
};

struct PciLayout {
	bool aic200 = false;
	uint16_t device_id = pci::kAic100DeviceId;
	std::array<PciBar, pci::kBars> bars{};
};

// The family's BARs from the ABI's table (aic100_pci_bars). bar4_size must
// be a power of two (the core checks it).
PciLayout pci_layout(bool aic200, uint16_t device_id, uint64_t bar4_size);

class PciConfigSpace {
public:
	explicit PciConfigSpace(const PciLayout &layout);

	// Reads and writes of any length inside the 4 KiB; a write changes
	// only the bits QEMU lets a guest change (write-1-to-clear status bits
	// included).
	void read(uint64_t offset, std::span<uint8_t> out) const;
	void write(uint64_t offset, std::span<const uint8_t> in);
	// Power-on values, as a PCI reset leaves them.
	void reset();

	uint16_t command() const { return word(pci::kCommand); }
	bool msi_enabled() const;
	unsigned msi_vectors_enabled() const;  // from Multiple Message Enable
	bool msix_enabled() const;
	const PciLayout &layout() const { return layout_; }

	uint16_t word(unsigned offset) const;
	uint32_t dword(unsigned offset) const;

private:
	void init_header();
	void init_bars();
	uint8_t add_cap(uint8_t id, uint8_t offset, uint8_t size);
	void init_msi();
	void init_msix();
	void init_pcie();
	void set16(std::array<uint8_t, pci::kConfigSize> &a, unsigned off, uint16_t v);
	void set32(std::array<uint8_t, pci::kConfigSize> &a, unsigned off, uint32_t v);

	PciLayout layout_;
	std::array<uint8_t, pci::kConfigSize> cfg_{};
	std::array<uint8_t, pci::kConfigSize> wmask_{};
	std::array<uint8_t, pci::kConfigSize> w1cmask_{};
};

}  // namespace aic100::vfio_user
