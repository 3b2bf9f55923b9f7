// SPDX-License-Identifier: GPL-2.0-or-later
// The container layout, field by field, and the reader's refusals.
#include "container.h"

#include <gtest/gtest.h>

namespace aic100::qpc {
namespace {

uint64_t le(const std::vector<uint8_t> &f, size_t off, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= uint64_t(f[off + i]) << (8 * i);
	return v;
}

void set(std::vector<uint8_t> &f, size_t off, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		f[off + i] = uint8_t(v >> (8 * i));
}

std::vector<Segment> sample()
{
	return {{"network.elf", {1, 2, 3, 4, 5}, 0},
		{"networkdesc.bin", {}, 0},
		{"constants.bin", std::vector<uint8_t>(13, 0xAB), 9}};
}

TEST(QpcContainer, LayoutIsTheUmds)
{
	std::string err;
	const auto f = write_container(sample(), err);
	ASSERT_TRUE(f) << err;
	EXPECT_EQ(le(*f, 0, 4), 0x00A1CD7Cu);
	EXPECT_EQ((*f)[4], 0);                  // major
	EXPECT_EQ((*f)[5], 1);                  // minor
	EXPECT_EQ(le(*f, 6, 2), 1u);            // relocatable
	EXPECT_EQ(le(*f, 8, 8), f->size());     // size
	EXPECT_EQ(le(*f, 16, 8), 0u);           // base
	EXPECT_EQ(le(*f, 24, 8), 3u);           // count
	EXPECT_EQ(le(*f, 32, 8), 40u);          // table
	// Names right after the 3 x 32-byte table, 8-aligned; then data.
	EXPECT_EQ(le(*f, 40 + 16, 8), 136u);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(&(*f)[136])), "network.elf");
	EXPECT_EQ(le(*f, 72 + 16, 8), 136u + 16);
	EXPECT_EQ(le(*f, 104 + 16, 8), 136u + 16 + 16);
	const uint64_t d0 = le(*f, 40 + 24, 8);
	EXPECT_EQ(d0 % 8, 0u);
	EXPECT_EQ(le(*f, 40, 8), 5u);
	EXPECT_EQ((*f)[d0 + 4], 5);
	EXPECT_EQ(le(*f, 104, 8), 13u);
	EXPECT_EQ(le(*f, 104 + 8, 8), 9u); // split
	EXPECT_EQ(f->size() % 8, 0u);
}

TEST(QpcContainer, RoundTrip)
{
	std::string err;
	const auto f = write_container(sample(), err);
	ASSERT_TRUE(f) << err;
	const auto c = read_container(*f, err);
	ASSERT_TRUE(c) << err;
	EXPECT_EQ(c->major, 0);
	EXPECT_EQ(c->minor, 1);
	EXPECT_EQ(c->compression, 1);
	EXPECT_EQ(c->base, 0u);
	ASSERT_EQ(c->segments.size(), 3u);
	const auto want = sample();
	for (size_t i = 0; i < want.size(); i++) {
		EXPECT_EQ(c->segments[i].name, want[i].name);
		EXPECT_EQ(c->segments[i].data, want[i].data);
		EXPECT_EQ(c->segments[i].split, want[i].split);
	}
	EXPECT_EQ(c->find("constants.bin"), &c->segments[2]);
	EXPECT_EQ(c->find("nope"), nullptr);
}

// The SDK writes the file from memory: base is the buffer's address and
// every pointer field is that address plus the offset.
TEST(QpcContainer, ReadsPointersRelativeToBase)
{
	std::string err;
	auto f = write_container(sample(), err);
	ASSERT_TRUE(f) << err;
	const uint64_t base = 0x7f12345600;
	set(*f, 16, base, 8);
	set(*f, 32, base + 40, 8);
	for (size_t i = 0; i < 3; i++)
		for (size_t k : {16u, 24u})
			set(*f, 40 + 32 * i + k, le(*f, 40 + 32 * i + k, 8) + base, 8);
	const auto c = read_container(*f, err);
	ASSERT_TRUE(c) << err;
	EXPECT_EQ(c->base, base);
	EXPECT_EQ(c->segments[0].data, sample()[0].data);
	EXPECT_EQ(c->segments[2].name, "constants.bin");
}

TEST(QpcContainer, WriterRefusesBadSegments)
{
	std::string err;
	EXPECT_FALSE(write_container({{"", {}, 0}}, err));
	EXPECT_FALSE(write_container({{"a", {}, 0}, {"a", {}, 0}}, err));
	EXPECT_NE(err.find("twice"), std::string::npos) << err;
	EXPECT_FALSE(write_container({{"a", {1}, 2}}, err));
	EXPECT_NE(err.find("split"), std::string::npos) << err;
	const auto empty = write_container({}, err);
	ASSERT_TRUE(empty);
	EXPECT_EQ(empty->size(), kHeaderSize);
}

void expect_refused(std::vector<uint8_t> f, const std::string &why)
{
	std::string err;
	EXPECT_FALSE(read_container(f, err));
	EXPECT_NE(err.find(why), std::string::npos) << "got: " << err;
}

TEST(QpcContainer, ReaderRefusesDamage)
{
	std::string err;
	const auto good = *write_container(sample(), err);
	auto f = good;
	expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + 39), "truncated");
	f[0] ^= 1;
	expect_refused(f, "bad magic");
	f = good;
	f[4] = 1;
	expect_refused(f, "version");
	f = good;
	set(f, 6, 0, 2);
	expect_refused(f, "compression");
	f = good;
	f.push_back(0);
	expect_refused(f, "header size");
	f = good;
	set(f, 24, 1000, 8);
	expect_refused(f, "count");
	f = good;
	set(f, 32, good.size() - 8, 8);
	expect_refused(f, "segment table");
	f = good;
	set(f, 40 + 16, good.size() + 5, 8);
	expect_refused(f, "name");
	f = good;
	set(f, 40, 1 << 20, 8);
	expect_refused(f, "data");
	f = good;
	set(f, 104 + 8, 14, 8);
	expect_refused(f, "split");
	f = good;
	set(f, 72 + 16, le(good, 40 + 16, 8), 8); // two segments named network.elf
	expect_refused(f, "twice");
	f = good;
	f[le(good, 40 + 16, 8)] = 0; // empty name
	expect_refused(f, "empty name");
	// A name running to the end of the file without a NUL.
	f = good;
	const size_t last = good.size() - 1;
	f[last] = 'x';
	set(f, 40 + 16, last, 8);
	expect_refused(f, "not terminated");
}

} // namespace
} // namespace aic100::qpc
