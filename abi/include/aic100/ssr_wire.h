// SPDX-License-Identifier: GPL-2.0-or-later
// Subsystem restart (SSR) on QAIC_SSR as the card and the host's SSR client
// exchange it (docs/health.md, "SSR"): the channels, the message header and
// commands, the events, the crash dump's table entries and where the dump
// sits in the card's address space. Bodies after the header, all
// little-endian:
//   SSR_EVENT, SSR_EVENT_RSP           le32 event
//   DEBUG_TRANSFER_INFO                le32 resv; le64 tbl_addr; le64 tbl_len
//   DEBUG_TRANSFER_INFO_RSP            le32 ret (0 send the dump, 1 skip it)
//   MEMORY_READ                        le32 resv; le64 addr; le64 len
//   MEMORY_READ_RSP                    le32 resv; u8 data[]
//   DEBUG_TRANSFER_DONE(_RSP)          le32 resv / le32 ret
// The card's side of the exchange is the device core's (aic100/ssr.h there).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100::ssr {

inline constexpr unsigned kUl = 6, kDl = 7;

enum Cmd : uint32_t {
	kDebugTransferInfo = 0x001,
	kDebugTransferInfoRsp = 0x002,
	kMemoryRead = 0x004,
	kMemoryReadRsp = 0x008,
	kDebugTransferDone = 0x010,
	kDebugTransferDoneRsp = 0x020,
	kEvent = 0x100,
	kEventRsp = 0x200,
};
enum Event : uint32_t {
	kNack = 1,
	kBeforeShutdown = 2,
	kAfterShutdown = 4,
	kBeforePowerUp = 8,
	kAfterPowerUp = 16,
};

// `len` is the whole message's, header included.
struct Header {
	uint32_t cmd, len, dbc_id;
};
static_assert(sizeof(Header) == 12);

// A table entry: le64 save_perf (0), mem_base, len; char desc[20],
// filename[20] (NUL-padded).
inline constexpr size_t kTableEntrySize = 64;
inline constexpr size_t kDescSize = 20, kFileNameSize = 20;
// Where the dump's table and regions sit in the card's address space.
inline constexpr uint64_t kDebugBase = 0x0000D00000000000ull;
// Longest MEMORY_READ the card serves.
inline constexpr uint64_t kMaxRead = 64 * 1024;

} // namespace aic100::ssr
