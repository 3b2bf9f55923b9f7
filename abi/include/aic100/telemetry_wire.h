// SPDX-License-Identifier: GPL-2.0-or-later
// Telemetry on QAIC_TELEMETRY as the host asks and the card answers
// (docs/health.md, "Telemetry"): the channels, the 23-byte message's header
// values, the commands and the statuses. Request and response, little-endian:
//   le16 magic; le16 version; le32 seq; u8 type; u8 id; le16 len (11)
//   u8 cmd; u8 cmd_type (kRead, kWrite); u8 status; le64 val
// Units are in docs/health.md. The card's side is the device core's
// (aic100/telemetry.h there).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100::telemetry {

inline constexpr unsigned kUl = 16, kDl = 17;
inline constexpr uint16_t kMagic = 0x55AA, kVersion = 1;
inline constexpr size_t kMessageSize = 23;
inline constexpr uint8_t kTypeReq = 1, kTypeResp = 2;
inline constexpr uint8_t kRead = 0, kWrite = 1;

enum Cmd : uint8_t {
	kSocTemp = 0,
	kSocMaxTemp = 1,
	kBoardTemp = 2,
	kBoardMaxTemp = 3,
	kDdrTemp = 4,
	kWarningTemp = 5,
	kShutdownTemp = 6,
	kCurrentTdp = 7,
	kBoardPower = 8,
	kPowerState = 9,
	kPowerMax = 10,
	kThrottlePercent = 11,
	kThrottleTime = 12,
	kNspBusyNs = 64,
	kNspInferences = 65,
	kNspFaults = 66,
	kNspActive = 67,
};
enum Status : uint8_t { kOk = 0, kUnknownCmd = 1, kReadOnly = 2, kOutOfRange = 3, kMalformed = 4 };

} // namespace aic100::telemetry
