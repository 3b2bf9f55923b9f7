// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/device.h"

#include <gtest/gtest.h>

#include "aic100/aic100_core.h"
#include "fake_host.h"

namespace aic100 {
namespace {

TEST(DeviceConfigTest, DefaultsAreValid)
{
	EXPECT_EQ(DeviceConfig{}.validate(), "");
}

struct BadConfig {
	const char *name;
	void (*mutate)(DeviceConfig &);
};

class DeviceConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DeviceConfigRejects, WithAReason)
{
	DeviceConfig c;
	GetParam().mutate(c);
	EXPECT_NE(c.validate(), "");
}

INSTANTIATE_TEST_SUITE_P(
	Fields, DeviceConfigRejects,
	::testing::Values(BadConfig{"UnknownDeviceId", [](DeviceConfig &c) { c.device_id = 0xa101; }},
			  BadConfig{"ZeroNsps", [](DeviceConfig &c) { c.nsp_count = 0; }},
			  BadConfig{"SeventeenNsps", [](DeviceConfig &c) { c.nsp_count = 17; }},
			  BadConfig{"DdrAbove32G", [](DeviceConfig &c) { c.ddr_size = (32ull << 30) + (1 << 20); }},
			  BadConfig{"DdrNotMiBAligned", [](DeviceConfig &c) { c.ddr_size = (1ull << 30) + 1; }},
			  BadConfig{"TinyDdr", [](DeviceConfig &c) { c.ddr_size = 1 << 20; }},
			  BadConfig{"Bar4NotPowerOfTwo", [](DeviceConfig &c) { c.bar4_size = 96 * 1024; }},
			  BadConfig{"Bar4TooSmall", [](DeviceConfig &c) { c.bar4_size = 2048; }},
			  BadConfig{"AllOnesSerial", [](DeviceConfig &c) { c.serial_number = 0xFFFFFFFF; }}),
	[](const auto &info) { return std::string(info.param.name); });

TEST(DeviceConfigTest, LimitsAreAccepted)
{
	DeviceConfig c;
	c.device_id = 0xA080;
	c.nsp_count = 1;
	c.ddr_size = 32ull << 30;
	c.bar4_size = 4096;
	EXPECT_EQ(c.validate(), "");
}

TEST(DeviceTest, BarsRouteToTheirBlocks)
{
	test::FakeHost host;
	Device dev(host, DeviceConfig{});
	EXPECT_EQ(dev.bar_read(0, regs::MHIVER, 4), regs::kMhiVersion);
	dev.bar_write(2, regs::kDbcBase + regs::DBC_REQTP, 3, 4);
	EXPECT_EQ(dev.bar_read(2, regs::kDbcBase + regs::DBC_REQTP, 4), 3u);
	EXPECT_EQ(dev.bar_read(4, 0x100, 4), 0u);
	// Offsets beyond a BAR are harmless.
	dev.bar_write(0, regs::kBar0Size + 8, 1, 4);
	EXPECT_EQ(dev.bar_read(2, regs::kBar2Size, 4), 0u);
}

TEST(DeviceTest, ResetRestoresEveryBlock)
{
	test::FakeHost host;
	Device dev(host, DeviceConfig{});
	dev.bar_write(0, regs::CCABAP_LOWER, 0x1000, 4);
	dev.bar_write(2, regs::kDbcBase + regs::DBC_RSPHP, 4, 4);
	dev.reset();
	EXPECT_EQ(dev.bar_read(0, regs::CCABAP_LOWER, 4), 0u);
	EXPECT_EQ(dev.bar_read(2, regs::kDbcBase + regs::DBC_RSPHP, 4), 0u);
}

TEST(DeviceTest, TwoCardsShareNoState)
{
	test::FakeHost h1, h2;
	DeviceConfig c2;
	c2.serial_number = 2;
	Device d1(h1, DeviceConfig{}), d2(h2, c2);
	d1.bar_write(2, regs::kDbcBase + regs::DBC_REQTP, 9, 4);
	EXPECT_EQ(d2.bar_read(2, regs::kDbcBase + regs::DBC_REQTP, 4), 0u);
	EXPECT_NE(d1.bar_read(0, regs::kBhiBase + regs::BHI_OEMPKHASH0, 4),
		  d2.bar_read(0, regs::kBhiBase + regs::BHI_OEMPKHASH0, 4));
}

TEST(CoreCApiTest, RejectsBadConfigWithAMessage)
{
	Aic100Config cfg;
	aic100_core_default_config(&cfg);
	cfg.nsp_count = 0;
	Aic100HostOps ops{};
	char err[128] = "";
	EXPECT_EQ(aic100_core_new(&cfg, &ops, nullptr, err, sizeof(err)), nullptr);
	EXPECT_NE(std::string(err).find("nsps"), std::string::npos);
}

// A host whose kick fails as an allocation would, once armed.
bool g_throw_on_kick = false;
std::vector<std::string> g_core_errors;

TEST(CoreCApiTest, NoExceptionCrossesIntoQemusCCode)
{
	Aic100HostOps ops{};
	ops.dma_read = [](void *, uint64_t, void *, size_t) { return 1; };
	ops.dma_write = [](void *, uint64_t, const void *, size_t) { return 1; };
	ops.raise_msi = [](void *, unsigned) {};
	ops.msi_vectors_enabled = [](void *) { return 1u; };
	ops.now_ns = [](void *) { return uint64_t{0}; };
	ops.guest_error = [](void *, const char *m) { g_core_errors.emplace_back(m); };
	ops.kick = [](void *) {
		if (g_throw_on_kick)
			throw std::bad_alloc();
	};
	ops.arm_timer = [](void *, uint64_t) {};
	Aic100Config cfg;
	aic100_core_default_config(&cfg);
	cfg.ddr_size = 64ull << 20;
	char err[128] = "";
	Aic100Core *core = aic100_core_new(&cfg, &ops, nullptr, err, sizeof(err));
	ASSERT_NE(core, nullptr) << err;
	g_throw_on_kick = true;
	// A command-ring doorbell and a reset both kick the event loop.
	EXPECT_NO_THROW(aic100_core_bar_write(core, 0, regs::CRDB_LOWER, 0x1000, 4));
	EXPECT_NO_THROW(aic100_core_bar_write(core, 0, regs::MHICTRL, regs::MHICTRL_RESET, 4));
	g_throw_on_kick = false;
	ASSERT_FALSE(g_core_errors.empty());
	EXPECT_NE(g_core_errors.back().find("register write refused"), std::string::npos) << g_core_errors.back();
	EXPECT_NO_THROW(aic100_core_process(core));
	aic100_core_free(core);
}

} // namespace
} // namespace aic100
