// SPDX-License-Identifier: GPL-2.0-or-later
// The semaphores of a DBC as programs and hosts name them: how many, how
// large their values get, and the numbers of the operations on them, which
// DMA Bridge requests (aic100/dbc.h), QPC metadata and NSP programs all
// carry. The semaphores themselves are the device core's (Semaphores).
#pragma once

#include <cstdint>

namespace aic100::sem {

inline constexpr unsigned kCount = 32;
inline constexpr uint16_t kMax = 0xFFF; // 12-bit values

enum class Op : uint8_t { Nop = 0, Init = 1, Inc = 2, Dec = 3, WaitEq = 4, WaitGe = 5, WaitGt0 = 6 };

} // namespace aic100::sem
