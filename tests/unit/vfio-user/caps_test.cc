// SPDX-License-Identifier: GPL-2.0-or-later
// VERSION's capabilities: the JSON reader and the writer that fits the room.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aic100/vfio_user/caps.h"
#include "messages.h"

namespace aic100::vfio_user {
namespace {

TEST(VfioUserCaps, ReadsQemuCapabilities)
{
	const auto caps = parse_caps(test::kQemuCaps);
	ASSERT_TRUE(caps);
	EXPECT_EQ(caps->max_msg_fds, 16u);
	EXPECT_EQ(caps->max_data_xfer, 1u << 20);
	EXPECT_EQ(caps->pgsizes, 4096u);
	EXPECT_EQ(caps->max_dma_maps, 65535u);
	EXPECT_TRUE(caps->write_multiple);
}

TEST(VfioUserCaps, AbsentKeysKeepTheirDefaults)
{
	for (const char *json : {"{}", R"({"capabilities":{}})", R"( { "other" : [1, 2.5e-3, "x", null, {"a":{}}] } )"}) {
		SCOPED_TRACE(json);
		const auto caps = parse_caps(json);
		ASSERT_TRUE(caps);
		EXPECT_EQ(caps->max_msg_fds, kDefaultMaxMsgFds);
		EXPECT_EQ(caps->max_data_xfer, kDefaultMaxDataXfer);
		EXPECT_EQ(caps->pgsizes, kDefaultPgsizes);
		EXPECT_EQ(caps->max_dma_maps, kDefaultMaxDmaMaps);
		EXPECT_FALSE(caps->write_multiple);
	}
}

TEST(VfioUserCaps, SkipsUnknownKeysOfEveryType)
{
	const auto caps = parse_caps(R"({"capabilities":{"twin_socket":{"supported":true,"fd_index":0},)"
				     R"("s":"a\"b\\\u0041\n","arr":[[],{}],"n":-1.5E+2,"max_msg_fds":4}})");
	ASSERT_TRUE(caps);
	EXPECT_EQ(caps->max_msg_fds, 4u);
}

TEST(VfioUserCaps, EscapedKeyIsTheSameKey)
{
	const auto caps = parse_caps(R"({"capabilities":{"max\u005fmsg_fds":3}})");
	ASSERT_TRUE(caps);
	EXPECT_EQ(caps->max_msg_fds, 3u);
}

TEST(VfioUserCaps, RefusesMalformedJson)
{
	const std::string deep = std::string(20, '[') + std::string(20, ']');
	for (const std::string &json : std::vector<std::string>{
		     "", "{", "[]", "{} x", R"({"capabilities":)", R"({"capabilities":[]})", R"({"capabilities":{,}})",
		     R"({"capabilities":{"max_msg_fds":-1}})", R"({"capabilities":{"max_msg_fds":1.5}})",
		     R"({"capabilities":{"max_msg_fds":1e3}})", R"({"capabilities":{"max_msg_fds":"8"}})",
		     R"({"capabilities":{"max_msg_fds":4294967296}})",
		     R"({"capabilities":{"max_data_xfer_size":18446744073709551616}})",
		     R"({"capabilities":{"write_multiple":1}})", R"({"a":"unterminated})", "{\"a\":\"\x01\"}",
		     R"({"a":"\x"})", R"({"a":"\u12"})", R"({"a":tru})", R"({"a":-})", R"({"a":1.})", R"({"a":1e})",
		     "{\"a\":" + deep + "}", R"({"a":1,})", R"({"a" 1})",
	     }) {
		SCOPED_TRACE(json);
		EXPECT_FALSE(parse_caps(json));
	}
}

TEST(VfioUserCaps, WrittenJsonFitsItsRoomAndReadsBack)
{
	const Caps ours{16, 1u << 20, 4096, 1024, true};
	for (size_t room = 0; room < 200; room++) {
		SCOPED_TRACE(room);
		Caps sent;
		const std::string json = write_caps(ours, room, sent);
		if (json.empty()) {
			EXPECT_LT(room, sizeof(R"({"capabilities":{}})"));
			continue;
		}
		EXPECT_LE(json.size() + 1, room);
		const auto back = parse_caps(json);
		ASSERT_TRUE(back);
		EXPECT_EQ(back->max_msg_fds, sent.max_msg_fds);
		EXPECT_EQ(back->max_data_xfer, sent.max_data_xfer);
		EXPECT_EQ(back->pgsizes, sent.pgsizes);
		EXPECT_EQ(back->max_dma_maps, sent.max_dma_maps);
		EXPECT_EQ(back->write_multiple, sent.write_multiple);
	}
}

TEST(VfioUserCaps, MaxMsgFdsIsTheLastKeyToGo)
{
	const Caps ours{16, 1u << 20, 4096, 1024, true};
	Caps sent;
	const std::string json = write_caps(ours, sizeof(R"({"capabilities":{"max_msg_fds":16}})"), sent);
	EXPECT_EQ(json, R"({"capabilities":{"max_msg_fds":16}})");
	EXPECT_EQ(sent.max_msg_fds, 16u);
	EXPECT_EQ(sent.max_dma_maps, kDefaultMaxDmaMaps);
}

}  // namespace
}  // namespace aic100::vfio_user
