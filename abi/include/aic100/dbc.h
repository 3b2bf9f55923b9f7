// SPDX-License-Identifier: GPL-2.0-or-later
// The DMA Bridge Channels' elements in host memory (docs/dma-bridge.md):
// the 64-byte request the host queues, the 32-byte descriptors of a
// linked-list transfer and the 4-byte response the card writes back, with
// the semaphore commands a request carries. The DMA Bridge that works them
// is the device core's (aic100/dma_bridge.h there).
#pragma once

#include <bit>
#include <cstdint>

#include "aic100/sem.h"

namespace aic100::dbc {

static_assert(std::endian::native == std::endian::little, "DBC elements are little-endian");

// Request element fields.
inline constexpr uint8_t kCmdForceMsi = 1u << 7;
inline constexpr uint8_t kCmdResponse = 1u << 4;
inline constexpr uint8_t kCmdTransferMask = 3;
inline constexpr uint8_t kCmdBulk = 1u << 3;
inline constexpr uint8_t kDbEnable = 1u << 7;
inline constexpr uint32_t kSemEnable = 1u << 31;
// The fences hold whether or not the word's command is enabled: qaic sets
// them on a word whose command is NOP.
inline constexpr uint32_t kSemFenceToDev = 1u << 30;
inline constexpr uint32_t kSemFenceFromDev = 1u << 29;
inline constexpr uint32_t kSemPresync = 1u << 22;

struct __attribute__((packed)) Request {
	uint16_t req_id;
	uint8_t seq_id;
	uint8_t cmd;
	uint32_t reserved0;
	uint64_t src;
	uint64_t dest;
	uint32_t len;
	uint32_t reserved1;
	uint64_t db_addr;
	uint8_t db_len;
	uint8_t reserved2[3];
	uint32_t db_data;
	uint32_t sem[4];
};
static_assert(sizeof(Request) == 64);

// One element of a linked-list transfer, in host memory.
struct __attribute__((packed)) LinkedDescriptor {
	uint64_t host; // host bus address
	uint64_t dev;  // device address
	uint32_t len;
	uint32_t reserved;
	uint64_t next; // host bus address of the next descriptor, 0 at the end
};
static_assert(sizeof(LinkedDescriptor) == 32);

// A semaphore command word of sem[]: the operation, the semaphore and the
// value (bits 26:24, 20:16 and 11:0).
constexpr sem::Op sem_op(uint32_t s)
{
	return static_cast<sem::Op>((s >> 24) & 7);
}
constexpr unsigned sem_index(uint32_t s)
{
	return (s >> 16) & 0x1F;
}
constexpr uint16_t sem_value(uint32_t s)
{
	return static_cast<uint16_t>(s & 0xFFF);
}

// Response element: the request's req_id and how it ended.
struct Response {
	uint16_t req_id;
	uint16_t status;
};
static_assert(sizeof(Response) == 4);

// Status codes of response elements.
enum Status : uint16_t {
	kOk = 0,
	kIllegalTransfer = 1, // transfer type 3
	kUnalignedDoorbell = 2,
	kHostDmaFault = 3,    // host address outside guest memory
	kOutsideWindow = 4,   // device address outside the workload's DDR
	kTwoPresyncs = 5,
	kBadSemaphore = 6,    // a wait as postsync, or an unknown command
	kBadList = 7,         // a linked list longer than allowed (or a loop)
};

} // namespace aic100::dbc
