// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian words in the byte packets the tests build and read (Sahara,
// time sync, NNC): what the card's protocols put on the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace aic100::test {

// A packet of len bytes starting with the words w, the rest zero.
inline std::vector<uint8_t> words(std::initializer_list<uint32_t> w, size_t len)
{
	std::vector<uint8_t> v(len, 0);
	size_t off = 0;
	for (uint32_t x : w) {
		std::memcpy(v.data() + off, &x, 4);
		off += 4;
	}
	return v;
}

// The word (dword) at off, or 0 past the end.
inline uint32_t word(const std::vector<uint8_t> &v, size_t off)
{
	uint32_t x = 0;
	if (off + 4 <= v.size())
		std::memcpy(&x, v.data() + off, 4);
	return x;
}

inline uint64_t dword(const std::vector<uint8_t> &v, size_t off)
{
	uint64_t x = 0;
	if (off + 8 <= v.size())
		std::memcpy(&x, v.data() + off, 8);
	return x;
}

} // namespace aic100::test
