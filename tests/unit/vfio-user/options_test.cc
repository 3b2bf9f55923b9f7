// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-vfio-user's command line: -device aic100's properties, their
// defaults, and one-line errors for what the card would refuse.
#include <gtest/gtest.h>

#include "options.h"

namespace aic100::vfio_user {
namespace {

bool parse(std::vector<std::string> args, ServerOptions &o, std::string &err)
{
	return parse_options(args, o, err);
}

TEST(VfioUserOptions, DefaultsAreTheDevicesProperties)
{
	ServerOptions o;
	std::string err;
	ASSERT_TRUE(parse({"--socket", "/tmp/a.sock"}, o, err)) << err;
	EXPECT_EQ(o.socket_path, "/tmp/a.sock");
	EXPECT_EQ(o.card.family, Family::Aic100);
	EXPECT_EQ(o.card.device_id, 0xa100);
	EXPECT_EQ(o.card.nsp_count, 16u);
	EXPECT_EQ(o.card.ddr_size, 16ull << 30);
	EXPECT_EQ(o.card.bar4_size, 64u * 1024);
	EXPECT_FALSE(o.card.boot_amss);
	EXPECT_EQ(o.card.serial_number & 0xff000000u, 0xa1000000u);  // derived, as the glue's
}

TEST(VfioUserOptions, SerialFollowsTheSocketUnlessGiven)
{
	ServerOptions a, b;
	std::string err;
	ASSERT_TRUE(parse({"--socket=/tmp/a.sock"}, a, err));
	ASSERT_TRUE(parse({"--socket=/tmp/b.sock"}, b, err));
	EXPECT_NE(a.card.serial_number, b.card.serial_number);
	ASSERT_TRUE(parse({"--socket=/tmp/a.sock", "--serial", "0x1234"}, a, err));
	EXPECT_EQ(a.card.serial_number, 0x1234u);
}

TEST(VfioUserOptions, Aic200FamilyTakesItsDeviceId)
{
	ServerOptions o;
	std::string err;
	ASSERT_TRUE(parse({"--socket", "s", "--family", "aic200"}, o, err)) << err;
	EXPECT_EQ(o.card.family, Family::Aic200);
	EXPECT_EQ(o.card.device_id, 0xa110);
}

TEST(VfioUserOptions, TakesEveryPropertyInBothForms)
{
	ServerOptions o;
	std::string err;
	ASSERT_TRUE(parse({"--socket", "s", "--device-id=0xa080", "--nsps", "4", "--ddr-size", "256M", "--bar4-size=1M",
			   "--boot", "amss", "--crc=on", "--test-mailbox", "yes", "--soc-temp", "90000", "--board-temp",
			   "45000", "--ddr-temp", "50000", "--board-power", "75000000"},
			  o, err))
		<< err;
	EXPECT_EQ(o.card.device_id, 0xa080);
	EXPECT_EQ(o.card.nsp_count, 4u);
	EXPECT_EQ(o.card.ddr_size, 256ull << 20);
	EXPECT_EQ(o.card.bar4_size, 1u << 20);
	EXPECT_TRUE(o.card.boot_amss);
	EXPECT_TRUE(o.card.nnc_crc);
	EXPECT_TRUE(o.card.test_mailbox);
	EXPECT_EQ(o.card.soc_temp_mc, 90000);
	EXPECT_EQ(o.card.board_temp_mc, 45000);
	EXPECT_EQ(o.card.ddr_temp_mc, 50000);
	EXPECT_EQ(o.card.board_power_uw, 75000000);
}

TEST(VfioUserOptions, ConfinementAndDmaLayoutDefaults)
{
	ServerOptions o;
	std::string err;
	ASSERT_TRUE(parse({"--socket", "s"}, o, err)) << err;
	EXPECT_TRUE(o.sandbox);
	EXPECT_TRUE(o.user.empty());
	ASSERT_TRUE(parse({"--socket", "s", "--user=nobody", "--sandbox", "off"}, o, err)) << err;
	EXPECT_FALSE(o.sandbox);
	EXPECT_EQ(o.user, "nobody");
	EXPECT_FALSE(o.qemu10_dma_layout);
	ASSERT_TRUE(parse({"--socket", "s", "--dma-layout", "qemu-10"}, o, err)) << err;
	EXPECT_TRUE(o.qemu10_dma_layout);
}

TEST(VfioUserOptions, ErrorsAreOneLine)
{
	const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
		{{}, "--socket PATH is required"},
		{{"--socket"}, "--socket needs a value"},
		{{"--socket", "s", "--frobnicate", "1"}, "unknown option '--frobnicate'"},
		{{"--socket", "s", "--family", "aic300"}, "--family: bad value 'aic300'"},
		{{"--socket", "s", "--nsps", "many"}, "--nsps: bad value 'many'"},
		{{"--socket", "s", "--device-id", "0x1a100"}, "--device-id: bad value '0x1a100'"},
		{{"--socket", "s", "--ddr-size", "1X"}, "--ddr-size: bad value '1X'"},
		{{"--socket", "s", "--crc", "maybe"}, "--crc: bad value 'maybe'"},
		{{"--socket", "s", "--sandbox", "strict"}, "--sandbox: bad value 'strict'"},
		{{"--socket", "s", "--dma-layout", "v2"}, "--dma-layout: bad value 'v2'"},
		{{"--socket", "s", "--user", ""}, "--user: bad value ''"},
		{{"--socket", "s", "--nsps", "17"}, "nsps=17: must be 1..16"},
		{{"--socket", "s", "--bar4-size", "12K"}, "bar4-size="},
		{{"--socket", "s", "--family", "aic200", "--device-id", "0xa100"}, "an AIC200 must be 0xa110"},
	};
	for (const auto &[args, want] : cases) {
		ServerOptions o;
		std::string err;
		EXPECT_FALSE(parse(args, o, err)) << want;
		EXPECT_NE(err.find(want), std::string::npos) << "got: " << err;
		EXPECT_EQ(err.find('\n'), std::string::npos) << err;
	}
}

TEST(VfioUserOptions, HelpNeedsNothingElse)
{
	ServerOptions o;
	std::string err;
	ASSERT_TRUE(parse({"--help"}, o, err));
	EXPECT_TRUE(o.help);
}

}  // namespace
}  // namespace aic100::vfio_user
