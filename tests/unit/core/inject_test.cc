// SPDX-License-Identifier: GPL-2.0-or-later
// The fault-injection grammar and the BAR4 test mailbox that carries it for
// guest-side tests.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "aic100/ras.h"
#include "aic100/ssr.h"
#include "aic100/telemetry.h"
#include "fake_card.h"
#include "nnc_host.h"

namespace aic100::test {
namespace {

class MailboxTest : public NncHostTest {
protected:
	void SetUp() override
	{
		DeviceConfig cfg;
		cfg.test_mailbox = true;
		make(cfg);
	}
	// As a guest program does it through resource4: command, length, poll.
	std::pair<uint32_t, std::string> run(const std::string &cmd)
	{
		for (size_t i = 0; i < cmd.size(); i += 4) {
			uint32_t w = 0;
			std::memcpy(&w, cmd.data() + i, std::min<size_t>(4, cmd.size() - i));
			dev->bar_write(4, i, w, 4);
		}
		dev->bar_write(4, 0x100, cmd.size(), 4);
		EXPECT_EQ(dev->bar_read(4, 0x104, 4), 2u) << "pending until the event loop runs it";
		mhi->settle();
		std::string msg;
		for (uint64_t off = 0x200; off < 0x300; off++) {
			const char c = static_cast<char>(dev->bar_read(4, off, 1));
			if (!c)
				break;
			msg += c;
		}
		return {static_cast<uint32_t>(dev->bar_read(4, 0x104, 4)), msg};
	}
};

TEST_F(MailboxTest, CarriesCommandsAndTheirVerdicts)
{
	EXPECT_EQ(dev->bar_read(4, 0x108, 4), 0x584F424Du) << "MBOX: the guest can tell it is there";
	auto [st, msg] = run("sensor soc_temp=55000");
	EXPECT_EQ(st, 0u);
	EXPECT_EQ(msg, "");
	telemetry::Status s;
	EXPECT_EQ(dev->boot().qsm().telemetry().read(telemetry::kSocTemp, s), 55'000);
	std::tie(st, msg) = run("crash dbc=9");
	EXPECT_EQ(st, 1u);
	EXPECT_EQ(msg, "no workload on DBC 9");
	std::tie(st, msg) = run("syserr");
	EXPECT_EQ(st, 0u);
	EXPECT_NE(dev->describe().find("SYS_ERR"), std::string::npos);
}

TEST_F(MailboxTest, AnswersDmaStatsWithTheChannelsCountersAndDeviceTime)
{
	host.clock_ns = 123'456;
	auto [st, msg] = run("dma-stats dbc=3");
	EXPECT_EQ(st, 0u);
	EXPECT_EQ(msg, "requests=0 errors=0 bytes_in=0 bytes_out=0 copy_ns_in=0 copy_ns_out=0 request_ns=0 "
		       "doorbells=0 doorbell_ns=0 now_ns=123456");
	std::tie(st, msg) = run("dma-stats dbc=16");
	EXPECT_EQ(st, 1u);
	EXPECT_EQ(msg, "dma-stats: dbc=16 (0..15)");
	std::tie(st, msg) = run("dma-stats nsp=1");
	EXPECT_EQ(st, 1u);
	EXPECT_EQ(msg, "dma-stats: give dbc=N");
}

TEST_F(MailboxTest, RefusesBadLengthsAndStrayWrites)
{
	dev->bar_write(4, 0x100, 0, 4);
	EXPECT_EQ(dev->bar_read(4, 0x104, 4), 1u);
	dev->bar_write(4, 0x100, 4096, 4);
	EXPECT_EQ(dev->bar_read(4, 0x104, 4), 1u);
	const size_t errors = host.errors.size();
	dev->bar_write(4, 0x800, 1, 4);
	EXPECT_EQ(host.errors.size(), errors + 1);
}

TEST(MailboxOff, Bar4ReadsZeroAsOnTheRealCard)
{
	FakeHost host;
	DeviceConfig cfg;
	cfg.boot_amss = true;
	Device dev(host, cfg);
	dev.bar_write(4, 0, 0x12345678, 4);
	dev.bar_write(4, 0x100, 4, 4);
	dev.process();
	EXPECT_EQ(dev.bar_read(4, 0, 4), 0u);
	EXPECT_EQ(dev.bar_read(4, 0x108, 4), 0u);
}

TEST(Inject, UnknownCommandsListTheGrammar)
{
	FakeHost host;
	DeviceConfig cfg;
	cfg.boot_amss = true;
	Device dev(host, cfg);
	const std::string e = dev.inject("explode");
	EXPECT_NE(e.find("unknown fault 'explode'"), std::string::npos);
	EXPECT_NE(e.find("crash dbc=N"), std::string::npos);
	EXPECT_NE(dev.inject("syserr now"), "");
}

TEST(Inject, BootlogHoldTakesABoundedAckDelayAndRefusesTheRest)
{
	FakeHost host;
	DeviceConfig cfg;
	Device dev(host, cfg);
	const Sbl &sbl = dev.boot().sbl();
	const std::pair<const char *, const char *> refused[] = {
		{"bootlog", "give hold [release=reset|handover] [ack_delay_ms=0..1000] or normal"},
		{"bootlog hold release=later", "release=later (reset or handover)"},
		{"bootlog keep", "give hold"},
		{"bootlog hold ack_delay_ms=1001", "ack_delay_ms=1001 (0..1000)"},
		{"bootlog hold ack_delay_ms=-1", "(0..1000)"},
		{"bootlog hold ack_delay_ms=soon", "(0..1000)"},
		{"bootlog hold lines=3", "unknown argument lines="},
		{"bootlog hold ack_delay_ms=1 ack_delay_ms=2", "given twice"},
		{"bootlog hold 5", "not key=value"},
		{"bootlog normal now=1", "takes no arguments"},
	};
	for (const auto &[cmd, why] : refused) {
		const std::string e = dev.inject(cmd);
		EXPECT_NE(e.find(why), std::string::npos) << cmd << ": " << e;
		EXPECT_FALSE(sbl.log_held()) << cmd << ": a refused command changes nothing";
	}
	EXPECT_EQ(dev.inject("bootlog hold ack_delay_ms=1000"), "");
	EXPECT_EQ(dev.inject("bootlog hold release=handover"), "");
	EXPECT_EQ(dev.inject("bootlog hold release=reset ack_delay_ms=5"), "");
	EXPECT_TRUE(sbl.log_held());
	EXPECT_EQ(dev.inject("bootlog normal"), "");
	EXPECT_FALSE(sbl.log_held());
	EXPECT_NE(dev.inject("explode").find("bootlog hold"), std::string::npos) << "in the grammar's summary";
}

// The card idles into M1 on command; the host's M2 and its next doorbell
// (here an NNC message) bring it back to M0, and the message is answered.
TEST_F(MailboxTest, IdleTakesTheCardToM1UntilTheHostWantsItAgain)
{
	auto [st, msg] = run("idle");
	EXPECT_EQ(st, 0u) << msg;
	EXPECT_EQ(mhi->states.back(), static_cast<uint8_t>(regs::MhiState::M1));
	mhi->set_state(regs::MhiState::M2);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, static_cast<uint32_t>(regs::MhiState::M2));
	std::tie(st, msg) = run("idle");
	EXPECT_EQ(st, 1u);
	EXPECT_EQ(msg, "idle: MHI is not in M0");
	resources(); // a RESOURCE_INFO exchange: answered once the card is awake
	EXPECT_EQ(mhi->states.back(), static_cast<uint8_t>(regs::MhiState::M0));
	EXPECT_NE(dev->inject("idle now"), "");
}

TEST(Inject, TimesyncHoldIsCheckedAndArmsTheSbl)
{
	FakeHost host;
	DeviceConfig cfg;
	Device dev(host, cfg);
	const Sbl &sbl = dev.boot().sbl();
	const std::pair<const char *, const char *> refused[] = {
		{"timesync", "give hold release=handover or normal"},
		{"timesync hold", "give release=handover"},
		{"timesync hold release=reset", "release=reset (handover)"},
		{"timesync hold release=handover delay=1", "unknown argument delay="},
		{"timesync hold 5", "not key=value"},
		{"timesync normal now=1", "takes no arguments"},
	};
	for (const auto &[cmd, why] : refused) {
		const std::string e = dev.inject(cmd);
		EXPECT_NE(e.find(why), std::string::npos) << cmd << ": " << e;
		EXPECT_FALSE(sbl.timesync_held()) << cmd << ": a refused command changes nothing";
	}
	EXPECT_EQ(dev.inject("timesync hold release=handover"), "");
	EXPECT_TRUE(sbl.timesync_held());
	EXPECT_EQ(dev.inject("timesync normal"), "");
	EXPECT_FALSE(sbl.timesync_held());
	EXPECT_NE(dev.inject("explode").find("timesync hold"), std::string::npos) << "in the grammar's summary";
}

// An injection runs as the card's own pass does. A SYS_ERR injection writes
// an event and raises an MSI, both at addresses the guest chose: aimed at
// its root port's Bridge Control (through ECAM), QEMU resets the card from
// inside the injection, while the event ring is in use. The reset waits for
// the injection's end (ASan: no use of the freed ring), and the card comes
// back from it as from any reset.
class InjectionTest : public CardTest<> {
protected:
	void SetUp() override
	{
		DeviceConfig cfg;
		cfg.boot_amss = true;
		new_card(cfg);
		ASSERT_NO_FATAL_FAILURE(online({0, 1}));
	}
	static bool has(const std::vector<std::string> &lines, const std::string &what)
	{
		for (const auto &l : lines)
			if (l.find(what) != std::string::npos)
				return true;
		return false;
	}
};

TEST_F(InjectionTest, APciResetAskedForFromInsideAnInjectionWaitsForItsEnd)
{
	int dmas = 0;
	host.on_dma = [&] {
		if (++dmas == 1)
			dev->reset();
	};
	host.traces.clear();
	EXPECT_EQ(dev->inject("syserr"), "");
	host.on_dma = nullptr;
	ASSERT_GE(dmas, 1) << "SYS_ERR is posted on event ring 0 by DMA";
	EXPECT_TRUE(has(host.traces, "asked for by the card's own DMA: done at the end of its pass"));
	// Reset after the SYS_ERR, not under it: neither M0 nor SYS_ERR is left.
	EXPECT_EQ(dev->describe().find("state=M0"), std::string::npos) << dev->describe();
	EXPECT_EQ(dev->describe().find("SYS_ERR"), std::string::npos) << dev->describe();
	new_host();
	mhi->ready_handshake();
	EXPECT_NE(dev->describe().find("state=M0"), std::string::npos) << dev->describe();
}

TEST_F(InjectionTest, RegisterWritesByTheCardsOwnDmaDuringAnInjectionAreRefused)
{
	host.on_dma = [&] { dev->bar_write(0, regs::MHICTRL, regs::MHICTRL_RESET, 4); };
	EXPECT_EQ(dev->inject("syserr"), "");
	host.on_dma = nullptr;
	EXPECT_TRUE(has(host.errors, "own DMA refused"));
	EXPECT_NE(dev->describe().find("state=SYS_ERR"), std::string::npos) << dev->describe();
}

// Random messages on the three health channels, many of them with a valid
// header and a plausible command, during a recovery: the card refuses what
// it must, never crashes, and still works afterwards.
class HealthFuzzTest : public NncHostTest {};

TEST_F(HealthFuzzTest, RandomMessagesOnHealthChannelsLeaveTheCardWorking)
{
	for (unsigned ch : {ssr::kUl, ssr::kDl, ras::kUl, ras::kDl, telemetry::kUl, telemetry::kDl})
		ASSERT_TRUE(mhi->start(ch));
	mhi->queue_dl(ssr::kDl, 65000, 2);
	mhi->queue_dl(ras::kDl, 104, 1);
	mhi->queue_dl(telemetry::kDl, 64, 2);
	const auto a = activate(load_elf());
	ASSERT_EQ(a.status, kOk);
	ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(a.virtual_channel_id)), "");
	mhi->settle();
	std::mt19937 rng(1234);
	auto byte = [&] { return static_cast<uint8_t>(rng()); };
	for (int i = 0; i < 3000; i++) {
		std::vector<uint8_t> m(rng() % 48 + (i % 7 == 0 ? 0 : 1));
		for (auto &b : m)
			b = byte();
		const unsigned pick = rng() % 3;
		if (m.size() >= 12 && rng() % 2) {
			// A plausible header, so the checks past it are reached too.
			if (pick == 0) {
				const uint32_t cmds[] = {ssr::kEventRsp, ssr::kDebugTransferInfoRsp, ssr::kMemoryRead,
							 ssr::kDebugTransferDone, 0x40};
				const uint32_t h[3] = {cmds[rng() % 5], static_cast<uint32_t>(m.size()),
						       rng() % 2 ? a.virtual_channel_id : byte()};
				std::memcpy(m.data(), h, 12);
			} else {
				const uint16_t magic = 0x55AA;
				std::memcpy(m.data(), &magic, 2);
			}
		}
		mhi->send(pick == 0 ? ssr::kUl : pick == 1 ? ras::kUl : telemetry::kUl, m);
		mhi->rx[telemetry::kDl].clear();
		mhi->rx[ssr::kDl].clear();
	}
	// Whatever state the SSR exchange reached, it ends (the host went
	// quiet: the timeout) and the DBC is free again.
	mhi->fire_timer();
	mhi->fire_timer();
	mhi->fire_timer();
	mhi->fire_timer();
	EXPECT_FALSE(dev->boot().qsm().ssr().busy());
	EXPECT_EQ(resources().vc_free, 16u);
	// Telemetry still answers a good request.
	std::vector<uint8_t> req(telemetry::kMessageSize, 0);
	const uint16_t magic = telemetry::kMagic, ver = telemetry::kVersion, len = 11;
	const uint32_t seq = 77;
	std::memcpy(&req[0], &magic, 2);
	std::memcpy(&req[2], &ver, 2);
	std::memcpy(&req[4], &seq, 4);
	req[8] = telemetry::kTypeReq;
	std::memcpy(&req[10], &len, 2);
	req[12] = telemetry::kPowerMax;
	mhi->send(telemetry::kUl, req);
	const auto r = mhi->pop(telemetry::kDl);
	ASSERT_EQ(r.size(), telemetry::kMessageSize);
	EXPECT_EQ(as<uint32_t>(r, 4), seq);
	EXPECT_EQ(r[14], telemetry::kOk);
	EXPECT_NE(dev->describe().find("state=M0"), std::string::npos);
}

} // namespace
} // namespace aic100::test
