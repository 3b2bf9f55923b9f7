// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/pci_config.h"

#include <bit>
#include <cstring>

namespace aic100::vfio_user {
namespace {

// Field offsets inside the capabilities (PCI Local Bus 6.8, PCI Express 7.5.3).
constexpr unsigned kMsiFlags = 2, kMsiAddrLo = 4, kMsiAddrHi = 8, kMsiData = 12, kMsiMask = 16, kMsiSize = 0x18;
constexpr uint16_t kMsi64Bit = 0x0080, kMsiPerVectorMask = 0x0100, kMsiQsize = 0x0070;
constexpr unsigned kMsixFlags = 2, kMsixTable = 4, kMsixPba = 8, kMsixSize = 12;
constexpr unsigned kExpFlags = 2, kExpDevCap = 4, kExpLnkCap = 0x0c, kExpLnkSta = 0x12, kExpDevCap2 = 0x24,
		   kExpDevCtl2 = 0x28, kExpLnkCap2 = 0x2c, kExpLnkCtl2 = 0x30, kExpSize = 0x3c;
constexpr uint16_t kExpVersion2 = 2;  // type 0: endpoint (behind a root port)
constexpr uint32_t kDevCapRber = 0x8000, kDevCapExtTag = 0x20;  // QEMU 9.1+: x-pcie-ext-tag on
constexpr uint32_t kDevCap2Eff = 0x100000, kDevCap2Eetlpp = 0x200000;
constexpr uint16_t kDevCtl2Eetlppb = 0x8000;
constexpr uint32_t kLnkCapAspmL0s = 0x400;
// QEMU's masks for the header (pci_init_wmask, pci_init_w1cmask).
constexpr uint16_t kCommandWmask = 0x0547;  // I/O, memory, master, parity, SERR, INTx disable
constexpr uint16_t kStatusW1c = 0xf900;
constexpr unsigned kCacheLine = 0x0c, kSubsysVendor = 0x2c, kSubsysId = 0x2e, kIntLine = 0x3c;

}  // namespace

PciLayout pci_layout(bool aic200, uint16_t device_id, uint64_t bar4_size)
{
	PciLayout l;
	l.aic200 = aic200;
	l.device_id = device_id;
	aic100_pci_bar bars[AIC100_PCI_BARS];
	aic100_pci_bars(aic200, bar4_size, bars);
	for (unsigned i = 0; i < pci::kBars; i++)
		l.bars[i] = {bars[i].size, bars[i].is64};
	return l;
}

PciConfigSpace::PciConfigSpace(const PciLayout &layout) : layout_(layout)
{
	reset();
}

void PciConfigSpace::set16(std::array<uint8_t, pci::kConfigSize> &a, unsigned off, uint16_t v)
{
	std::memcpy(a.data() + off, &v, sizeof(v));
}

void PciConfigSpace::set32(std::array<uint8_t, pci::kConfigSize> &a, unsigned off, uint32_t v)
{
	std::memcpy(a.data() + off, &v, sizeof(v));
}

uint16_t PciConfigSpace::word(unsigned offset) const
{
	uint16_t v;
	std::memcpy(&v, cfg_.data() + offset, sizeof(v));
	return v;
}

uint32_t PciConfigSpace::dword(unsigned offset) const
{
	uint32_t v;
	std::memcpy(&v, cfg_.data() + offset, sizeof(v));
	return v;
}

// The order is the glue's: its BARs (with MSI-X on the AIC200), then MSI,
// then PCI Express; each capability goes to the head of the list, as
// QEMU's pci_add_capability puts it.
void PciConfigSpace::reset()
{
	cfg_.fill(0);
	wmask_.fill(0);
	w1cmask_.fill(0);
	init_header();
	init_bars();
	if (layout_.aic200)
		init_msix();
	init_msi();
	init_pcie();
}

void PciConfigSpace::init_header()
{
	set16(cfg_, 0x00, pci::kVendorId);
	set16(cfg_, 0x02, layout_.device_id);
	set16(cfg_, 0x0a, pci::kClassAccel);  // revision 0, prog-if 0 before it
	set16(cfg_, kSubsysVendor, pci::kVendorId);
	set16(cfg_, kSubsysId, layout_.device_id);
	// No INTx pin: MSI (and MSI-X) only.
	set16(wmask_, pci::kCommand, kCommandWmask);
	set16(w1cmask_, pci::kStatus, kStatusW1c);
	wmask_[kCacheLine] = 0xff;
	wmask_[kIntLine] = 0xff;
}

// Memory BARs, not prefetchable; the address bits above the size are
// writable (a 64-bit BAR's upper dword entirely), so sizing reads back
// ~(size - 1) with the type bits.
void PciConfigSpace::init_bars()
{
	for (unsigned i = 0; i < pci::kBars; i++) {
		const PciBar &b = layout_.bars[i];
		if (!b.size)
			continue;
		const unsigned off = pci::kBar0 + 4 * i;
		const uint64_t mask = ~(b.size - 1);
		set32(cfg_, off, b.is64 ? 0x4 : 0x0);
		set32(wmask_, off, static_cast<uint32_t>(mask) & ~0xfu);
		if (b.is64 && i + 1 < pci::kBars)
			set32(wmask_, off + 4, static_cast<uint32_t>(mask >> 32));
	}
}

uint8_t PciConfigSpace::add_cap(uint8_t id, uint8_t offset, uint8_t size)
{
	(void)size;
	cfg_[offset] = id;
	cfg_[offset + 1] = cfg_[pci::kCapPtr];
	cfg_[pci::kCapPtr] = offset;
	set16(cfg_, pci::kStatus, word(pci::kStatus) | pci::kStatusCapList);
	return offset;
}

// msi_init(offset 0x50, 32 vectors, 64-bit, per-vector mask).
void PciConfigSpace::init_msi()
{
	const unsigned at = add_cap(pci::kCapIdMsi, pci::kMsiOffset, kMsiSize);
	const uint16_t mmc = static_cast<uint16_t>(std::countr_zero(pci::kMsiVectors) << 1);
	set16(cfg_, at + kMsiFlags, kMsi64Bit | kMsiPerVectorMask | mmc);
	set16(wmask_, at + kMsiFlags, kMsiQsize | pci::kMsiFlagsEnable);
	set32(wmask_, at + kMsiAddrLo, 0xfffffffc);
	set32(wmask_, at + kMsiAddrHi, 0xffffffff);
	set16(wmask_, at + kMsiData, 0xffff);
	set32(wmask_, at + kMsiMask, 0xffffffff >> (32 - pci::kMsiVectors));
}

// msix_init(32 vectors, table at BAR0 + 0, PBA at BAR0 + 0x800, cap 0xb0).
void PciConfigSpace::init_msix()
{
	const unsigned at = add_cap(pci::kCapIdMsix, pci::kMsixOffset, kMsixSize);
	set16(cfg_, at + kMsixFlags, pci::kMsixVectors - 1);
	set32(cfg_, at + kMsixTable, 0);
	set32(cfg_, at + kMsixPba, pci::kMsixPbaOffset);
	wmask_[at + kMsixFlags + 1] = 0xc0;  // enable, function mask
}

// pcie_endpoint_cap_init(0x70): a version 2 endpoint; then
// pcie_cap_fill_link_ep_usp(x8, 16 GT/s). No FLR.
void PciConfigSpace::init_pcie()
{
	const unsigned at = add_cap(pci::kCapIdPcie, pci::kPcieOffset, kExpSize);
	set16(cfg_, at + kExpFlags, kExpVersion2);
	set32(cfg_, at + kExpDevCap, kDevCapRber | kDevCapExtTag);
	set32(cfg_, at + kExpLnkCap, kLnkCapAspmL0s | (pci::kLinkWidth << 4) | pci::kLinkSpeed);
	set16(cfg_, at + kExpLnkSta, static_cast<uint16_t>((pci::kLinkWidth << 4) | pci::kLinkSpeed));
	set32(cfg_, at + kExpDevCap2, kDevCap2Eff | kDevCap2Eetlpp);
	set16(wmask_, at + kExpDevCtl2, kDevCtl2Eetlppb);
	// Speeds 2.5, 5, 8 and 16 GT/s supported; target speed the highest.
	set32(cfg_, at + kExpLnkCap2, 0x1e);
	set16(cfg_, at + kExpLnkCtl2, pci::kLinkSpeed);
}

void PciConfigSpace::read(uint64_t offset, std::span<uint8_t> out) const
{
	for (size_t i = 0; i < out.size(); i++)
		out[i] = offset + i < cfg_.size() ? cfg_[offset + i] : 0;
}

void PciConfigSpace::write(uint64_t offset, std::span<const uint8_t> in)
{
	for (size_t i = 0; i < in.size() && offset + i < cfg_.size(); i++) {
		const size_t at = offset + i;
		const uint8_t v = in[i];
		cfg_[at] = static_cast<uint8_t>((cfg_[at] & ~wmask_[at]) | (v & wmask_[at]));
		cfg_[at] = static_cast<uint8_t>(cfg_[at] & ~(v & w1cmask_[at]));
	}
}

bool PciConfigSpace::msi_enabled() const
{
	return word(pci::kMsiOffset + kMsiFlags) & pci::kMsiFlagsEnable;
}

unsigned PciConfigSpace::msi_vectors_enabled() const
{
	if (!msi_enabled())
		return 0;
	return 1u << ((word(pci::kMsiOffset + kMsiFlags) & kMsiQsize) >> 4);
}

bool PciConfigSpace::msix_enabled() const
{
	return layout_.aic200 && (word(pci::kMsixOffset + kMsixFlags) & pci::kMsixFlagsEnable);
}

}  // namespace aic100::vfio_user
