// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/mhi.h"

#include <gtest/gtest.h>

#include <functional>

#include "fake_host.h"

namespace aic100 {
namespace {

using namespace regs;

class MhiTest : public ::testing::Test {
protected:
	MhiTest() : mhi(host, cfg()) {}

	static MhiConfig cfg()
	{
		MhiConfig c;
		c.serial_number = 0x12345678;
		c.oem_pk_hash[3] = 0xABCD0003;
		return c;
	}
	uint32_t rd(uint32_t off) { return static_cast<uint32_t>(mhi.read(off, 4)); }
	void wr(uint32_t off, uint32_t v) { mhi.write(off, v, 4); }

	test::FakeHost host;
	Mhi mhi;
};

TEST_F(MhiTest, OffsetsLieWhereTheHostStackAcceptsThem)
{
	EXPECT_LT(rd(CHDBOFF), 0xC08u);
	EXPECT_LT(rd(ERDBOFF), 0xFF8u);
	EXPECT_LT(rd(BHIOFF), 0x1000u);
	// The blocks must not overlap one another or the fixed registers.
	EXPECT_GE(rd(BHIOFF), MHI_SOC_RESET_REQ + 4);
	EXPECT_GE(rd(CHDBOFF), rd(BHIOFF) + kBhiSize);
	EXPECT_GE(rd(ERDBOFF), rd(CHDBOFF) + 8 * kNumChannels);
	EXPECT_LE(rd(ERDBOFF) + 8 * kMaxEventRings, QTIMER_LO);
}

TEST_F(MhiTest, NoRegisterReadsAllOnes)
{
	host.clock_ns = 123'456'789;
	for (uint32_t off = 0; off < kBar0Size; off += 4)
		EXPECT_NE(rd(off), 0xFFFFFFFFu) << "offset 0x" << std::hex << off;
}

TEST_F(MhiTest, ResetValuesDescribeACardInPbl)
{
	EXPECT_EQ(rd(MHIVER), kMhiVersion);
	EXPECT_EQ(rd(MHICFG) & MHICFG_NCH_MASK, 128u);
	EXPECT_EQ(rd(MHICTRL), 0u);
	EXPECT_EQ(rd(kBhiBase + BHI_EXECENV), static_cast<uint32_t>(ExecEnv::Pbl));
	EXPECT_EQ(rd(kBhiBase + BHI_SERIALNU), 0x12345678u);
	EXPECT_EQ(rd(kBhiBase + BHI_OEMPKHASH0 + 12), 0xABCD0003u);
}

TEST_F(MhiTest, QtimerTicksAt19_2MHz)
{
	host.clock_ns = 1'000'000'000;
	EXPECT_EQ(mhi.read(QTIMER_LO, 8), 19'200'000u);
	host.clock_ns = 3'600'000'000'000ull; // an hour: the high word is used
	const uint64_t ticks = 3600ull * 19'200'000;
	EXPECT_EQ(mhi.read(QTIMER_LO, 8), ticks);
	EXPECT_EQ(rd(QTIMER_LO), static_cast<uint32_t>(ticks));
	EXPECT_EQ(rd(QTIMER_HI), static_cast<uint32_t>(ticks >> 32));
}

TEST_F(MhiTest, MhicfgKeepsChannelCountsAndTakesEventRingCounts)
{
	wr(MHICFG, 0x01020304);
	EXPECT_EQ(rd(MHICFG), 0x01020000u | 128u);
}

TEST_F(MhiTest, ContextRegistersReadBackWhatTheHostWrote)
{
	for (uint32_t off = CCABAP_LOWER; off <= MHIDATALIMIT_HIGHER; off += 4)
		wr(off, 0xA0000000 | off);
	for (uint32_t off = CCABAP_LOWER; off <= MHIDATALIMIT_HIGHER; off += 4)
		EXPECT_EQ(rd(off), 0xA0000000 | off);
}

TEST_F(MhiTest, DoorbellsAreSixtyFourBitWrittenHighThenLow)
{
	const uint32_t db = rd(CHDBOFF) + 8 * 11;
	wr(db + 4, 0x00000001);
	wr(db, 0x23456780);
	EXPECT_EQ(mhi.read(db, 8), 0x0000000123456780ull);
	const uint32_t erdb = rd(ERDBOFF);
	mhi.write(erdb, 0x0000000200001000ull, 8);
	EXPECT_EQ(rd(erdb + 4), 2u);
	EXPECT_EQ(rd(erdb), 0x1000u);
}

TEST_F(MhiTest, MhiResetSelfClearsAndForgetsTheHost)
{
	wr(CCABAP_LOWER, 0x1000);
	wr(kBhiBase + BHI_INTVEC, 5);
	wr(MHICTRL, MHICTRL_RESET);
	mhi.process();
	EXPECT_EQ(rd(MHICTRL) & MHICTRL_RESET, 0u);
	EXPECT_EQ(rd(MHISTATUS), 0u) << "PBL has no MHI to be READY with";
	EXPECT_EQ(rd(CCABAP_LOWER), 0u);
	EXPECT_EQ(rd(kBhiBase + BHI_INTVEC), 0u);
}

TEST_F(MhiTest, MhiResetPastPblComesBackReady)
{
	MhiConfig cfg;
	cfg.reset_ee = ExecEnv::Amss;
	Mhi amss(host, cfg);
	amss.write(MHICTRL, MHICTRL_RESET, 4);
	amss.process();
	EXPECT_EQ(amss.read(MHICTRL, 4) & MHICTRL_RESET, 0u);
	EXPECT_EQ(amss.read(MHISTATUS, 4), MHISTATUS_READY | (1u << kStateShift));
}

TEST_F(MhiTest, SocResetRestoresPowerOnState)
{
	wr(MHICTRL, MHICTRL_RESET);
	mhi.process();
	wr(CRCBAP_LOWER, 0x4000);
	wr(MHI_SOC_RESET_REQ, 1);
	mhi.process();
	EXPECT_EQ(rd(MHISTATUS), 0u);
	EXPECT_EQ(rd(CRCBAP_LOWER), 0u);
	EXPECT_EQ(rd(MHI_SOC_RESET_REQ), 0u);
}

TEST_F(MhiTest, WritesToReadOnlyRegistersAreRefusedAndReported)
{
	wr(CHDBOFF, 0x10);
	wr(MHISTATUS, 0xFF00);
	wr(kBhiBase + BHI_EXECENV, 2);
	wr(kBhiBase + BHI_SERIALNU, 1);
	EXPECT_EQ(rd(CHDBOFF), kChdbBase);
	EXPECT_EQ(rd(MHISTATUS), 0u);
	EXPECT_EQ(rd(kBhiBase + BHI_EXECENV), 0u);
	EXPECT_EQ(rd(kBhiBase + BHI_SERIALNU), 0x12345678u);
	EXPECT_EQ(host.errors.size(), 4u);
}

TEST_F(MhiTest, NarrowAndUnalignedWritesAreIgnored)
{
	mhi.write(CCABAP_LOWER, 0xFF, 1);
	mhi.write(CCABAP_LOWER + 2, 0xFFFF, 2);
	EXPECT_EQ(rd(CCABAP_LOWER), 0u);
	EXPECT_EQ(host.errors.size(), 2u);
}

TEST_F(MhiTest, NarrowReadsSeeTheRightBytes)
{
	EXPECT_EQ(mhi.read(MHIVER + 3, 1), 0x01u);
	EXPECT_EQ(mhi.read(MHICFG, 2), 128u);
}

// Counts what MHI asks of the firmware.
struct CountingFunction final : MhiFunction {
	int resets = 0;
	void mhi_m0() override {}
	void mhi_reset() override { resets++; }
	void bhi_transfer(uint64_t, uint32_t) override {}
	void channel_started(unsigned) override {}
	void channel_stopped(unsigned) override {}
	void ul_message(unsigned, std::span<const uint8_t>) override {}
};

// Runs `look` when MHI asks the firmware to reset: what the host could read then.
struct ResetWatcher final : MhiFunction {
	explicit ResetWatcher(std::function<void()> f) : look(std::move(f)) {}
	std::function<void()> look;
	void mhi_m0() override {}
	void mhi_reset() override { look(); }
	void bhi_transfer(uint64_t, uint32_t) override {}
	void channel_started(unsigned) override {}
	void channel_stopped(unsigned) override {}
	void ul_message(unsigned, std::span<const uint8_t>) override {}
};

TEST_F(MhiTest, ResetsByRegisterLeaveTheFirmwaresWorkToTheEventLoop)
{
	// The firmware's reset stops NSP threads and reloads images: that is no
	// work for the vCPU thread that wrote the register.
	CountingFunction fn;
	mhi.set_function(&fn);
	const unsigned kicks = host.kicks;
	wr(MHICTRL, MHICTRL_RESET);
	EXPECT_EQ(fn.resets, 0);
	EXPECT_GT(host.kicks.load(), kicks);
	mhi.process();
	EXPECT_EQ(fn.resets, 1);
	wr(MHI_SOC_RESET_REQ, 1);
	EXPECT_EQ(fn.resets, 1);
	mhi.process();
	EXPECT_EQ(fn.resets, 2);
	mhi.process();
	EXPECT_EQ(fn.resets, 2) << "once per reset";
	mhi.set_function(nullptr);
}

// The host frees its rings and every buffer it gave the card as soon as
// RESET reads back clear (Linux: mhi_pm_disable_transition()), and it
// re-reads the register only when the card interrupts it. So RESET must stay
// set until the firmware has stopped every DMA, then clear with an MSI.
TEST_F(MhiTest, MhiResetClearsOnlyAfterTheFirmwareStoppedThenInterrupts)
{
	uint32_t ctrl_seen = 0;
	ResetWatcher fn([&] { ctrl_seen = rd(MHICTRL); });
	mhi.set_function(&fn);
	wr(MHICTRL, MHICTRL_RESET);
	EXPECT_EQ(rd(MHICTRL) & MHICTRL_RESET, MHICTRL_RESET) << "not acknowledged before the firmware ran";
	wr(MHICTRL, 0);
	EXPECT_EQ(rd(MHICTRL) & MHICTRL_RESET, MHICTRL_RESET) << "a write cannot cancel a reset in progress";
	host.msis.clear();
	mhi.process();
	EXPECT_EQ(ctrl_seen & MHICTRL_RESET, MHICTRL_RESET) << "the firmware stops while RESET is still set";
	EXPECT_EQ(rd(MHICTRL) & MHICTRL_RESET, 0u);
	EXPECT_EQ(host.msis, std::vector<unsigned>{0}) << "BHI_INTVEC is 0 after a reset";
	mhi.set_function(nullptr);
}

TEST_F(MhiTest, SocResetIsVisibleOnlyOnceTheFirmwareStopped)
{
	MhiConfig c = cfg();
	c.reset_ee = ExecEnv::Amss;
	Mhi amss(host, c);
	uint32_t status_seen = 0;
	ResetWatcher fn([&] { status_seen = static_cast<uint32_t>(amss.read(MHISTATUS, 4)); });
	amss.set_function(&fn);
	const uint32_t before = static_cast<uint32_t>(amss.read(MHISTATUS, 4));
	amss.write(MHI_SOC_RESET_REQ, 1, 4);
	EXPECT_EQ(amss.read(MHISTATUS, 4), before) << "the SoC has not rebooted yet";
	amss.process();
	EXPECT_EQ(status_seen & MHISTATUS_SYSERR, 0u) << "no SYS_ERR before the firmware stopped";
	amss.set_function(nullptr);
}

} // namespace
} // namespace aic100
