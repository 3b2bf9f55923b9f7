// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/dma_messages.h"

#include <cerrno>
#include <cstring>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {
namespace {

// Header, then the address and count in the layout's form; `data` goes
// where the layout reads it.
std::vector<uint8_t> request(Command cmd, uint16_t id, uint64_t address, uint32_t count,
			     std::span<const uint8_t> data, DmaLayout layout)
{
	std::vector<uint8_t> m;
	append(m, Header{id, static_cast<uint16_t>(cmd), 0, kTypeCommand, 0});
	if (layout == DmaLayout::Spec)
		append(m, DmaAccess{address, count});
	else
		append(m, QemuDmaAccess{address, count});
	m.insert(m.end(), data.begin(), data.end());
	if (layout == DmaLayout::Qemu10)
		m.resize(m.size() + (kQemuDmaFixedSize - sizeof(Header) - sizeof(QemuDmaAccess)));
	const auto size = static_cast<uint32_t>(m.size());
	std::memcpy(m.data() + offsetof(Header, size), &size, sizeof(size));
	return m;
}

// -1 unless `reply` is a whole reply to command `cmd` with `id`; then the
// errno of an error reply, or 0.
int check_reply(std::span<const uint8_t> reply, uint16_t id, Command cmd)
{
	if (reply.size() < sizeof(Header))
		return -1;
	const Header h = load<Header>(reply);
	if (h.size != reply.size() || (h.flags & kTypeMask) != kTypeReply || h.id != id ||
	    h.command != static_cast<uint16_t>(cmd))
		return -1;
	if (h.flags & kError)
		return h.error > 0 && h.error < 4096 && h.size == sizeof(Header) ? static_cast<int>(h.error) : EIO;
	return 0;
}

}  // namespace

std::vector<uint8_t> dma_read_request(uint16_t id, uint64_t address, uint32_t count, DmaLayout layout)
{
	return request(Command::DmaRead, id, address, count, {}, layout);
}

std::vector<uint8_t> dma_write_request(uint16_t id, uint64_t address, std::span<const uint8_t> data, DmaLayout layout)
{
	return request(Command::DmaWrite, id, address, static_cast<uint32_t>(data.size()), data, layout);
}

int dma_read_reply(std::span<const uint8_t> reply, uint16_t id, uint64_t address, std::span<uint8_t> out,
		   DmaLayout layout)
{
	if (const int e = check_reply(reply, id, Command::DmaRead))
		return e;
	const bool spec = layout == DmaLayout::Spec;
	const size_t data_at = sizeof(Header) + (spec ? sizeof(DmaAccess) : kQemuDmaDataOffset);
	const size_t size = spec ? data_at + out.size() : kQemuDmaFixedSize + out.size();
	if (reply.size() != size || load<uint64_t>(reply, sizeof(Header)) != address)
		return -1;
	const uint64_t count = spec ? load<uint64_t>(reply, sizeof(Header) + 8) : load<uint32_t>(reply, sizeof(Header) + 8);
	if (count != out.size())
		return -1;
	std::memcpy(out.data(), reply.data() + data_at, out.size());
	return 0;
}

// QEMU answers with the header alone; the spec with the address and count
// (a count of 4 bytes in its table, of 8 in libvfio-user's struct): both
// are taken, and what they hold must match.
int dma_write_reply(std::span<const uint8_t> reply, uint16_t id, uint64_t address, uint32_t count, DmaLayout layout)
{
	if (const int e = check_reply(reply, id, Command::DmaWrite))
		return e;
	const size_t payload = reply.size() - sizeof(Header);
	if (layout == DmaLayout::Qemu10)
		return payload == 0 ? 0 : -1;
	if (payload != 12 && payload != sizeof(DmaAccess))
		return -1;
	return load<uint64_t>(reply, sizeof(Header)) == address && load<uint32_t>(reply, sizeof(Header) + 8) == count
		       ? 0
		       : -1;
}

}  // namespace aic100::vfio_user
