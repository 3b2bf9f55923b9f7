// SPDX-License-Identifier: GPL-2.0-or-later
// The dispatcher's region and interrupt commands: region info with its
// sparse mmap areas, region reads and writes (single and multiple), and
// SET_IRQS.
#include <cerrno>

#include "aic100/vfio_user/dispatcher.h"
#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {

// The full answer is RegionInfo + the sparse mmap capability. When argsz
// leaves no room for the capability, the reply says how much it needs
// (argsz) and claims neither CAPS nor MMAP: QEMU refuses a CAPS flag whose
// cap_offset is not inside the reply, before it would ask again.
int Dispatcher::on_region_info(Payload p, Reply &r)
{
	const RegionInfo q = load<RegionInfo>(p);
	if (q.index >= dev_.device_info().num_regions)
		return EINVAL;
	const RegionDesc d = dev_.region(q.index);
	std::vector<uint8_t> cap;
	if (!d.areas.empty()) {
		append(cap, SparseMmap{{kCapSparseMmap, kCapSparseMmapVersion, 0}, static_cast<uint32_t>(d.areas.size()), 0});
		for (const SparseArea &a : d.areas)
			append(cap, a);
	}
	RegionInfo out{static_cast<uint32_t>(sizeof(RegionInfo) + cap.size()),
		       d.flags & (kRegionRead | kRegionWrite | kRegionMmap), q.index, 0, d.size, d.mmap_offset};
	const bool fits = q.argsz >= out.argsz;
	if (!fits || d.fd < 0)
		out.flags &= ~kRegionMmap;
	if (fits && !cap.empty()) {
		out.flags |= kRegionCaps;
		out.cap_offset = sizeof(RegionInfo);
	}
	append(r.bytes, out);
	if (fits)
		r.bytes.insert(r.bytes.end(), cap.begin(), cap.end());
	if (out.flags & kRegionMmap)
		r.fds.push_back(d.fd);
	return 0;
}

int Dispatcher::check_region(uint32_t index, uint64_t offset, uint64_t count, uint32_t need) const
{
	if (index >= dev_.device_info().num_regions)
		return EINVAL;
	const RegionDesc d = dev_.region(index);
	if (!(d.flags & need) || offset > d.size || count > d.size - offset)
		return EINVAL;
	return 0;
}

int Dispatcher::on_region_read(Payload p, Reply &r)
{
	const RegionAccess a = load<RegionAccess>(p);
	if (const int e = check_region(a.region, a.offset, a.count, kRegionRead))
		return e;
	append(r.bytes, a);
	const size_t at = r.bytes.size();
	r.bytes.resize(at + a.count);
	const std::span<uint8_t> out(r.bytes.data() + at, a.count);
	return a.region == kConfigRegion ? dev_.config_read(a.offset, out) : dev_.region_read(a.region, a.offset, out);
}

int Dispatcher::write_region(uint32_t index, uint64_t offset, Payload data)
{
	return index == kConfigRegion ? dev_.config_write(offset, data) : dev_.region_write(index, offset, data);
}

int Dispatcher::on_region_write(Payload p, Reply &r)
{
	const RegionAccess a = load<RegionAccess>(p);
	if (const int e = check_region(a.region, a.offset, a.count, kRegionWrite))
		return e;
	if (const int e = write_region(a.region, a.offset, p.subspan(sizeof(RegionAccess), a.count)))
		return e;
	append(r.bytes, a);
	return 0;
}

// Every write is checked before the first is made: a bad entry fails the
// message without leaving half of it done.
int Dispatcher::on_write_multi(Payload p, Reply &r)
{
	const WriteMulti m = load<WriteMulti>(p);
	auto entry = [&](uint64_t i) { return load<WriteMultiEntry>(p, sizeof(WriteMulti) + i * sizeof(WriteMultiEntry)); };
	for (uint64_t i = 0; i < m.wr_cnt; i++) {
		const WriteMultiEntry e = entry(i);
		if (const int err = check_region(e.region, e.offset, e.count, kRegionWrite))
			return err;
	}
	for (uint64_t i = 0; i < m.wr_cnt; i++) {
		const WriteMultiEntry e = entry(i);
		if (const int err = write_region(e.region, e.offset, Payload(e.data, e.count)))
			return err;
	}
	append(r.bytes, m);
	return 0;
}

// Eventfds assign (one per vector) or de-assign (none) a range; count 0
// turns the whole index off; DATA_NONE and DATA_BOOL go to the backend.
int Dispatcher::on_set_irqs(Payload p, std::vector<UniqueFd> &fds)
{
	const IrqSet s = load<IrqSet>(p);
	if (s.index >= irqs_.indices())
		return EINVAL;
	if (s.count == 0) {
		irqs_.disable(s.index);
		dev_.irq_eventfds_changed(s.index);
		return 0;
	}
	if (uint64_t{s.start} + s.count > irqs_.vectors(s.index))
		return EINVAL;
	const IrqDesc d = dev_.irq(s.index);
	if (s.flags & kIrqDataEventfd) {
		if (!(d.flags & kIrqEventfd))
			return EINVAL;
		const int e = fds.empty() ? irqs_.deassign(s.index, s.start, s.count)
					  : irqs_.assign(s.index, s.start, std::move(fds));
		if (!e)
			dev_.irq_eventfds_changed(s.index);
		return e;
	}
	if ((s.flags & (kIrqActionMask | kIrqActionUnmask)) && !(d.flags & kIrqMaskable))
		return EINVAL;
	const Payload bools = (s.flags & kIrqDataBool) ? p.subspan(sizeof(IrqSet), s.count) : Payload();
	return dev_.irq_action(s, bools);
}

}  // namespace aic100::vfio_user
