// SPDX-License-Identifier: GPL-2.0-or-later
// What QEMU's vfio-user client does with a server's DMA_READ or DMA_WRITE,
// modelled from hw/vfio-user/pci.c (vfio_user_dma_read/_write, QEMU 10.1
// to 11.1 by code reading): it reads the message through its VFIOUserDMARW
// (address u64 at payload 0, count u32 at payload 8, data at payload 12,
// sizeof 32 with the header) whatever layout the server used.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user::test {

struct QemuClientModel {
	std::vector<uint8_t> guest = std::vector<uint8_t>(0x10000);
	uint32_t max_xfer = 1u << 20;  // the server's max_data_xfer_size

	std::vector<uint8_t> error(const Header &req, uint32_t err) const
	{
		std::vector<uint8_t> r;
		append(r, Header{req.id, req.command, sizeof(Header), kTypeReply | kError, err});
		return r;
	}

	std::vector<uint8_t> handle(const std::vector<uint8_t> &msg)
	{
		const Header h = load<Header>(msg);
		if (h.size < kQemuDmaFixedSize)
			return error(h, EINVAL);
		const uint64_t address = load<uint64_t>(msg, sizeof(Header));
		const uint32_t count = load<uint32_t>(msg, sizeof(Header) + 8);
		const size_t data_at = sizeof(Header) + kQemuDmaDataOffset;
		if (address > guest.size() || count > guest.size() - address)
			return error(h, EFAULT);
		if (h.command == static_cast<uint16_t>(Command::DmaRead)) {
			if (count > max_xfer)
				return error(h, E2BIG);
			std::vector<uint8_t> r(msg.begin(), msg.begin() + kQemuDmaFixedSize);
			r.resize(kQemuDmaFixedSize + count);
			std::memcpy(r.data() + data_at, guest.data() + address, count);
			append_header(r, h, static_cast<uint32_t>(r.size()));
			return r;
		}
		if (count > h.size - kQemuDmaFixedSize)
			return error(h, E2BIG);
		std::memcpy(guest.data() + address, msg.data() + data_at, count);
		std::vector<uint8_t> r(sizeof(Header));
		append_header(r, h, sizeof(Header));
		return r;
	}

	static void append_header(std::vector<uint8_t> &r, const Header &req, uint32_t size)
	{
		const Header h{req.id, req.command, size, kTypeReply, req.error};
		std::memcpy(r.data(), &h, sizeof(h));
	}
};

}  // namespace aic100::vfio_user::test
