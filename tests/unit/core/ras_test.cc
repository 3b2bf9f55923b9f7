// SPDX-License-Identifier: GPL-2.0-or-later
// RAS reports on QAIC_STATUS, checked field by field against upstream's
// layout, and what the card does when nobody listens.
#include <gtest/gtest.h>

#include "aic100/ras.h"
#include "nnc_host.h"

namespace aic100::test {
namespace {

using namespace ras;

class RasTest : public NncHostTest {
protected:
	void listen()
	{
		ASSERT_TRUE(mhi->start(kUl));
		ASSERT_TRUE(mhi->start(kDl));
		mhi->queue_dl(kDl, 104, 1); // upstream keeps exactly one buffer queued
	}
	std::vector<uint8_t> report(const std::string &cmd)
	{
		EXPECT_EQ(dev->inject(cmd), "");
		mhi->settle();
		return mhi->pop(kDl);
	}
};

TEST_F(RasTest, ReportsCarryUpstreamsHeaderAndSyndrome)
{
	listen();
	const auto m = report("ras ce source=ddr addr=0x123456789");
	ASSERT_EQ(m.size(), kMessageSize);
	EXPECT_EQ(as<uint16_t>(m, 0), 0x55AA);
	EXPECT_EQ(as<uint16_t>(m, 2), 2);
	EXPECT_EQ(as<uint32_t>(m, 4), 0u) << "sequence numbers start at 0";
	EXPECT_EQ(m[8], 0) << "PUSH";
	EXPECT_EQ(as<uint16_t>(m, 10), 92) << "len is the body, without the header";
	EXPECT_EQ(as<uint32_t>(m, 16), 2u) << "DDR";
	EXPECT_EQ(as<uint32_t>(m, 20), 0u) << "CE";
	EXPECT_EQ(as<uint32_t>(m, 28), 1u) << "ce_count";
	EXPECT_EQ(as<uint32_t>(m, 40 + 40), 0x23456789u) << "ddr addr_lsb";
	EXPECT_EQ(as<uint16_t>(m, 40 + 44), 0x1) << "ddr addr_msb";

	const auto n = report("ras ue_nf source=nsp_mem nsp=5 addr=0x40");
	ASSERT_EQ(n.size(), kMessageSize);
	EXPECT_EQ(as<uint32_t>(n, 4), 1u);
	EXPECT_EQ(as<uint32_t>(n, 16), 5u);
	EXPECT_EQ(as<uint32_t>(n, 20), 2u);
	EXPECT_EQ(as<uint32_t>(n, 40), 0x40u);
	EXPECT_EQ(n[40 + 32], 5) << "nsp_id";

	const auto t = report("ras ce source=tsens temp=97000 threshold=upper");
	EXPECT_EQ(as<uint32_t>(t, 40), 1u) << "threshold_type upper";
	EXPECT_EQ(as<int32_t>(t, 44), 97) << "°C";
	EXPECT_EQ(dev->boot().qsm().ras().count(Source::Ddr, ras::Type::Ce), 1u);
}

TEST_F(RasTest, MessagesWaitForTheHostsBuffers)
{
	ASSERT_TRUE(mhi->start(kUl));
	ASSERT_TRUE(mhi->start(kDl));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(dev->inject("ras ce source=pcie"), "");
	mhi->settle();
	EXPECT_TRUE(mhi->rx[kDl].empty());
	mhi->queue_dl(kDl, 104, 1); // requeued after each completion
	for (uint32_t i = 0; i < 3; i++)
		EXPECT_EQ(as<uint32_t>(mhi->pop(kDl), 4), i) << "in order";
}

TEST_F(RasTest, UnheardUncorrectableErrorTakesTheCardToSysErr)
{
	ASSERT_EQ(dev->inject("ras ce source=soc_mem"), "");
	ASSERT_EQ(dev->inject("ras ue_nf source=sys_bus2"), "");
	mhi->settle();
	EXPECT_NE(dev->describe().find("state=M0"), std::string::npos) << "CE and UE_NF are only counted";
	EXPECT_EQ(dev->boot().qsm().ras().unheard(), 2u);
	ASSERT_EQ(dev->inject("ras ue source=ddr"), "");
	mhi->settle();
	EXPECT_NE(dev->describe().find("SYS_ERR"), std::string::npos) << dev->describe();
}

TEST_F(RasTest, HeardUncorrectableErrorLeavesTheResetToTheHost)
{
	listen();
	const auto m = report("ras ue source=pcie addr=0xfee0");
	EXPECT_EQ(as<uint32_t>(m, 20), 1u);
	EXPECT_EQ(as<uint32_t>(m, 40 + 48), 0xfee0u) << "pcie UE addr";
	EXPECT_NE(dev->describe().find("state=M0"), std::string::npos);
}

TEST_F(RasTest, BadInjectionsAreRefusedAndSendNothing)
{
	listen();
	for (const char *bad : {"ras", "ras warning source=ddr", "ras ce", "ras ce source=gpu", "ras ce source=ddr addr=x",
				"ras ce source=ddr nsp=16", "ras ce source=tsens temp=900000",
				"ras ce source=tsens threshold=hot", "ras ce source=ddr colour=red", "ras ce source=ddr source=pcie"})
		EXPECT_NE(dev->inject(bad), "") << bad;
	mhi->settle();
	EXPECT_TRUE(mhi->rx[kDl].empty());
	EXPECT_EQ(dev->boot().qsm().ras().reported(), 0u);
}

TEST_F(RasTest, TheHostHasNothingToSay)
{
	listen();
	mhi->send(kUl, std::vector<uint8_t>(12, 0));
	ASSERT_FALSE(host.errors.empty());
	EXPECT_NE(host.errors.back().find("QAIC_STATUS"), std::string::npos);
}

} // namespace
} // namespace aic100::test
