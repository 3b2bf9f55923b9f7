// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/dma_bridge.h"

#include <gtest/gtest.h>

#include "fake_host.h"

namespace aic100 {
namespace {

using namespace regs;

class DmaBridgeTest : public ::testing::Test {
protected:
	static uint32_t reg(unsigned dbc, uint32_t r) { return kDbcBase + dbc * kDbcStride + r; }
	uint32_t rd(uint32_t off) { return static_cast<uint32_t>(dbr.read(off, 4)); }

	test::FakeHost host;
	DmaBridge dbr{host};
};

TEST_F(DmaBridgeTest, AllPointersStartAtZero)
{
	for (unsigned i = 0; i < kNumDbc; i++)
		for (uint32_t r : {DBC_REQHP, DBC_REQTP, DBC_RSPHP, DBC_RSPTP})
			EXPECT_EQ(rd(reg(i, r)), 0u);
}

TEST_F(DmaBridgeTest, HostOwnedPointersAreWritablePerChannel)
{
	dbr.write(reg(3, DBC_REQTP), 7, 4);
	dbr.write(reg(3, DBC_RSPHP), 5, 4);
	EXPECT_EQ(rd(reg(3, DBC_REQTP)), 7u);
	EXPECT_EQ(rd(reg(3, DBC_RSPHP)), 5u);
	EXPECT_EQ(rd(reg(2, DBC_REQTP)), 0u);
	EXPECT_EQ(rd(reg(4, DBC_RSPHP)), 0u);
	EXPECT_TRUE(host.errors.empty());
}

TEST_F(DmaBridgeTest, DeviceOwnedPointersRefuseHostWrites)
{
	dbr.write(reg(0, DBC_REQHP), 9, 4);
	dbr.write(reg(15, DBC_RSPTP), 9, 4);
	EXPECT_EQ(rd(reg(0, DBC_REQHP)), 0u);
	EXPECT_EQ(rd(reg(15, DBC_RSPTP)), 0u);
	EXPECT_EQ(host.errors.size(), 2u);
}

TEST_F(DmaBridgeTest, ReservedSpaceReadsZeroAndIgnoresWrites)
{
	for (uint32_t off : {0u, 0x1FFFCu, reg(0, 0x10), reg(15, 0xFFC), kDbcBase + kNumDbc * kDbcStride,
			     static_cast<uint32_t>(kBar2Size - 4)}) {
		dbr.write(off, 0xFFFFFFFF, 4);
		EXPECT_EQ(rd(off), 0u) << std::hex << off;
	}
	EXPECT_EQ(host.errors.size(), 6u);
}

TEST_F(DmaBridgeTest, ResetClearsEveryChannel)
{
	dbr.write(reg(9, DBC_REQTP), 1, 4);
	dbr.reset();
	EXPECT_EQ(rd(reg(9, DBC_REQTP)), 0u);
}

} // namespace
} // namespace aic100
