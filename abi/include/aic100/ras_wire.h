// SPDX-License-Identifier: GPL-2.0-or-later
// RAS reports on QAIC_STATUS as the card pushes them and the host's RAS
// client reads them (docs/health.md, "RAS"): the channels, the 104-byte
// message's header values and sizes, and the numbers of error sources,
// types and TSENS thresholds. The message, little-endian:
//   le16 magic; le16 version; le32 seq; u8 type (0 PUSH); u8 id; le16 len
//   le32 result; le32 source; le32 err_type; le32 err_threshold;
//   le32 ce_count; le32 ue_count; le32 intr_num; u8 syndrome[64]
// The card's side is the device core's (aic100/ras.h there).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100::ras {

inline constexpr unsigned kUl = 14, kDl = 15;
inline constexpr uint16_t kMagic = 0x55AA, kVersion = 2;
inline constexpr size_t kHeaderSize = 12, kMessageSize = 104, kSyndromeSize = 64;

enum class Source : uint32_t { SocMem = 0, Pcie = 1, Ddr = 2, SysBus1 = 3, SysBus2 = 4, NspMem = 5, Tsens = 6 };
inline constexpr unsigned kSources = 7;
enum class Type : uint32_t { Ce = 0, Ue = 1, UeNf = 2 };
enum class Threshold : uint32_t { Lower = 0, Upper = 1, Critical = 2 };

} // namespace aic100::ras
