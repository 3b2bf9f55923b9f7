// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/mhi_ring.h"

#include <gtest/gtest.h>

#include "fake_host.h"

namespace aic100::mhi {
namespace {

constexpr uint64_t kCtx = 0x10000;
constexpr uint64_t kRing = 0x20000;
constexpr uint64_t kRingLen = 32 * kElementSize; // the host's 32-element event ring

template <typename T> T read_host(test::FakeHost &h, uint64_t addr)
{
	T v{};
	EXPECT_EQ(h.dma_read(addr, &v, sizeof(v)), DmaStatus::Ok);
	return v;
}

class EventRingTest : public ::testing::Test {
protected:
	// Lays out an event context as the host does at READY: rp == wp == base.
	void SetUp() override
	{
		EventContext ctx{};
		ctx.ertype = 1;
		ctx.msivec = 0;
		ctx.rbase = kRing;
		ctx.rlen = kRingLen;
		ctx.rp = ctx.wp = kRing;
		host.dma_write(kCtx, &ctx, sizeof(ctx));
		ASSERT_TRUE(er.load(kCtx));
	}
	uint64_t ctx_rp() { return read_host<uint64_t>(host, kCtx + kCtxRpOffset); }

	test::FakeHost host;
	EventRing er{host};
};

TEST_F(EventRingTest, WithoutCreditEventsWaitForTheDoorbell)
{
	EXPECT_EQ(er.post(state_change_event(2)), EventRing::Post::Queued);
	EXPECT_TRUE(host.msis.empty());
	// The host hands back all but one slot, as Linux does at READY.
	ASSERT_TRUE(er.doorbell(kRing + kRingLen - kElementSize));
	const auto e = read_host<RingElement>(host, kRing);
	EXPECT_EQ(element_type(e), ElementType::StateChangeEvent);
	EXPECT_EQ(e.dword0 >> 24, 2u);
	EXPECT_EQ(ctx_rp(), kRing + kElementSize);
	EXPECT_EQ(host.msis, std::vector<unsigned>{0});
}

TEST_F(EventRingTest, StopsWhereTheHostsCreditEnds)
{
	ASSERT_TRUE(er.doorbell(kRing + 2 * kElementSize));
	EXPECT_EQ(er.post(ee_event(2)), EventRing::Post::Sent);
	EXPECT_EQ(er.post(ee_event(2)), EventRing::Post::Sent);
	EXPECT_EQ(er.post(ee_event(2)), EventRing::Post::Queued);
	EXPECT_EQ(ctx_rp(), kRing + 2 * kElementSize);
	ASSERT_TRUE(er.doorbell(kRing + 3 * kElementSize));
	EXPECT_EQ(ctx_rp(), kRing + 3 * kElementSize);
	EXPECT_EQ(er.queued(), 0u);
}

TEST_F(EventRingTest, WrapsAtTheEndOfTheRing)
{
	ASSERT_TRUE(er.doorbell(kRing + kRingLen - kElementSize));
	for (int i = 0; i < 31; i++)
		ASSERT_EQ(er.post(ee_event(1)), EventRing::Post::Sent);
	EXPECT_EQ(er.rp(), kRing + kRingLen - kElementSize);
	ASSERT_TRUE(er.doorbell(kRing + 4 * kElementSize)); // host consumed and returned slots
	ASSERT_EQ(er.post(ee_event(7)), EventRing::Post::Sent);
	EXPECT_EQ(er.rp(), kRing);
	EXPECT_EQ(read_host<RingElement>(host, kRing + kRingLen - kElementSize).dword0 >> 24, 7u);
}

TEST_F(EventRingTest, MsiVectorFoldsOntoWhatTheHostEnabled)
{
	EventContext ctx = read_host<EventContext>(host, kCtx);
	ctx.msivec = 5;
	host.dma_write(kCtx, &ctx, sizeof(ctx));
	ASSERT_TRUE(er.load(kCtx));
	ASSERT_TRUE(er.doorbell(kRing + 4 * kElementSize));
	host.vectors = 1;
	er.post(ee_event(2));
	host.vectors = 32;
	er.post(ee_event(2));
	host.vectors = 0; // MSI disabled: nothing signalled
	er.post(ee_event(2));
	EXPECT_EQ(host.msis, (std::vector<unsigned>{0, 5}));
}

TEST_F(EventRingTest, DoorbellOutsideTheRingIsRefused)
{
	EXPECT_FALSE(er.doorbell(kRing + kRingLen));
	EXPECT_FALSE(er.doorbell(kRing + 8)); // not element-aligned
	EXPECT_FALSE(er.doorbell(0));
	EXPECT_EQ(host.errors.size(), 3u);
}

TEST_F(EventRingTest, BoundedQueueWhenTheHostNeverReturnsCredit)
{
	for (size_t i = 0; i < EventRing::kMaxQueued; i++)
		ASSERT_EQ(er.post(ee_event(2)), EventRing::Post::Queued);
	EXPECT_EQ(er.post(ee_event(2)), EventRing::Post::Fault);
	EXPECT_FALSE(host.errors.empty());
}

struct BadContext {
	const char *name;
	EventContext ctx;
};

class EventRingRejects : public ::testing::TestWithParam<BadContext> {};

TEST_P(EventRingRejects, MalformedContext)
{
	test::FakeHost host;
	EventContext ctx = GetParam().ctx;
	host.dma_write(kCtx, &ctx, sizeof(ctx));
	EventRing er(host);
	EXPECT_FALSE(er.load(kCtx));
	EXPECT_EQ(er.post(ee_event(2)), EventRing::Post::Fault);
}

INSTANTIATE_TEST_SUITE_P(
	Contexts, EventRingRejects,
	::testing::Values(BadContext{"ZeroLength", {0, 1, 0, kRing, 0, kRing, kRing}},
			  BadContext{"UnalignedBase", {0, 1, 0, kRing + 4, kRingLen, kRing + 4, kRing + 4}},
			  BadContext{"OddLength", {0, 1, 0, kRing, kRingLen + 8, kRing, kRing}},
			  BadContext{"RpOutside", {0, 1, 0, kRing, kRingLen, kRing + kRingLen, kRing}},
			  BadContext{"WrapsAddressSpace", {0, 1, 0, ~0ull - 15, kRingLen, ~0ull - 15, ~0ull - 15}}),
	[](const auto &info) { return std::string(info.param.name); });

TEST(EventRingLoad, UnreadableContextIsRefused)
{
	test::FakeHost host;
	EventRing er(host);
	EXPECT_FALSE(er.load(host.mem_limit));
	EXPECT_FALSE(host.errors.empty());
}

class CommandRingTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		CommandContext ctx{};
		ctx.rbase = kRing;
		ctx.rlen = 128 * kElementSize;
		ctx.rp = ctx.wp = kRing;
		host.dma_write(kCtx, &ctx, sizeof(ctx));
		ASSERT_TRUE(cr.load(kCtx));
	}
	void put(unsigned slot, ElementType t, unsigned chan)
	{
		const RingElement e{0, 0, (uint32_t{chan} << 24) | (uint32_t{static_cast<uint8_t>(t)} << 16)};
		host.dma_write(kRing + slot * kElementSize, &e, sizeof(e));
	}

	test::FakeHost host;
	CommandRing cr{host};
	std::vector<std::pair<unsigned, uint64_t>> seen; // channel, element address
	std::function<bool(const RingElement &, uint64_t)> record = [this](const RingElement &e, uint64_t at) {
		seen.emplace_back(command_channel(e), at);
		return true;
	};
	// The doorbell at `wp`, at most `budget` commands run.
	bool ring(uint64_t wp, unsigned budget = 1000) { return cr.doorbell(wp, record, budget, more); }
	bool more = false;
};

TEST_F(CommandRingTest, RunsEachCommandOnceInOrder)
{
	put(0, ElementType::StartChannel, 10);
	put(1, ElementType::StartChannel, 11);
	ASSERT_TRUE(ring(kRing + 2 * kElementSize));
	ASSERT_TRUE(ring(kRing + 2 * kElementSize)); // repeated doorbell: nothing new
	EXPECT_EQ(seen, (std::vector<std::pair<unsigned, uint64_t>>{{10, kRing}, {11, kRing + kElementSize}}));
}

TEST_F(CommandRingTest, RunsAtMostItsBudgetAndSaysMoreAreLeft)
{
	for (unsigned i = 0; i < 5; i++)
		put(i, ElementType::StartChannel, 10 + i);
	ASSERT_TRUE(ring(kRing + 5 * kElementSize, 2));
	EXPECT_TRUE(more);
	EXPECT_EQ(seen.size(), 2u);
	ASSERT_TRUE(ring(kRing + 5 * kElementSize, 2));
	ASSERT_TRUE(ring(kRing + 5 * kElementSize, 2));
	EXPECT_FALSE(more);
	ASSERT_EQ(seen.size(), 5u);
	EXPECT_EQ(seen.back(), std::make_pair(14u, kRing + 4 * kElementSize));
}

TEST_F(CommandRingTest, DoorbellOutsideTheRingRunsNothing)
{
	put(0, ElementType::StartChannel, 10);
	EXPECT_FALSE(ring(kRing + 128 * kElementSize));
	EXPECT_FALSE(ring(kRing + 3));
	EXPECT_TRUE(seen.empty());
}

TEST_F(CommandRingTest, ElementInUnreachableMemoryStopsTheRing)
{
	CommandContext ctx{};
	ctx.rbase = host.mem_limit - 2 * kElementSize;
	ctx.rlen = 4 * kElementSize; // runs off the end of host memory
	ctx.rp = ctx.wp = ctx.rbase;
	host.dma_write(kCtx, &ctx, sizeof(ctx));
	ASSERT_TRUE(cr.load(kCtx));
	EXPECT_FALSE(ring(ctx.rbase + 3 * kElementSize));
	EXPECT_EQ(seen.size(), 2u);
}

} // namespace
} // namespace aic100::mhi
