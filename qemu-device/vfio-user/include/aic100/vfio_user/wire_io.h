// SPDX-License-Identifier: GPL-2.0-or-later
// Copying wire structs out of and into byte buffers, never through a cast:
// a received message has no alignment the structs could rely on.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace aic100::vfio_user {

// The T at `off`; the caller has checked that off + sizeof(T) <= p.size().
template <class T> T load(std::span<const uint8_t> p, size_t off = 0)
{
	static_assert(std::is_trivially_copyable_v<T>);
	T v;
	std::memcpy(&v, p.data() + off, sizeof(T));
	return v;
}

template <class T> void append(std::vector<uint8_t> &out, const T &v)
{
	static_assert(std::is_trivially_copyable_v<T>);
	const size_t at = out.size();
	out.resize(at + sizeof(T));
	std::memcpy(out.data() + at, &v, sizeof(T));
}

}  // namespace aic100::vfio_user
