// SPDX-License-Identifier: GPL-2.0-or-later
// The two commands the server sends: DMA_READ and DMA_WRITE, for client
// memory the client shared no fd for. QEMU's client (10.1 to 11.1 at
// least) lays them out unlike the spec (docs/vfio-user.md, "DMA_READ and
// DMA_WRITE in QEMU"), so each function takes the layout to use.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace aic100::vfio_user {

enum class DmaLayout {
	// address u64, count u64, data from payload offset 16: the spec's, and
	// what QEMU 11.1.3's client reads and writes (docs/vfio-user.md)
	Spec,
	// address u64, count u32, data from payload offset 12, 4 bytes of
	// padding after it: QEMU's client as read in its 2025 source (10.x)
	Qemu10,
};

std::vector<uint8_t> dma_read_request(uint16_t id, uint64_t address, uint32_t count, DmaLayout layout);
std::vector<uint8_t> dma_write_request(uint16_t id, uint64_t address, std::span<const uint8_t> data,
				       DmaLayout layout);

// The reply to the request above, checked: 0 (DMA_READ: the data copied
// to `out`, whose size is the count asked for), the errno of an error
// reply, or -1 when it is no reply to that request (the stream is lost).
int dma_read_reply(std::span<const uint8_t> reply, uint16_t id, uint64_t address, std::span<uint8_t> out,
		   DmaLayout layout);
int dma_write_reply(std::span<const uint8_t> reply, uint16_t id, uint64_t address, uint32_t count, DmaLayout layout);

}  // namespace aic100::vfio_user
