// SPDX-License-Identifier: GPL-2.0-or-later
// The server's config space against the QEMU glue's: both take the card's
// identity from the ABI (the glue's source is read to check that it keeps
// no copy of its own), and each capability holds what QEMU's msi_init,
// msix_init, pcie_endpoint_cap_init and pcie_cap_fill_link_ep_usp make of
// the glue's arguments.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "aic100/vfio_user/pci_config.h"

namespace aic100::vfio_user {
namespace {

std::string glue_source()
{
	std::ifstream f(AIC100_GLUE_SOURCE);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

// Both front ends take the card's identity from aic100/pci_identity.h; the
// glue must not hold a second copy of it, and must pass QEMU the arguments
// whose results the model writes.
TEST(VfioUserPciConfig, TheGlueTakesTheIdentityFromTheAbi)
{
	const std::string src = glue_source();
	ASSERT_FALSE(src.empty()) << AIC100_GLUE_SOURCE;
	EXPECT_NE(src.find("#include \"aic100/pci_identity.h\""), std::string::npos);
	EXPECT_NE(src.find("aic100_pci_bars(aic200, s->bar4_size, bars);"), std::string::npos);
	std::smatch m;
	EXPECT_FALSE(std::regex_search(src, m, std::regex("0x(17cb|a100|a110|1200)\\b|#define \\w*(MSI|PCIE)\\w*")))
		<< "the glue has its own copy of " << m.str();
	EXPECT_NE(src.find("msi_init(pdev, AIC100_PCI_MSI_OFFSET, AIC100_PCI_MSI_VECTORS, true,\n                 true, errp)"),
		  std::string::npos);
	EXPECT_NE(src.find("msix_init(pdev, AIC200_PCI_MSIX_VECTORS, &s->msix_bar, 0, 0,\n                  &s->msix_bar, 0, "
			   "AIC200_PCI_MSIX_PBA_OFFSET,\n                  AIC200_PCI_MSIX_OFFSET, errp)"),
		  std::string::npos);
	EXPECT_NE(src.find("pcie_endpoint_cap_init(pdev, AIC100_PCI_PCIE_OFFSET)"), std::string::npos);
	EXPECT_NE(src.find("QEMU_PCI_EXP_LNK_X8,\n                              QEMU_PCI_EXP_LNK_16GT"), std::string::npos);
	EXPECT_NE(src.find("pdev->config[PCI_INTERRUPT_PIN] = 0;"), std::string::npos);
}

TEST(VfioUserPciConfig, LayoutIsTheAbisBarTable)
{
	for (const bool aic200 : {false, true}) {
		aic100_pci_bar bars[AIC100_PCI_BARS];
		aic100_pci_bars(aic200, 1 << 20, bars);
		const PciLayout l = pci_layout(aic200, aic200 ? pci::kAic200DeviceId : pci::kAic100DeviceId, 1 << 20);
		for (unsigned i = 0; i < pci::kBars; i++) {
			EXPECT_EQ(l.bars[i].size, bars[i].size) << "BAR" << i;
			EXPECT_EQ(l.bars[i].is64, bars[i].is64) << "BAR" << i;
			EXPECT_EQ(bars[i].size == 0, bars[i].role == AIC100_PCI_BAR_NONE) << "BAR" << i;
		}
	}
}

class Aic100Config : public ::testing::Test {
protected:
	PciConfigSpace cfg{pci_layout(false, 0xa100, 64 * 1024)};
	uint32_t rd(unsigned off) const { return cfg.dword(off); }
	void wr(unsigned off, uint32_t v)
	{
		uint8_t b[4];
		std::memcpy(b, &v, 4);
		cfg.write(off, b);
	}
};

TEST_F(Aic100Config, IdentityAsTheGlueSetsIt)
{
	EXPECT_EQ(rd(0x00), 0xa10017cbu);
	EXPECT_EQ(rd(0x04), 0x00100000u);  // command 0, status: capability list
	EXPECT_EQ(rd(0x08), 0x12000000u);  // revision 0, class 12:00:00
	EXPECT_EQ(rd(0x0c), 0u);           // header type 0, single function
	EXPECT_EQ(rd(0x2c), 0xa10017cbu);  // subsystem = vendor, device
	EXPECT_EQ(rd(0x3c) >> 8 & 0xff, 0u);  // no INTx pin
}

TEST_F(Aic100Config, BarsAre64BitPowersOfTwoWithSizeZeroAbove)
{
	const uint64_t sizes[] = {4096, 2u << 20, 64 * 1024};
	for (unsigned i = 0; i < 3; i++) {
		const unsigned off = 0x10 + 8 * i;
		EXPECT_EQ(rd(off), 0x4u) << "BAR" << 2 * i;
		wr(off, 0xffffffff);
		wr(off + 4, 0xffffffff);
		EXPECT_EQ(rd(off), static_cast<uint32_t>(~(sizes[i] - 1)) | 0x4u);
		EXPECT_EQ(rd(off + 4), 0xffffffffu);
	}
	EXPECT_EQ(rd(0x30), 0u);  // no ROM
	wr(0x30, 0xffffffff);
	EXPECT_EQ(rd(0x30), 0u);
}

// Each capability goes to the list's head: PCI Express (added last), MSI.
TEST_F(Aic100Config, CapabilityListIsPcieThenMsi)
{
	EXPECT_EQ(rd(0x34) & 0xff, pci::kPcieOffset);
	EXPECT_EQ(rd(pci::kPcieOffset) & 0xffff, 0x5010u);
	EXPECT_EQ(rd(pci::kMsiOffset) & 0xffff, 0x0005u);
}

TEST_F(Aic100Config, MsiOffers32MaskableVectors64Bit)
{
	EXPECT_EQ(rd(0x50) >> 16, 0x018au);  // per-vector mask, 64-bit, MMC 5
	EXPECT_FALSE(cfg.msi_enabled());
	wr(0x50, (0x0051u << 16));  // enable, MME 5
	EXPECT_TRUE(cfg.msi_enabled());
	EXPECT_EQ(cfg.msi_vectors_enabled(), 32u);
	wr(0x54, 0xfee00003);
	EXPECT_EQ(rd(0x54), 0xfee00000u);  // address bits 1:0 reserved
	wr(0x60, 0xffffffff);
	EXPECT_EQ(rd(0x60), 0xffffffffu);  // mask bits
	wr(0x64, 0xffffffff);
	EXPECT_EQ(rd(0x64), 0u);  // pending: read-only
}

TEST_F(Aic100Config, PcieLinkIs16GtX8)
{
	const unsigned p = pci::kPcieOffset;
	EXPECT_EQ(rd(p) >> 16, 0x0002u);        // version 2, endpoint
	EXPECT_EQ(rd(p + 0x04), 0x00008020u);   // RBER, extended tags
	EXPECT_EQ(rd(p + 0x0c), 0x00000484u);   // L0s, x8, 16 GT/s
	EXPECT_EQ(rd(p + 0x10) >> 16, 0x0084u);  // link status x8 at 16 GT/s
	EXPECT_EQ(rd(p + 0x24), 0x00300000u);   // DEVCAP2
	EXPECT_EQ(rd(p + 0x2c), 0x0000001eu);   // 2.5 to 16 GT/s
	EXPECT_EQ(rd(p + 0x30) & 0xf, 0x4u);     // target speed 16 GT/s
	EXPECT_EQ(rd(0x100), 0u);               // no extended capability
}

TEST_F(Aic100Config, ReadOnlyFieldsIgnoreWritesAndStatusClearsOnOne)
{
	wr(0x00, 0);
	EXPECT_EQ(rd(0x00), 0xa10017cbu);
	wr(0x04, 0xffff0547);
	EXPECT_EQ(rd(0x04), 0x00100547u);  // the command bits QEMU lets through; status unchanged
	wr(pci::kPcieOffset + 0x0c, 0);
	EXPECT_EQ(rd(pci::kPcieOffset + 0x0c), 0x484u);
}

TEST_F(Aic100Config, ResetRestoresPowerOnValues)
{
	wr(0x04, 0x6);
	wr(0x50, 0x0051u << 16);
	cfg.reset();
	EXPECT_EQ(rd(0x04), 0x00100000u);
	EXPECT_FALSE(cfg.msi_enabled());
}

TEST(VfioUserPciConfigAic200, MsixInBar0MhiInBar1)
{
	PciConfigSpace cfg(pci_layout(true, 0xa110, 64 * 1024));
	EXPECT_EQ(cfg.dword(0x00), 0xa11017cbu);
	EXPECT_EQ(cfg.dword(0x2c), 0xa11017cbu);
	EXPECT_EQ(cfg.dword(0x10), 0u);  // 32-bit memory
	EXPECT_EQ(cfg.dword(0x14), 0u);  // 32-bit memory
	EXPECT_EQ(cfg.dword(0x18), 4u);
	EXPECT_EQ(cfg.dword(0x20), 4u);
	// PCI Express, MSI, then MSI-X (added first, with the BARs).
	EXPECT_EQ(cfg.dword(0x34) & 0xff, 0x70u);
	EXPECT_EQ(cfg.word(0x70), 0x5010u);
	EXPECT_EQ(cfg.word(0x50), 0xb005u);
	EXPECT_EQ(cfg.word(0xb0), 0x0011u);
	EXPECT_EQ(cfg.word(0xb2), 31u);          // 32 entries
	EXPECT_EQ(cfg.dword(0xb4), 0u);          // table at BAR0 + 0
	EXPECT_EQ(cfg.dword(0xb8), 0x800u);      // PBA at BAR0 + 0x800
	uint8_t enable[2] = {0x1f, 0xc0};
	cfg.write(0xb2, enable);
	EXPECT_EQ(cfg.word(0xb2), 0xc01fu);      // enable and mask-all writable, size not
	EXPECT_TRUE(cfg.msix_enabled());
}

}  // namespace
}  // namespace aic100::vfio_user
