// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace aic100 {
namespace {

std::string hex(const Sha256Digest &d)
{
	std::string s;
	char b[3];
	for (uint8_t v : d) {
		std::snprintf(b, sizeof(b), "%02x", v);
		s += b;
	}
	return s;
}

std::string hash_str(const std::string &m)
{
	return hex(sha256({reinterpret_cast<const uint8_t *>(m.data()), m.size()}));
}

// FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional").
TEST(Sha256Test, NistVectors)
{
	EXPECT_EQ(hash_str(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	EXPECT_EQ(hash_str("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	EXPECT_EQ(hash_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	EXPECT_EQ(hash_str("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			   "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256Test, MillionAs)
{
	EXPECT_EQ(hash_str(std::string(1000000, 'a')),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	// The same through many odd-sized updates, as a streaming loader feeds it.
	Sha256 s;
	const std::string chunk(997, 'a');
	size_t left = 1000000;
	while (left) {
		const size_t n = std::min(left, chunk.size());
		s.update(chunk.data(), n);
		left -= n;
	}
	EXPECT_EQ(hex(s.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundaries (55/56 bytes: the length still fits
// in the last block or not). Expected values from Python's hashlib.
TEST(Sha256Test, PaddingBoundaries)
{
	const std::pair<size_t, const char *> cases[] = {
		{55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
		{56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
		{63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
		{64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
		{65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
		{119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
		{120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
	};
	for (const auto &[len, want] : cases) {
		std::vector<uint8_t> m(len);
		for (size_t i = 0; i < len; i++)
			m[i] = uint8_t(i * 7 + 3);
		EXPECT_EQ(hex(sha256(m)), want) << "length " << len;
	}
}

TEST(Sha256Test, RandomSplitsMatchOneShot)
{
	std::mt19937 rng(12345);
	for (int round = 0; round < 200; round++) {
		std::vector<uint8_t> m(rng() % 1000);
		for (auto &b : m)
			b = uint8_t(rng());
		const Sha256Digest want = sha256(m);
		Sha256 s;
		size_t off = 0;
		while (off < m.size()) {
			const size_t n = std::min<size_t>(m.size() - off, rng() % 130);
			s.update(m.data() + off, n);
			off += n;
		}
		ASSERT_EQ(s.finish(), want) << "round " << round << ", " << m.size() << " bytes";
	}
}

TEST(Sha256Test, FinishResetsForReuse)
{
	Sha256 s;
	s.update("abc", 3);
	const Sha256Digest first = s.finish();
	s.update("abc", 3);
	EXPECT_EQ(s.finish(), first);
	EXPECT_EQ(hex(s.finish()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

} // namespace
} // namespace aic100
