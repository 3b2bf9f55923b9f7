// SPDX-License-Identifier: GPL-2.0-or-later
// The Sahara protocol's numbers, as the card's SBL and the host's sahara
// driver use them on QAIC_SAHARA: commands, modes, END_OF_IMAGE statuses
// and packet lengths. The card's side of the protocol is the device core's
// (aic100/sahara.h there).
#pragma once

#include <cstdint>

namespace aic100::sahara {

enum Command : uint32_t {
	kHello = 0x01,
	kHelloResp = 0x02,
	kReadData = 0x03,
	kEndOfImage = 0x04,
	kDone = 0x05,
	kDoneResp = 0x06,
	kReset = 0x07,
	kResetResp = 0x08,
	kMemDebug64 = 0x10,
	kMemRead64 = 0x11,
};
enum Mode : uint32_t {
	kModeImageTxPending = 0,
	kModeMemoryDebug = 2,
};
// Status codes of END_OF_IMAGE (the Sahara protocol's NAK values).
enum Status : uint32_t {
	kSuccess = 0x00,
	kInvalidCommand = 0x01,
	kProtocolMismatch = 0x02,
	kInvalidPacketSize = 0x05,
	kUnexpectedImageId = 0x06,
	kInvalidDataSize = 0x08,
	kInvalidImageType = 0x09,
	kInvalidRxLength = 0x0B,
	kInvalidMemoryRead = 0x19,
	kInvalidDataSizeRequest = 0x1A,
	kHashVerificationFailure = 0x22,
};
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kMaxReadLength = 0x80000; // what the host serves per READ_DATA
inline constexpr uint32_t kHelloLength = 0x30;
inline constexpr uint32_t kMemDebug64Length = 0x18;
inline constexpr uint32_t kMemRead64Length = 0x18;
inline constexpr uint32_t kEndOfImageLength = 0x10;

} // namespace aic100::sahara
