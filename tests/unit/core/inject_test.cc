// SPDX-License-Identifier: GPL-2.0-or-later
// The fault-injection grammar and the BAR4 test mailbox that carries it for
// guest-side tests.
#include <gtest/gtest.h>

#include <cstring>

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

} // namespace
} // namespace aic100::test
