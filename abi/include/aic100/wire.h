// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian wire fields in byte buffers (the card and its hosts are
// little-endian): unaligned loads and stores by memcpy, shared by every
// protocol the firmware speaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace aic100::wire {

// The T at byte `off` of `m`; the caller has checked that it fits.
template <typename T> T load(std::span<const uint8_t> m, size_t off = 0)
{
	T v;
	std::memcpy(&v, m.data() + off, sizeof(T));
	return v;
}

template <typename T> void store(uint8_t *p, size_t off, T v)
{
	std::memcpy(p + off, &v, sizeof(T));
}

template <typename T> void append(std::vector<uint8_t> &out, T v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	out.insert(out.end(), p, p + sizeof(T));
}

} // namespace aic100::wire
