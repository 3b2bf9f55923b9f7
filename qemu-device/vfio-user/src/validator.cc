// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/validator.h"

#include <bit>
#include <cerrno>
#include <cstring>

#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {

int check_argsz(std::span<const uint8_t> p, size_t fixed)
{
	if (p.size() < fixed)
		return EINVAL;
	return load<uint32_t>(p) < fixed ? EINVAL : 0;
}

Verdict Validator::check(std::span<const uint8_t> msg, size_t nfds) const
{
	const Verdict v = check_header(msg, nfds);
	if (!v.ok())
		return v;
	const Header h = load<Header>(msg);
	return {check_payload(static_cast<Command>(h.command), msg.subspan(sizeof(Header)), nfds), false};
}

// Framing errors close the connection: after them the next header cannot
// be found. A command the server will not act on gets an errno.
Verdict Validator::check_header(std::span<const uint8_t> msg, size_t nfds) const
{
	if (msg.size() < sizeof(Header))
		return {0, true};
	const Header h = load<Header>(msg);
	if (h.size != msg.size() || h.size > limits_.max_message)
		return {0, true};
	// The server sends no command yet whose reply it waits for.
	if ((h.flags & kTypeMask) != kTypeCommand)
		return {0, true};
	if ((h.flags & ~kKnownFlags) || (h.flags & kError))
		return {EINVAL, false};
	if (nfds > limits_.max_fds)
		return {EINVAL, false};
	return {};
}

int Validator::check_payload(Command cmd, std::span<const uint8_t> p, size_t nfds) const
{
	switch (cmd) {
	case Command::Version:
		return check_version(p, nfds);
	case Command::DmaMap:
		return check_dma_map(p, nfds);
	case Command::DmaUnmap:
		return check_dma_unmap(p, nfds);
	case Command::DeviceGetInfo:
		return nfds ? EINVAL : check_argsz(p, sizeof(DeviceInfo));
	case Command::GetRegionInfo:
		return nfds ? EINVAL : check_argsz(p, sizeof(RegionInfo));
	case Command::GetIrqInfo:
		return nfds ? EINVAL : check_argsz(p, sizeof(IrqInfo));
	case Command::SetIrqs:
		return check_set_irqs(p, nfds);
	case Command::RegionRead:
		return check_region_read(p, nfds);
	case Command::RegionWrite:
		return check_region_write(p, nfds);
	case Command::RegionWriteMulti:
		return check_write_multi(p, nfds);
	case Command::DeviceReset:
		return nfds || !p.empty() ? EINVAL : 0;
	default:
		// GET_REGION_IO_FDS, DEVICE_FEATURE, migration, the server's own
		// DMA_READ/WRITE, numbers nobody defined.
		return ENOSYS;
	}
}

// major, minor, then nothing or a NUL-terminated text with no other NUL.
int Validator::check_version(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds || p.size() < sizeof(Version))
		return EINVAL;
	const auto json = p.subspan(sizeof(Version));
	if (json.empty())
		return 0;
	if (json.back() != 0 || std::memchr(json.data(), 0, json.size()) != &json.back())
		return EINVAL;
	return 0;
}

int Validator::check_dma_map(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds > 1 || check_argsz(p, sizeof(DmaMap)))
		return EINVAL;
	const DmaMap m = load<DmaMap>(p);
	if ((m.flags & ~(kDmaRead | kDmaWrite)) || m.size == 0 || m.address + (m.size - 1) < m.address)
		return EINVAL;
	if (!aligned(m.address) || !aligned(m.size) || (nfds && !aligned(m.offset)))
		return EINVAL;
	if (nfds && m.offset + (m.size - 1) < m.offset)
		return EINVAL;
	return 0;
}

int Validator::check_dma_unmap(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds || check_argsz(p, sizeof(DmaUnmap)))
		return EINVAL;
	const DmaUnmap u = load<DmaUnmap>(p);
	if (u.flags & ~(kUnmapAll | kUnmapDirtyBitmap))
		return EINVAL;
	if (u.flags & kUnmapDirtyBitmap)
		return ENOTSUP;  // no dirty page tracking
	if (u.flags & kUnmapAll)
		return u.address || u.size ? EINVAL : 0;
	if (u.size == 0 || u.address + (u.size - 1) < u.address)
		return EINVAL;
	return aligned(u.address) && aligned(u.size) ? 0 : EINVAL;
}

// One DATA_* and one ACTION_* bit. Eventfds only trigger, and come one per
// vector or not at all (de-assign); DATA_BOOL brings count bytes; count 0
// only as DATA_NONE|TRIGGER at start 0 (every vector off).
int Validator::check_set_irqs(std::span<const uint8_t> p, size_t nfds) const
{
	if (check_argsz(p, sizeof(IrqSet)))
		return EINVAL;
	const IrqSet s = load<IrqSet>(p);
	const uint32_t data = s.flags & kIrqDataMask, action = s.flags & kIrqActionMaskAll;
	if ((s.flags & ~(kIrqDataMask | kIrqActionMaskAll)) || std::popcount(data) != 1 || std::popcount(action) != 1)
		return EINVAL;
	if (uint64_t{s.start} + s.count > UINT32_MAX)
		return EINVAL;
	if (s.count == 0)
		return data == kIrqDataNone && action == kIrqActionTrigger && s.start == 0 && !nfds ? 0 : EINVAL;
	switch (data) {
	case kIrqDataEventfd:
		return action == kIrqActionTrigger && (nfds == 0 || nfds == s.count) ? 0 : EINVAL;
	case kIrqDataBool:
		return !nfds && p.size() - sizeof(IrqSet) >= s.count ? 0 : EINVAL;
	default:
		return nfds ? EINVAL : 0;
	}
}

int Validator::check_access(uint64_t offset, uint64_t count) const
{
	if (count == 0 || offset + count < offset)
		return EINVAL;
	return count > limits_.max_data_xfer ? E2BIG : 0;
}

int Validator::check_region_read(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds || p.size() != sizeof(RegionAccess))
		return EINVAL;
	const RegionAccess a = load<RegionAccess>(p);
	return check_access(a.offset, a.count);
}

int Validator::check_region_write(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds || p.size() < sizeof(RegionAccess))
		return EINVAL;
	const RegionAccess a = load<RegionAccess>(p);
	if (const int e = check_access(a.offset, a.count))
		return e;
	return p.size() - sizeof(RegionAccess) == a.count ? 0 : EINVAL;
}

int Validator::check_write_multi(std::span<const uint8_t> p, size_t nfds) const
{
	if (nfds || !limits_.write_multiple || p.size() < sizeof(WriteMulti))
		return EINVAL;
	const uint64_t n = load<WriteMulti>(p).wr_cnt;
	if (n == 0 || n > kWriteMultiMax || p.size() != sizeof(WriteMulti) + n * sizeof(WriteMultiEntry))
		return EINVAL;
	for (uint64_t i = 0; i < n; i++) {
		const auto e = load<WriteMultiEntry>(p, sizeof(WriteMulti) + i * sizeof(WriteMultiEntry));
		if (e.count > kWriteMultiData || check_access(e.offset, e.count))
			return EINVAL;
	}
	return 0;
}

}  // namespace aic100::vfio_user
