// SPDX-License-Identifier: GPL-2.0-or-later
// The input of the vfio-user protocol fuzzer: what a client (or a broken
// one) sends the server, and replies to the server's own DMA messages.
//
//   byte 0            configuration: bit 0 negotiate first with QEMU's
//                     VERSION, bit 1 the server offers write_multiple,
//                     bit 2 BAR2 is mmappable (an fd in its region info)
//   then operations, each a byte `op` and its arguments:
//     op % 4 == 0     a message: u8 fds (% 20 of them, /dev/null dups),
//                     u16 length, that many bytes (fewer at the input's
//                     end); op bit 2 writes the length into the header's
//                     size field, bit 3 makes it a command (type 0)
//     op % 4 == 1     the client disconnects
//     op % 4 == 2     a reply to a DMA_READ (op bit 2: DMA_WRITE) of u8
//                     count bytes at u64 address, QEMU's layout when op
//                     bit 3: u16 id, u16 length, that many bytes
//     op % 4 == 3     the server looks up u64 address, u16 length in its
//                     DMA map (op bit 2: for a write)
// Integers are little-endian.
#pragma once

#include <cstdint>
#include <vector>

namespace aic100::vfio_user::fuzz {

inline constexpr uint8_t kCfgNegotiate = 1u << 0;
inline constexpr uint8_t kCfgWriteMultiple = 1u << 1;
inline constexpr uint8_t kCfgMmapBar2 = 1u << 2;

inline constexpr uint8_t kOpMessage = 0;
inline constexpr uint8_t kOpDisconnect = 1;
inline constexpr uint8_t kOpDmaReply = 2;
inline constexpr uint8_t kOpDmaFind = 3;
inline constexpr uint8_t kOpFixSize = 1u << 2;
inline constexpr uint8_t kOpFixType = 1u << 3;
inline constexpr uint8_t kOpDmaWrite = 1u << 2;
inline constexpr uint8_t kOpQemuLayout = 1u << 3;

inline constexpr unsigned kMaxFds = 20;

// Appends one little-endian integer of `bytes` bytes.
inline void put(std::vector<uint8_t> &out, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A whole message operation, its header's size and type left as they are.
inline void put_message(std::vector<uint8_t> &out, const std::vector<uint8_t> &msg, unsigned fds = 0)
{
	out.push_back(kOpMessage);
	out.push_back(static_cast<uint8_t>(fds));
	put(out, msg.size(), 2);
	out.insert(out.end(), msg.begin(), msg.end());
}

}  // namespace aic100::vfio_user::fuzz
