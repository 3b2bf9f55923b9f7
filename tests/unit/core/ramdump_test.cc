// SPDX-License-Identifier: GPL-2.0-or-later
// The RAM dump's table and regions as the host reads them with MEM_READ64:
// the table's layout, exact reads inside the table or one region, and every
// range that is not (out of the table, across two regions, wrapping around,
// of length 0 or longer than one host buffer) refused with its status.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "aic100/ramdump.h"
#include "aic100/sahara.h"

namespace aic100::test {
namespace {

uint64_t u64_at(const std::vector<uint8_t> &v, size_t off)
{
	uint64_t x;
	std::memcpy(&x, v.data() + off, 8);
	return x;
}

std::vector<uint8_t> bytes(size_t n, uint8_t seed)
{
	std::vector<uint8_t> v(n);
	for (size_t i = 0; i < n; i++)
		v[i] = static_cast<uint8_t>(seed + i * 7);
	return v;
}

class RamDumpTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		dump.add("crash summary", "summary.txt", bytes(100, 1));
		dump.add("a description longer than nineteen", "a_filename_longer_than_19.bin", bytes(70000, 2));
		dump.add("empty", "empty.bin", {});
	}
	RamDump dump;
};

TEST_F(RamDumpTest, TableListsEachNonEmptyRegionInUpstreamsLayout)
{
	ASSERT_EQ(dump.regions().size(), 2u) << "an empty region is not listed";
	const auto &t = dump.table();
	ASSERT_EQ(t.size(), 2 * RamDump::kEntrySize);
	EXPECT_EQ(dump.table_length(), 128u);
	EXPECT_EQ(u64_at(t, 0), 0u) << "type";
	EXPECT_EQ(u64_at(t, 8), RamDump::kTableAddress + RamDump::kRegionStride);
	EXPECT_EQ(u64_at(t, 16), 100u);
	EXPECT_STREQ(reinterpret_cast<const char *>(t.data() + 24), "crash summary");
	EXPECT_STREQ(reinterpret_cast<const char *>(t.data() + 44), "summary.txt");
	EXPECT_EQ(u64_at(t, 64 + 8), RamDump::kTableAddress + 2 * RamDump::kRegionStride);
	EXPECT_EQ(u64_at(t, 64 + 16), 70000u);
	// Names are cut to 19 characters and NUL-terminated within their 20.
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(t.data() + 64 + 24)), "a description longe");
	EXPECT_EQ(t[64 + 24 + 19], 0);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(t.data() + 64 + 44)), "a_filename_longer_t");
	EXPECT_EQ(t[64 + 44 + 19], 0);
	EXPECT_EQ(dump.total_bytes(), 128u + 100 + 70000);
}

TEST_F(RamDumpTest, ReadsInsideTheTableOrOneRegionGetExactlyTheBytesAsked)
{
	auto r = dump.read(RamDump::kTableAddress, 128);
	ASSERT_EQ(r.status, sahara::kSuccess);
	EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), dump.table().begin()));
	const uint64_t big = dump.regions()[1].address;
	const auto &data = dump.regions()[1].data;
	for (uint64_t off = 0; off < data.size(); off += 0xFFF0) {
		const uint64_t len = std::min<uint64_t>(0xFFF0, data.size() - off);
		r = dump.read(big + off, len);
		ASSERT_EQ(r.status, sahara::kSuccess) << off;
		ASSERT_EQ(r.data.size(), len);
		EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), data.begin() + off));
	}
	r = dump.read(big + data.size() - 1, 1);
	ASSERT_EQ(r.status, sahara::kSuccess);
	EXPECT_EQ(r.data[0], data.back());
	EXPECT_EQ(dump.read(big, RamDump::kMaxRead).data.size(), RamDump::kMaxRead);
}

TEST_F(RamDumpTest, ReadsOutsideTheTableAndRegionsAreRefused)
{
	const uint64_t small = dump.regions()[0].address, big = dump.regions()[1].address;
	const struct {
		uint64_t addr, len;
		uint32_t status;
	} cases[] = {
		{RamDump::kTableAddress - 1, 2, sahara::kInvalidMemoryRead},  // starts before the table
		{RamDump::kTableAddress + 120, 16, sahara::kInvalidMemoryRead}, // runs past its end
		{RamDump::kTableAddress + 128, 1, sahara::kInvalidMemoryRead},  // just after it
		{small + 99, 2, sahara::kInvalidMemoryRead},                    // past a region's end
		{small + 100, 1, sahara::kInvalidMemoryRead},
		{small + 50, RamDump::kRegionStride, sahara::kInvalidDataSizeRequest},
		{big - 1, 1, sahara::kInvalidMemoryRead},                       // between regions
		{big + 3 * RamDump::kRegionStride, 8, sahara::kInvalidMemoryRead}, // where no region is
		{0, 8, sahara::kInvalidMemoryRead},
		{~uint64_t{0} - 7, 16, sahara::kInvalidMemoryRead},             // wraps around
		{~uint64_t{0}, ~uint64_t{0}, sahara::kInvalidDataSizeRequest},
		{small, 0, sahara::kInvalidDataSizeRequest},
		{big, RamDump::kMaxRead + 1, sahara::kInvalidDataSizeRequest},
	};
	for (const auto &c : cases) {
		const auto r = dump.read(c.addr, c.len);
		EXPECT_EQ(r.status, c.status) << std::hex << c.addr << "+" << c.len;
		EXPECT_TRUE(r.data.empty());
	}
}

TEST(RamDumpEmptyTest, AnEmptyDumpServesNothing)
{
	RamDump d;
	EXPECT_EQ(d.table_length(), 0u);
	EXPECT_EQ(d.read(RamDump::kTableAddress, 1).status, sahara::kInvalidMemoryRead);
}

// An image's payload goes into the dump as it is: the region serves the
// very bytes the image holds, and keeps them alive after the image is gone.
TEST(RamDumpSharedTest, ASharedRegionServesTheBytesItSharesWithoutACopy)
{
	RamDump dump;
	auto payload = std::make_shared<const std::vector<uint8_t>>(bytes(70000, 3));
	const uint8_t *const held = payload->data();
	dump.add_shared("AMSS image fw1.bin", "fw1.bin", payload);
	ASSERT_EQ(dump.regions().size(), 1u);
	EXPECT_EQ(dump.regions()[0].data.data(), held) << "no copy";
	EXPECT_EQ(dump.regions()[0].data.size(), 70000u);
	payload.reset(); // the image's holder lets go
	const RamDump::Read r = dump.read(dump.regions()[0].address + 100, 64);
	ASSERT_EQ(r.status, sahara::kSuccess);
	const auto expected = bytes(70000, 3);
	EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), expected.begin() + 100));
	dump.add_shared("none", "none.bin", nullptr);
	EXPECT_EQ(dump.regions().size(), 1u) << "no bytes, no region";
}

} // namespace
} // namespace aic100::test
