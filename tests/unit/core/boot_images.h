// SPDX-License-Identifier: GPL-2.0-or-later
// What the boot tests build their firmware from, and look for in the log.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace aic100::test {

// n bytes that differ with the seed: an image's payload.
inline std::vector<uint8_t> payload(size_t n, uint8_t seed)
{
	std::vector<uint8_t> p(n);
	for (size_t i = 0; i < n; i++)
		p[i] = static_cast<uint8_t>(i * 31 + seed);
	return p;
}

// An SBL's manifest: the count, then the image ids it loads.
inline std::vector<uint8_t> manifest(std::initializer_list<uint32_t> ids)
{
	std::vector<uint8_t> m(4 + 4 * ids.size());
	const uint32_t n = static_cast<uint32_t>(ids.size());
	std::memcpy(m.data(), &n, 4);
	size_t off = 4;
	for (uint32_t id : ids) {
		std::memcpy(m.data() + off, &id, 4);
		off += 4;
	}
	return m;
}

// Whether any line contains s.
inline bool has(const std::vector<std::string> &lines, const std::string &s)
{
	return std::any_of(lines.begin(), lines.end(),
			   [&](const std::string &l) { return l.find(s) != std::string::npos; });
}

} // namespace aic100::test
