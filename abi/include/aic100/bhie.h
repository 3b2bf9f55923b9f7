// SPDX-License-Identifier: GPL-2.0-or-later
// BHIe, the vector form of the boot host interface: the PBL of an AIC200
// takes sbl.bin from the host as a table of {address, size} segments
// instead of one buffer (upstream Linux loads over BHIe whenever the
// controller's seg_len is set, and qaic sets it for AIC200). Register
// offsets are relative to the block BHIEOFF points at and are those of
// drivers/bus/mhi/common.h; the entry layout is internal.h's
// struct bhi_vec_entry. Where the block sits is the card's choice
// (regs::kBhieBase).
#pragma once

#include <bit>
#include <cstdint>

namespace aic100::bhie {

static_assert(std::endian::native == std::endian::little, "BHIe vector entries are little-endian");

inline constexpr uint32_t MSMSOCID = 0x00;
inline constexpr uint32_t TXVECADDR_LOW = 0x2C;
inline constexpr uint32_t TXVECADDR_HIGH = 0x30;
inline constexpr uint32_t TXVECSIZE = 0x34; // bytes of vector table
inline constexpr uint32_t TXVECDB = 0x3C;
inline constexpr uint32_t TXVECSTATUS = 0x44;
inline constexpr uint32_t RXVECADDR_LOW = 0x60;
inline constexpr uint32_t RXVECADDR_HIGH = 0x64;
inline constexpr uint32_t RXVECSIZE = 0x68;
inline constexpr uint32_t RXVECDB = 0x70;
inline constexpr uint32_t RXVECSTATUS = 0x78;
// Bytes from MSMSOCID through RXVECSTATUS.
inline constexpr uint32_t kBlockSize = RXVECSTATUS + 4;

// TXVECDB and TXVECSTATUS: [29:0] sequence number; TXVECSTATUS [31:30] status.
inline constexpr uint32_t kSeqMask = 0x3FFFFFFF;
inline constexpr unsigned kStatusShift = 30;
inline constexpr uint32_t kStatusReset = 0;
inline constexpr uint32_t kStatusComplete = 2;
inline constexpr uint32_t kStatusError = 3;

// One segment of the image, as the host lists it in the vector table.
struct VecEntry {
	uint64_t dma_addr;
	uint64_t size;
};
static_assert(sizeof(VecEntry) == 16);

} // namespace aic100::bhie
