// SPDX-License-Identifier: GPL-2.0-or-later
// SSR on QAIC_SSR as a host driver sees it: the four recovery events, the
// crash-dump download, and what the card does with a host that is absent,
// slow, or says things out of turn.
#include <gtest/gtest.h>

#include <string>

#include "aic100/ssr.h"
#include "nnc_host.h"

namespace aic100::test {
namespace {

using namespace ssr;
using SsrHeader = ssr::Header;

std::vector<uint8_t> ssr_msg(uint32_t cmd, uint32_t dbc, std::vector<uint8_t> body = {})
{
	std::vector<uint8_t> m = raw(SsrHeader{cmd, static_cast<uint32_t>(12 + body.size()), dbc});
	m.insert(m.end(), body.begin(), body.end());
	return m;
}
std::vector<uint8_t> u32(uint32_t v)
{
	return raw(v);
}
std::vector<uint8_t> read_req(uint64_t addr, uint64_t len)
{
	std::vector<uint8_t> b = u32(0);
	auto a = raw(addr), l = raw(len);
	b.insert(b.end(), a.begin(), a.end());
	b.insert(b.end(), l.begin(), l.end());
	return b;
}

class SsrTest : public NncHostTest {
protected:
	void SetUp() override
	{
		NncHostTest::SetUp();
		elf = load_elf();
	}
	void listen()
	{
		ASSERT_TRUE(mhi->start(kUl));
		ASSERT_TRUE(mhi->start(kDl));
		mhi->queue_dl(kDl, 65000, 2); // a TRE holds at most 64 KiB - 1
	}
	unsigned activate_one()
	{
		const auto a = activate(elf);
		EXPECT_EQ(a.status, kOk);
		return a.virtual_channel_id;
	}
	SsrHeader next(uint32_t &body0)
	{
		const auto m = mhi->pop(kDl);
		EXPECT_GE(m.size(), 16u) << (host.errors.empty() ? "no guest error" : host.errors.back());
		body0 = m.size() >= 16 ? as<uint32_t>(m, 12) : 0;
		return as<SsrHeader>(m);
	}
	// Expects SSR_EVENT `ev` for `dbc` and acknowledges it with `answer`.
	void expect_event(unsigned dbc, uint32_t ev, uint32_t answer = 0)
	{
		uint32_t got;
		const SsrHeader h = next(got);
		EXPECT_EQ(h.cmd, kEvent);
		EXPECT_EQ(h.len, 16u);
		EXPECT_EQ(h.dbc_id, dbc);
		EXPECT_EQ(got, ev);
		mhi->send(kUl, ssr_msg(kEventRsp, dbc, u32(answer ? answer : ev)));
	}
	Qsm &qsm() { return dev->boot().qsm(); }

	uint32_t elf = 0;
};

TEST_F(SsrTest, WithoutAnSsrClientTheCrashedActivationWaitsForItsOwner)
{
	const ResourceInfo before = resources();
	const auto a = activate(elf);
	ASSERT_EQ(a.status, kOk);
	const unsigned dbc = a.virtual_channel_id;
	EXPECT_EQ(dev->inject("crash dbc=" + std::to_string(dbc)), "");
	mhi->settle();
	EXPECT_EQ(qsm().ssr().recoveries(), 0u) << "no SSR exchange without a client";
	EXPECT_TRUE(mhi->rx[kDl].empty()) << "nothing is sent on a channel the host did not start";
	EXPECT_FALSE(dev->dma_bridge().active(dbc)) << "its requests are dropped";
	// A host without SSR (upstream 6.12) still counts the DBC as its
	// user's: the card must not give it to anyone else yet.
	EXPECT_EQ(resources().vc_free, before.vc_free - 1);
	EXPECT_NE(dev->inject("crash dbc=" + std::to_string(dbc)).find("crashed already"), std::string::npos);
	telemetry::Status st;
	EXPECT_EQ(qsm().telemetry().read(telemetry::kNspFaults, st), 1);
	EXPECT_EQ(qsm().telemetry().read(telemetry::kNspActive, st), 0) << "its NSPs run nothing";
	// The owner's DEACTIVATE is answered as usual, so the host frees the DBC.
	const auto d = cmd(raw(DeactivateReq{kDeactivate, a.activation_id, 1, 0}));
	EXPECT_EQ(as<StatusOnlyResp>(d).status, kOk);
	ASSERT_EQ(replies.size(), 2u);
	EXPECT_EQ(replies[1].type, kDeactivateFromDev);
	const ResourceInfo after = resources();
	EXPECT_EQ(after.vc_free, before.vc_free);
	EXPECT_EQ(after.nsp_free, before.nsp_free);
	EXPECT_EQ(after.dram_free_mb, before.dram_free_mb);
	// The loaded ELF survived: activating it again needs no reload.
	EXPECT_EQ(activate(elf).status, kOk);
}

TEST_F(SsrTest, WithoutAnSsrClientTerminateFreesTheCrashedActivation)
{
	const ResourceInfo before = resources(-1, 9);
	const auto a = activate(load_elf(4096, 9), 0, 9);
	ASSERT_EQ(a.status, kOk);
	ASSERT_EQ(qsm().crash_dbc(a.virtual_channel_id, "x"), "");
	send({{kTerminateToDev, raw(TerminateToDev{{kTerminateToDev, 16}, 9, 0})}}, 9, 0);
	EXPECT_EQ(qsm().objects_of(9), 0u);
	EXPECT_EQ(resources(-1, 9).vc_free, before.vc_free);
}

TEST_F(SsrTest, FullRecoveryWithCrashDumpDownload)
{
	listen();
	const unsigned vc_free = resources().vc_free;
	const unsigned dbc = activate_one();
	ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(dbc) + " reason=unit test probe 42"), "");
	mhi->settle();
	expect_event(dbc, kBeforeShutdown);
	EXPECT_EQ(resources().vc_free, vc_free - 1) << "the DBC stays taken during recovery";
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);

	uint32_t resv;
	const auto info = mhi->pop(kDl);
	ASSERT_EQ(info.size(), 32u);
	EXPECT_EQ(as<SsrHeader>(info).cmd, kDebugTransferInfo);
	const uint64_t tbl = as<uint64_t>(info, 16), tbl_len = as<uint64_t>(info, 24);
	EXPECT_EQ(tbl, kDebugBase);
	ASSERT_EQ(tbl_len % kTableEntrySize, 0u);
	ASSERT_GE(tbl_len / kTableEntrySize, 2u);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(0)));

	auto read = [&](uint64_t addr, uint64_t len) {
		mhi->send(kUl, ssr_msg(kMemoryRead, dbc, read_req(addr, len)));
		const auto r = mhi->pop(kDl);
		EXPECT_EQ(as<SsrHeader>(r).cmd, kMemoryReadRsp);
		EXPECT_EQ(as<SsrHeader>(r).len, r.size());
		return std::vector<uint8_t>(r.begin() + std::min<size_t>(16, r.size()), r.end());
	};
	const auto table = read(tbl, tbl_len);
	ASSERT_EQ(table.size(), tbl_len);
	std::map<std::string, std::vector<uint8_t>> files;
	for (size_t e = 0; e < tbl_len; e += kTableEntrySize) {
		const uint64_t base = as<uint64_t>(table, e + 8), len = as<uint64_t>(table, e + 16);
		const std::string name(reinterpret_cast<const char *>(table.data() + e + 44));
		ASSERT_GT(len, 0u);
		std::vector<uint8_t> data;
		for (uint64_t off = 0; off < len; off += 100) // small chunks, as a cautious host
			for (uint8_t b : read(base + off, std::min<uint64_t>(100, len - off)))
				data.push_back(b);
		files[name] = data;
	}
	ASSERT_TRUE(files.count("summary.txt"));
	const std::string summary(files["summary.txt"].begin(), files["summary.txt"].end());
	EXPECT_NE(summary.find("cause: injected"), std::string::npos) << summary;
	EXPECT_NE(summary.find("unit test probe 42"), std::string::npos) << summary;
	EXPECT_NE(summary.find("dbc: " + std::to_string(dbc)), std::string::npos) << summary;
	ASSERT_TRUE(files.count("dbc.bin"));
	EXPECT_EQ(files["dbc.bin"].size(), 176u);
	EXPECT_EQ(as<uint32_t>(files["dbc.bin"], 0), dbc);
	EXPECT_EQ(as<uint32_t>(files["dbc.bin"], 4), 512u) << "the queue's element count";

	mhi->send(kUl, ssr_msg(kDebugTransferDone, dbc, u32(0)));
	const SsrHeader done = next(resv);
	EXPECT_EQ(done.cmd, kDebugTransferDoneRsp);
	EXPECT_EQ(resv, 0u);
	expect_event(dbc, kAfterPowerUp);
	EXPECT_EQ(qsm().ssr().recoveries(), 1u);
	EXPECT_EQ(qsm().ssr().abandoned(), 0u);
	EXPECT_EQ(resources().vc_free, vc_free);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	EXPECT_EQ(activate(elf).status, kOk) << "the same ELF activates again";
}

TEST_F(SsrTest, NackOfTheDumpGoesStraightToPowerUp)
{
	listen();
	const unsigned dbc = activate_one();
	ASSERT_EQ(qsm().crash_dbc(dbc, "x"), "");
	mhi->settle();
	expect_event(dbc, kBeforeShutdown);
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);
	EXPECT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(1)));
	expect_event(dbc, kAfterPowerUp, kNack); // a NACK still ends it
	EXPECT_FALSE(qsm().ssr().busy());
}

TEST_F(SsrTest, MalformedAndOutOfOrderMessagesChangeNothing)
{
	listen();
	const unsigned dbc = activate_one();
	ASSERT_EQ(qsm().crash_dbc(dbc, "x"), "");
	mhi->settle();
	uint32_t ev;
	ASSERT_EQ(next(ev).cmd, kEvent);
	ASSERT_EQ(ev, kBeforeShutdown);

	const size_t errors = host.errors.size();
	mhi->send(kUl, std::vector<uint8_t>{1, 2, 3});                         // shorter than a header
	auto bad_len = ssr_msg(kEventRsp, dbc, u32(kBeforeShutdown));
	bad_len[4] = 99;                                                        // len disagrees
	mhi->send(kUl, bad_len);
	mhi->send(kUl, ssr_msg(kEventRsp, dbc + 1, u32(kBeforeShutdown)));     // another DBC
	mhi->send(kUl, ssr_msg(0x4000, dbc, u32(0)));                           // unknown command
	mhi->send(kUl, ssr_msg(kEventRsp, dbc, u32(kAfterPowerUp)));           // out of order
	mhi->send(kUl, ssr_msg(kMemoryRead, dbc, read_req(kDebugBase, 64)));    // no transfer yet
	mhi->send(kUl, ssr_msg(kDebugTransferDone, dbc, u32(0)));               // nor a done
	mhi->send(kUl, ssr_msg(kEventRsp, dbc, {}));                            // no event word
	EXPECT_EQ(host.errors.size(), errors + 8);
	EXPECT_TRUE(mhi->rx[kDl].empty()) << "none of them moved the exchange on";

	// The right answer still does.
	mhi->send(kUl, ssr_msg(kEventRsp, dbc, u32(kBeforeShutdown)));
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);
	ASSERT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(0)));

	// Reads outside the dump get no data, never other card memory.
	for (auto [addr, len] : {std::pair<uint64_t, uint64_t>{0x1000, 64},
				 {kDebugBase - 8, 16},
				 {kDebugBase, 0},
				 {kDebugBase, kMaxRead + 1},
				 {kDebugBase + (1ull << 40), 8},
				 {~0ull - 4, 8}}) {
		mhi->send(kUl, ssr_msg(kMemoryRead, dbc, read_req(addr, len)));
		const auto r = mhi->pop(kDl);
		EXPECT_EQ(as<SsrHeader>(r).cmd, kMemoryReadRsp);
		EXPECT_EQ(r.size(), 16u) << std::hex << addr << " +" << len;
	}
	mhi->send(kUl, ssr_msg(kDebugTransferDone, dbc, u32(0)));
	EXPECT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferDoneRsp);
	expect_event(dbc, kAfterPowerUp);
	EXPECT_FALSE(qsm().ssr().busy());
}

TEST_F(SsrTest, ASilentHostTimesOutAndTheCardRecoversAlone)
{
	listen();
	const unsigned vc_free = resources().vc_free;
	const unsigned dbc = activate_one();
	ASSERT_EQ(qsm().crash_dbc(dbc, "x"), "");
	mhi->settle();
	uint32_t ev;
	ASSERT_EQ(next(ev).cmd, kEvent);
	EXPECT_EQ(host.deadline, host.clock_ns + kTimeoutNs);
	mhi->fire_timer();
	EXPECT_FALSE(qsm().ssr().busy());
	EXPECT_EQ(qsm().ssr().abandoned(), 1u);
	ASSERT_FALSE(host.errors.empty());
	EXPECT_NE(host.errors.back().find("BEFORE_SHUTDOWN"), std::string::npos) << host.errors.back();
	EXPECT_EQ(resources().vc_free, vc_free);
	// A late answer is refused harmlessly.
	mhi->send(kUl, ssr_msg(kEventRsp, dbc, u32(kBeforeShutdown)));
	EXPECT_TRUE(mhi->rx[kDl].empty());
}

TEST_F(SsrTest, CrashesAreRecoveredOneDbcAtATime)
{
	listen();
	const unsigned a = activate_one(), b = activate_one();
	ASSERT_NE(a, b);
	ASSERT_EQ(qsm().crash_dbc(a, "first"), "");
	ASSERT_EQ(qsm().crash_dbc(b, "second"), "");
	EXPECT_NE(qsm().crash_dbc(b, "again"), "") << "b is already waiting for recovery";
	mhi->settle();
	expect_event(a, kBeforeShutdown);
	EXPECT_EQ(mhi->rx[kDl].size(), 1u) << "only a's exchange runs";
	expect_event(a, kAfterShutdown);
	expect_event(a, kBeforePowerUp);
	ASSERT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, a, u32(1)));
	expect_event(a, kAfterPowerUp);
	expect_event(b, kBeforeShutdown);
	EXPECT_EQ(qsm().ssr().recoveries(), 1u);
}

TEST_F(SsrTest, StoppingTheChannelEndsTheExchange)
{
	listen();
	const unsigned dbc = activate_one();
	ASSERT_EQ(qsm().crash_dbc(dbc, "x"), "");
	mhi->settle();
	ASSERT_TRUE(qsm().ssr().busy());
	ASSERT_TRUE(mhi->reset_channel(kUl));
	EXPECT_FALSE(qsm().ssr().busy());
	EXPECT_EQ(qsm().ssr().abandoned(), 1u);
}

TEST_F(SsrTest, TerminateDuringRecoveryLeaksNothing)
{
	listen();
	const ResourceInfo before = resources(-1, 9);
	const uint32_t elf9 = load_elf(4096, 9);
	const auto a = activate(elf9, 0, 9);
	ASSERT_EQ(a.status, kOk);
	ASSERT_EQ(qsm().crash_dbc(a.virtual_channel_id, "x"), "");
	mhi->settle();
	uint32_t ev;
	ASSERT_EQ(next(ev).cmd, kEvent);
	// The user's process dies: the kernel sends TERMINATE for its handle.
	send({{kTerminateToDev, raw(TerminateToDev{{kTerminateToDev, 16}, 9, 0})}}, 9, 0);
	EXPECT_EQ(qsm().objects_of(9), 0u);
	mhi->send(kUl, ssr_msg(kEventRsp, a.virtual_channel_id, u32(kBeforeShutdown)));
	expect_event(a.virtual_channel_id, kAfterShutdown);
	expect_event(a.virtual_channel_id, kBeforePowerUp);
	ASSERT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, a.virtual_channel_id, u32(1)));
	expect_event(a.virtual_channel_id, kAfterPowerUp);
	const ResourceInfo after = resources(-1, 9);
	EXPECT_EQ(after.vc_free, before.vc_free);
	EXPECT_EQ(after.nsp_free, before.nsp_free);
	EXPECT_EQ(after.dram_free_mb, before.dram_free_mb);
}

TEST_F(SsrTest, CrashByNspFindsTheWorkloadRunningThere)
{
	listen();
	const auto first = activate(elf), second = activate(elf);
	ASSERT_EQ(second.status, kOk);
	ASSERT_NE(second.nsp_mask, 0u);
	const unsigned nsp = static_cast<unsigned>(__builtin_ctz(second.nsp_mask));
	ASSERT_EQ(dev->inject("crash nsp=" + std::to_string(nsp) + " reason=by nsp"), "");
	mhi->settle();
	expect_event(second.virtual_channel_id, kBeforeShutdown);
	EXPECT_TRUE(dev->dma_bridge().active(first.virtual_channel_id)) << "the other workload is untouched";
	EXPECT_TRUE(qsm().activation_on(first.virtual_channel_id));
}

TEST_F(SsrTest, CrashInjectionIsRefusedWhereThereIsNoWorkload)
{
	EXPECT_NE(dev->inject("crash dbc=3").find("no workload on DBC 3"), std::string::npos);
	EXPECT_NE(dev->inject("crash dbc=16").find("no DBC 16"), std::string::npos);
	EXPECT_NE(dev->inject("crash nsp=2").find("no workload on NSP 2"), std::string::npos);
	EXPECT_NE(dev->inject("crash").find("dbc=N or nsp=N"), std::string::npos);
	EXPECT_NE(dev->inject("crash dbc=1 nsp=2").find("dbc=N or nsp=N"), std::string::npos);
	EXPECT_NE(dev->inject("crash dbc=x").find("not a number"), std::string::npos);
	EXPECT_EQ(qsm().ssr().recoveries(), 0u);
}

TEST_F(SsrTest, AHeldRecoveryWaitsBeforePowerUpUntilReleased)
{
	listen();
	const unsigned dbc = activate_one();
	EXPECT_EQ(dev->inject("ssr release"), "no recovery is held");
	EXPECT_NE(dev->inject("crash dbc=" + std::to_string(dbc) + " hold=2"), "");
	ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(dbc) + " hold=1 reason=held for a test"), "");
	mhi->settle();
	expect_event(dbc, kBeforeShutdown);
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);
	// However long the host waits, nothing more comes until the release.
	host.clock_ns += kTimeoutNs / 2;
	mhi->settle();
	EXPECT_TRUE(mhi->pop(kDl).empty());
	EXPECT_TRUE(qsm().ssr().recovering(dbc));
	EXPECT_EQ(dev->inject("ssr release"), "");
	mhi->settle();
	EXPECT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(1)));
	expect_event(dbc, kAfterPowerUp);
	EXPECT_FALSE(qsm().ssr().busy());
	EXPECT_EQ(qsm().ssr().abandoned(), 0u);
}

TEST_F(SsrTest, AHeldRecoveryThatNobodyReleasesGoesOnByItself)
{
	listen();
	const unsigned dbc = activate_one();
	ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(dbc) + " hold=1"), "");
	mhi->settle();
	expect_event(dbc, kBeforeShutdown);
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);
	mhi->fire_timer();
	EXPECT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo);
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(1)));
	expect_event(dbc, kAfterPowerUp);
	EXPECT_FALSE(qsm().ssr().busy());
}

TEST_F(SsrTest, AReleaseBeforeTheHoldLetsTheRecoveryPassIt)
{
	// The host may look and release before the card reaches the hold: the
	// recovery then passes it instead of waiting for nobody.
	listen();
	const unsigned dbc = activate_one();
	ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(dbc) + " hold=1"), "");
	mhi->settle();
	expect_event(dbc, kBeforeShutdown);
	EXPECT_EQ(dev->inject("ssr release"), "");
	expect_event(dbc, kAfterShutdown);
	expect_event(dbc, kBeforePowerUp);
	EXPECT_EQ(as<SsrHeader>(mhi->pop(kDl)).cmd, kDebugTransferInfo) << "no hold";
	mhi->send(kUl, ssr_msg(kDebugTransferInfoRsp, dbc, u32(1)));
	expect_event(dbc, kAfterPowerUp);
	EXPECT_FALSE(qsm().ssr().busy());
	EXPECT_EQ(dev->inject("ssr release"), "no recovery is held");
}

} // namespace
} // namespace aic100::test
