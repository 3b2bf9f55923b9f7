// SPDX-License-Identifier: GPL-2.0-or-later
// The virtual card's fault-injection mailbox in BAR4 (docs/health.md,
// "Fault injection"), present with -device aic100,test-mailbox=on: its
// registers as a guest program sees them. The card's side is the device
// core's (Device), the guest's is qaic::Mailbox (tools/libqaic/mailbox.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100::mailbox {

// The command (at most kMaxCommand bytes) at kCommand; writing its length
// to kLength runs it; kStatus then reads kPending until it is kDone or
// kRefused, with the card's message (NUL-terminated) at kMessage.
inline constexpr uint32_t kCommand = 0x000, kLength = 0x100, kStatus = 0x104, kMagic = 0x108, kMessage = 0x200;
inline constexpr uint32_t kMagicValue = 0x584F424D; // "MBOX"
inline constexpr uint32_t kDone = 0, kRefused = 1, kPending = 2;
inline constexpr size_t kBufferSize = 256; // of the command and the message
inline constexpr size_t kMaxCommand = kBufferSize - 1;

} // namespace aic100::mailbox
