// SPDX-License-Identifier: GPL-2.0-or-later
// Adding a section to a workload ELF leaves it loadable and unchanged for
// the card, and the section can be found again.
#include "elf_sections.h"

#include <gtest/gtest.h>

#include <aic100/nsp.h>

#include "workloads.h"

namespace aic100::qpc {
namespace {

std::vector<uint8_t> workload_elf(const char *name)
{
	std::string err;
	auto elf = workloads::build(*workloads::find(name), err);
	EXPECT_TRUE(elf) << err;
	return elf ? *elf : std::vector<uint8_t>{};
}

TEST(QpcElfSections, AddThenFind)
{
	const auto elf = workload_elf("mlp_f32");
	const std::vector<uint8_t> data = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 42};
	std::string err;
	const auto out = add_section(elf, "metadata", data, err);
	ASSERT_TRUE(out) << err;
	const auto got = find_section(*out, "metadata", err);
	ASSERT_TRUE(got) << err;
	EXPECT_EQ(std::vector<uint8_t>(got->begin(), got->end()), data);
	EXPECT_EQ((got->data() - out->data()) % 8, 0);
	// The old sections are still there, with the same contents.
	const auto text0 = find_section(elf, ".aic.text", err), text1 = find_section(*out, ".aic.text", err);
	ASSERT_TRUE(text0 && text1) << err;
	EXPECT_TRUE(std::equal(text0->begin(), text0->end(), text1->begin(), text1->end()));
	// The card sees the same workload.
	const auto a = nsp::parse(elf, err), b = nsp::parse(*out, err);
	ASSERT_TRUE(a && b) << err;
	EXPECT_EQ(a->meta.name, b->meta.name);
	EXPECT_EQ(a->program, b->program);
	ASSERT_EQ(a->segments.size(), b->segments.size());
	for (size_t i = 0; i < a->segments.size(); i++)
		EXPECT_EQ(a->segments[i].data, b->segments[i].data);
	// And a second section goes after the first.
	const auto two = add_section(*out, "other", std::vector<uint8_t>{1}, err);
	ASSERT_TRUE(two) << err;
	EXPECT_TRUE(find_section(*two, "metadata", err));
	EXPECT_TRUE(find_section(*two, "other", err));
	EXPECT_TRUE(nsp::parse(*two, err)) << err;
}

TEST(QpcElfSections, Refusals)
{
	const auto elf = workload_elf("copy");
	std::string err;
	EXPECT_FALSE(find_section(elf, "metadata", err));
	EXPECT_EQ(err, "no section named metadata");
	EXPECT_FALSE(add_section(elf, ".aic.meta", std::vector<uint8_t>{}, err));
	EXPECT_NE(err.find("already"), std::string::npos) << err;
	EXPECT_FALSE(add_section(elf, "", std::vector<uint8_t>{}, err));
	const std::vector<uint8_t> junk(100, 7);
	EXPECT_FALSE(find_section(junk, "x", err));
	EXPECT_EQ(err, "not an ELF file");
	EXPECT_FALSE(add_section(junk, "x", junk, err));
	auto bad = elf;
	bad[62] = 0xFF; // e_shstrndx out of range
	EXPECT_FALSE(find_section(bad, "x", err));
	EXPECT_EQ(err, "no section name table");
	bad = elf;
	bad[40] = 0xF0; // e_shoff past the end
	bad[44] = 0x7F;
	EXPECT_FALSE(find_section(bad, "x", err));
	EXPECT_EQ(err, "no sound section header table");
	bad = elf;
	bad[5] = 2; // big-endian
	EXPECT_FALSE(find_section(bad, "x", err));
}

} // namespace
} // namespace aic100::qpc
