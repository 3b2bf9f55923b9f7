// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian fields of 1 to 8 bytes, as the container and the network
// ELF's metadata store them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aic100::qpc::le {

inline void put(std::vector<uint8_t> &f, size_t off, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		f[off + i] = uint8_t(v >> (8 * i));
}

inline uint64_t get(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= uint64_t(p[i]) << (8 * i);
	return v;
}

} // namespace aic100::qpc::le
