// SPDX-License-Identifier: GPL-2.0-or-later
// MHI data structures in host memory: the 44-byte contexts and the 16-byte
// ring elements, with the field encodings of drivers/bus/mhi/common.h.
// The card and every host we run on are little-endian.
#pragma once

#include <bit>
#include <cstdint>

namespace aic100::mhi {

static_assert(std::endian::native == std::endian::little, "MHI structures are little-endian");

// Contexts pack their 64-bit fields at 4-byte alignment.
struct __attribute__((packed)) ChannelContext {
	uint32_t chcfg;   // [7:0] CHSTATE, [9:8] BRSTMODE, [15:10] POLLCFG
	uint32_t chtype;  // 1 = host to device, 2 = device to host
	uint32_t erindex;
	uint64_t rbase;
	uint64_t rlen;
	uint64_t rp;
	uint64_t wp;
};
struct __attribute__((packed)) EventContext {
	uint32_t intmod;  // [15:8] INTMODC, [31:16] INTMODT (ms)
	uint32_t ertype;
	uint32_t msivec;
	uint64_t rbase;
	uint64_t rlen;
	uint64_t rp;
	uint64_t wp;
};
struct __attribute__((packed)) CommandContext {
	uint32_t reserved[3];
	uint64_t rbase;
	uint64_t rlen;
	uint64_t rp;
	uint64_t wp;
};
static_assert(sizeof(ChannelContext) == 44 && sizeof(EventContext) == 44 && sizeof(CommandContext) == 44);

inline constexpr uint64_t kCtxRpOffset = 28;
inline constexpr uint64_t kCtxWpOffset = 36;
inline constexpr uint64_t kChCtxCfgOffset = 0;

struct RingElement {
	uint64_t ptr;
	uint32_t dword0;
	uint32_t dword1;
};
static_assert(sizeof(RingElement) == 16);

inline constexpr uint64_t kElementSize = sizeof(RingElement);

// Element types, dword1[23:16].
enum class ElementType : uint8_t {
	Nop = 0x01,
	Transfer = 0x02,
	ResetChannel = 0x10,
	StopChannel = 0x11,
	StartChannel = 0x12,
	StateChangeEvent = 0x20,
	CommandCompletionEvent = 0x21,
	TransferEvent = 0x22,
	ExecEnvEvent = 0x40,
};

// Completion codes of events, dword0[31:24].
enum class Completion : uint8_t {
	Success = 0x1,
	Eot = 0x2,
	Overflow = 0x3,
	Eob = 0x4,
	UndefinedError = 0x10,
	BadTre = 0x11,
};

// Channel states in chcfg[7:0].
enum class ChannelState : uint8_t { Disabled = 0, Enabled = 1, Running = 2, Suspended = 3, Stop = 4, Error = 5 };

inline ElementType element_type(const RingElement &e)
{
	return static_cast<ElementType>((e.dword1 >> 16) & 0xFF);
}
inline unsigned command_channel(const RingElement &e)
{
	return e.dword1 >> 24;
}

// Transfer descriptor (TRE) fields.
inline constexpr uint32_t kTreChain = 1u << 0;
inline constexpr uint32_t kTreIeob = 1u << 8;
inline constexpr uint32_t kTreIeot = 1u << 9;
inline constexpr uint32_t kTreBei = 1u << 10;
inline uint32_t tre_length(const RingElement &e)
{
	return e.dword0 & 0xFFFF;
}

inline RingElement state_change_event(uint8_t state)
{
	return {0, uint32_t{state} << 24, uint32_t{0x20} << 16};
}
inline RingElement ee_event(uint8_t ee)
{
	return {0, uint32_t{ee} << 24, uint32_t{0x40} << 16};
}
inline RingElement command_completion(uint64_t cmd_tre, Completion code)
{
	return {cmd_tre, uint32_t{static_cast<uint8_t>(code)} << 24, uint32_t{0x21} << 16};
}
inline RingElement transfer_event(uint64_t tre, Completion code, uint32_t len, unsigned chan)
{
	return {tre, (uint32_t{static_cast<uint8_t>(code)} << 24) | (len & 0xFFFF),
		(uint32_t{static_cast<uint8_t>(chan)} << 24) | (uint32_t{0x22} << 16)};
}

} // namespace aic100::mhi
