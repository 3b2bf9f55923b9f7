// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/firmware.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "aic100/sha256.h"

namespace aic100::fw {
namespace {

constexpr uint64_t kMax = 1u << 20;

std::vector<uint8_t> le32s(std::initializer_list<uint32_t> words)
{
	std::vector<uint8_t> out;
	for (uint32_t w : words)
		for (int i = 0; i < 4; i++)
			out.push_back(uint8_t(w >> (8 * i)));
	return out;
}

Header header_of(const std::vector<uint8_t> &image)
{
	Header h;
	std::memcpy(&h, image.data(), sizeof(h));
	return h;
}

// Recomputes the digest as the format defines it, independently of build(),
// so that a tampered header is judged on its fields and not on its digest.
void resign(std::vector<uint8_t> &image)
{
	const size_t off = offsetof(Header, sha256);
	std::memset(image.data() + off, 0, 32);
	const Sha256Digest d = sha256(image);
	std::memcpy(image.data() + off, d.data(), d.size());
}

class FirmwareTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		payload.resize(1000);
		for (size_t i = 0; i < payload.size(); i++)
			payload[i] = uint8_t(i * 31 + 7);
		image = build(5, "qsm", {1, 2, 3, 4}, payload);
		ASSERT_EQ(verify(image, kMax), Error::None);
	}
	// Edits the header of the valid baseline, re-signs it and verifies it.
	template <typename F> Error tampered(F edit)
	{
		std::vector<uint8_t> img = image;
		Header h = header_of(img);
		edit(h);
		std::memcpy(img.data(), &h, sizeof(h));
		resign(img);
		return verify(img, kMax);
	}

	std::vector<uint8_t> payload;
	std::vector<uint8_t> image;
};

TEST_F(FirmwareTest, BuildWritesEveryHeaderField)
{
	ASSERT_EQ(image.size(), kHeaderSize + payload.size());
	const Header h = header_of(image);
	EXPECT_EQ(h.magic, kMagic);
	EXPECT_EQ(std::memcmp(image.data(), "AICF", 4), 0);
	EXPECT_EQ(h.format_version, kFormatVersion);
	EXPECT_EQ(h.header_size, kHeaderSize);
	EXPECT_EQ(h.image_id, 5u);
	EXPECT_EQ(h.flags, 0u);
	EXPECT_EQ(h.payload_size, payload.size());
	EXPECT_EQ(h.version[0], 1);
	EXPECT_EQ(h.version[3], 4);
	EXPECT_STREQ(h.name, "qsm");
	EXPECT_TRUE(std::equal(payload.begin(), payload.end(), image.begin() + kHeaderSize));
	// The digest is over the header with the digest zeroed, then the payload.
	std::vector<uint8_t> copy = image;
	resign(copy);
	EXPECT_EQ(copy, image);
}

TEST_F(FirmwareTest, EmptyPayloadAndLongestNameAreValid)
{
	EXPECT_EQ(verify(build(1, "x", {}, {}), kHeaderSize), Error::None);
	EXPECT_EQ(verify(build(1, std::string(23, 'n'), {}, {}), kMax), Error::None);
}

TEST_F(FirmwareTest, BuildRefusesNamesTheLoadersWouldReject)
{
	EXPECT_THROW(build(1, "", {}, {}), std::invalid_argument);
	EXPECT_THROW(build(1, std::string(24, 'n'), {}, {}), std::invalid_argument);
	EXPECT_THROW(build(1, "tab\there", {}, {}), std::invalid_argument);
}

TEST_F(FirmwareTest, BadHeaderFields)
{
	EXPECT_EQ(tampered([](Header &h) { h.magic ^= 1; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.format_version = 2; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.header_size = 64; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.flags = 1u << 31; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.reserved[39] = 1; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.reserved[0] = 0x80; }), Error::BadHeader);
}

TEST_F(FirmwareTest, BadNames)
{
	EXPECT_EQ(tampered([](Header &h) { std::memset(h.name, 'a', sizeof(h.name)); }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { std::memset(h.name, 0, sizeof(h.name)); }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.name[1] = '\n'; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { h.name[0] = char(0xc3); }), Error::BadHeader);
	// Padding after the terminator must be NUL too.
	EXPECT_EQ(tampered([](Header &h) { h.name[10] = 'x'; }), Error::BadHeader);
	EXPECT_EQ(tampered([](Header &h) { std::memcpy(h.name, "a b-c_d.e", 10); }), Error::None);
}

TEST_F(FirmwareTest, BadDigest)
{
	std::vector<uint8_t> img = image;
	img.back() ^= 0x01;
	EXPECT_EQ(verify(img, kMax), Error::BadDigest);
	img = image;
	img[offsetof(Header, sha256)] ^= 0x80;
	EXPECT_EQ(verify(img, kMax), Error::BadDigest);
	// Fields the header check does not judge are still covered by the digest.
	img = image;
	img[offsetof(Header, version)] ^= 0x01;
	EXPECT_EQ(verify(img, kMax), Error::BadDigest);
	img = image;
	img[offsetof(Header, image_id)] ^= 0x01;
	EXPECT_EQ(verify(img, kMax), Error::BadDigest);
}

TEST_F(FirmwareTest, Truncated)
{
	EXPECT_EQ(verify({}, kMax), Error::Truncated);
	EXPECT_EQ(verify({image.data(), kHeaderSize - 1}, kMax), Error::Truncated);
	EXPECT_EQ(verify({image.data(), kHeaderSize}, kMax), Error::Truncated);
	EXPECT_EQ(verify({image.data(), image.size() - 1}, kMax), Error::Truncated);
}

TEST_F(FirmwareTest, TooLarge)
{
	std::vector<uint8_t> img = image;
	img.push_back(0);
	EXPECT_EQ(verify(img, kMax), Error::TooLarge);
	// The limit covers header + payload, inclusive.
	EXPECT_EQ(verify(image, image.size()), Error::None);
	EXPECT_EQ(verify(image, image.size() - 1), Error::TooLarge);
	EXPECT_EQ(verify(image, 0), Error::TooLarge);
	// Judged before the data length: a huge payload_size is not "truncated".
	EXPECT_EQ(tampered([](Header &h) { h.payload_size = kMax; }), Error::TooLarge);
	EXPECT_EQ(tampered([](Header &h) { h.payload_size = std::numeric_limits<uint64_t>::max(); }),
		  Error::TooLarge);
	EXPECT_EQ(tampered([](Header &h) { h.payload_size = std::numeric_limits<uint64_t>::max() - kHeaderSize + 1; }),
		  Error::TooLarge);
}

TEST_F(FirmwareTest, CheckHeaderAlone)
{
	Header h = header_of(image);
	EXPECT_EQ(check_header(h, kMax), Error::None);
	// No digest check here.
	h.sha256[0] ^= 1;
	EXPECT_EQ(check_header(h, kMax), Error::None);
	EXPECT_EQ(check_header(h, kHeaderSize + payload.size() - 1), Error::TooLarge);
	h.flags = 1;
	EXPECT_EQ(check_header(h, kHeaderSize + payload.size() - 1), Error::BadHeader);
}

TEST_F(FirmwareTest, ErrorNames)
{
	EXPECT_STREQ(error_name(Error::None), "ok");
	EXPECT_STREQ(error_name(Error::BadHeader), "bad header");
	EXPECT_STREQ(error_name(Error::BadDigest), "bad digest");
	EXPECT_STREQ(error_name(Error::Truncated), "truncated");
	EXPECT_STREQ(error_name(Error::TooLarge), "too large");
	EXPECT_STREQ(error_name(Error::DmaFault), "DMA fault");
	EXPECT_STREQ(error_name(Error::WrongImage), "wrong image");
	EXPECT_NE(error_name(Error(99)), nullptr);
	// The numeric values are an interface (BHI ERRCODE, boot log).
	EXPECT_EQ(uint32_t(Error::BadHeader), 1u);
	EXPECT_EQ(uint32_t(Error::WrongImage), 6u);
}

TEST(ManifestTest, Good)
{
	std::vector<uint32_t> ids;
	ASSERT_TRUE(parse_manifest(le32s({2, 1, 2}), ids));
	EXPECT_EQ(ids, (std::vector<uint32_t>{1, 2}));
	ASSERT_TRUE(parse_manifest(le32s({3, 7, 0x12345678, 3}), ids));
	EXPECT_EQ(ids, (std::vector<uint32_t>{7, 0x12345678, 3}));
	ASSERT_TRUE(parse_manifest(le32s({0}), ids));
	EXPECT_TRUE(ids.empty());
}

TEST(ManifestTest, Malformed)
{
	std::vector<uint32_t> ids{42};
	EXPECT_FALSE(parse_manifest({}, ids));
	EXPECT_TRUE(ids.empty());
	const auto count_only = le32s({1});
	ids = {42};
	EXPECT_FALSE(parse_manifest({count_only.data(), 3}, ids));
	EXPECT_TRUE(ids.empty());
	// Short: the count promises more ids than follow.
	EXPECT_FALSE(parse_manifest(le32s({2, 1}), ids));
	auto partial = le32s({1, 1});
	partial.pop_back();
	EXPECT_FALSE(parse_manifest(partial, ids));
	// Too long: trailing bytes after the ids.
	EXPECT_FALSE(parse_manifest(le32s({1, 1, 2}), ids));
	auto trailing = le32s({1, 1});
	trailing.push_back(0);
	ids = {42};
	EXPECT_FALSE(parse_manifest(trailing, ids));
	EXPECT_TRUE(ids.empty());
	// The SBL never loads itself, nor an image twice.
	EXPECT_FALSE(parse_manifest(le32s({2, 1, 0}), ids));
	EXPECT_FALSE(parse_manifest(le32s({2, 1, 1}), ids));
}

TEST(ManifestTest, Limit)
{
	std::vector<uint32_t> want;
	std::vector<uint8_t> m = le32s({kMaxManifestImages});
	for (uint32_t i = 1; i <= kMaxManifestImages; i++) {
		want.push_back(i);
		const auto w = le32s({i});
		m.insert(m.end(), w.begin(), w.end());
	}
	std::vector<uint32_t> ids;
	ASSERT_TRUE(parse_manifest(m, ids));
	EXPECT_EQ(ids, want);

	m = le32s({kMaxManifestImages + 1});
	for (uint32_t i = 1; i <= kMaxManifestImages + 1; i++) {
		const auto w = le32s({i});
		m.insert(m.end(), w.begin(), w.end());
	}
	EXPECT_FALSE(parse_manifest(m, ids));
	EXPECT_TRUE(ids.empty());
	// A count near 2^32 must not wrap the length computation.
	EXPECT_FALSE(parse_manifest(le32s({0x40000000}), ids));
	EXPECT_FALSE(parse_manifest(le32s({0xffffffff}), ids));
}

} // namespace
} // namespace aic100::fw
