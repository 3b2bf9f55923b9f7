// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/dispatcher.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {
namespace {

std::vector<uint32_t> irq_counts(const DeviceBackend &dev)
{
	std::vector<uint32_t> counts;
	for (uint32_t i = 0; i < dev.device_info().num_irqs; i++)
		counts.push_back(dev.irq(i).count);
	return counts;
}

// The server's largest message: a region write of the largest access, or a
// VERSION with up to 64 KiB of JSON, whichever is larger.
uint64_t max_message(uint64_t max_data_xfer)
{
	return sizeof(Header) + sizeof(RegionAccess) + std::max<uint64_t>(max_data_xfer, 64 * 1024);
}

void finish(Reply &r, const Header &req, int error)
{
	if (error)
		r.bytes.resize(sizeof(Header));
	Header h{req.id, req.command, static_cast<uint32_t>(r.bytes.size()), kTypeReply | (error ? kError : 0u),
		 static_cast<uint32_t>(error)};
	std::memcpy(r.bytes.data(), &h, sizeof(h));
	r.send = !(req.flags & kNoReply);
	if (error || !r.send)
		r.fds.clear();
}

}  // namespace

Dispatcher::Dispatcher(DeviceBackend &dev, const Caps &ours)
	: dev_(dev), ours_(ours), validator_(limits_for(ours, ours, false)), dma_(ours.max_dma_maps), irqs_(irq_counts(dev))
{
}

Limits Dispatcher::limits_for(const Caps &offer, const Caps &sent, bool negotiated) const
{
	Limits l;
	l.max_fds = ours_.max_msg_fds;
	l.max_data_xfer = offer.max_data_xfer;
	l.page_size = offer.pgsizes ? uint64_t{1} << std::countr_zero(offer.pgsizes) : 4096;
	l.write_multiple = offer.write_multiple && sent.write_multiple && negotiated;
	l.max_message = max_message(offer.max_data_xfer);
	return l;
}

Reply Dispatcher::handle(std::span<const uint8_t> msg, std::vector<UniqueFd> fds)
{
	Reply r;
	const Verdict v = validator_.check(msg, fds.size());
	if (v.close) {
		r.close = true;
		return r;
	}
	const Header h = load<Header>(msg);
	const auto cmd = static_cast<Command>(h.command);
	// VERSION comes first; a client that skips it is not one we understand.
	if (!negotiated_ && cmd != Command::Version) {
		r.close = true;
		return r;
	}
	r.bytes.resize(sizeof(Header));
	const int error = v.error ? v.error : dispatch(cmd, msg.subspan(sizeof(Header)), fds, r);
	// A client whose VERSION fails gets its errno, then the socket closes.
	if (error && cmd == Command::Version && !negotiated_)
		r.close = true;
	finish(r, h, error);
	return r;
}

int Dispatcher::dispatch(Command cmd, Payload p, std::vector<UniqueFd> &fds, Reply &r)
{
	switch (cmd) {
	case Command::Version:
		return on_version(p, r);
	case Command::DmaMap:
		return on_dma_map(p, fds);
	case Command::DmaUnmap:
		return on_dma_unmap(p, r);
	case Command::DeviceGetInfo:
		return on_device_info(r);
	case Command::GetRegionInfo:
		return on_region_info(p, r);
	case Command::GetIrqInfo:
		return on_irq_info(p, r);
	case Command::SetIrqs:
		return on_set_irqs(p, fds);
	case Command::RegionRead:
		return on_region_read(p, r);
	case Command::RegionWrite:
		return on_region_write(p, r);
	case Command::RegionWriteMulti:
		return on_write_multi(p, r);
	case Command::DeviceReset:
		return dev_.reset();
	default:
		return ENOSYS;  // the validator lets none through
	}
}

// The reply has major 0, minor 0 and, when the client sent capabilities,
// ours in no more bytes than the client's took: QEMU reads the reply into
// its request's buffer and drops a longer one.
int Dispatcher::on_version(Payload p, Reply &r)
{
	const Version v = load<Version>(p);
	const auto json = p.subspan(sizeof(Version));
	std::optional<Caps> client = Caps{};
	if (!json.empty())
		client = parse_caps(std::string_view(reinterpret_cast<const char *>(json.data()), json.size() - 1));
	Caps offer = ours_;
	if (client) {
		offer.max_data_xfer = std::min(ours_.max_data_xfer, client->max_data_xfer);
		offer.pgsizes = ours_.pgsizes & client->pgsizes;
		offer.max_dma_maps = std::min(ours_.max_dma_maps, client->max_dma_maps);
		offer.write_multiple = ours_.write_multiple && client->write_multiple;
	}
	if (negotiated_ || v.major != kMajor || !client || offer.max_data_xfer == 0 || offer.pgsizes == 0 ||
	    offer.max_dma_maps == 0)
		return EINVAL;
	const std::string text = json.empty() ? std::string() : write_caps(offer, json.size(), sent_);
	if (text.empty())
		sent_ = Caps{};
	append(r.bytes, Version{kMajor, kMinor});
	r.bytes.insert(r.bytes.end(), text.begin(), text.end());
	if (!text.empty())
		r.bytes.push_back(0);
	client_ = *client;
	negotiated_ = true;
	validator_.set_limits(limits_for(offer, sent_, true));
	dma_.set_max_regions(offer.max_dma_maps);
	return 0;
}

int Dispatcher::on_dma_map(Payload p, std::vector<UniqueFd> &fds)
{
	const DmaMap m = load<DmaMap>(p);
	if (const int e = dma_.check_insert(m.address, m.size))
		return e;
	DmaRegion r;
	r.address = m.address;
	r.size = m.size;
	r.prot = m.flags;
	if (!fds.empty()) {
		r.offset = m.offset;
		r.fd = std::move(fds[0]);
	}
	if (const int e = dev_.dma_mapped(r))
		return e;
	return dma_.insert(std::move(r));
}

// A region leaves the table only once the backend has let go of it. The
// spec asks for a range that matches one map exactly; QEMU's client, whose
// container code is the kernel vfio's, unmaps as Linux's type1 IOMMU does:
// behind intel-iommu it sends power-of-two ranges that hold several maps
// or none (docs/vfio-user.md), so the server answers as type1 would.
int Dispatcher::on_dma_unmap(Payload p, Reply &r)
{
	DmaUnmap u = load<DmaUnmap>(p);
	const auto let_go = [&](DmaRegion &region) { dev_.dma_unmapping(region); };
	if (u.flags & kUnmapAll)
		dma_.clear(let_go);
	else if (const int e = dma_.remove_within(u.address, u.size, let_go))
		return e;
	u.argsz = sizeof(DmaUnmap);
	append(r.bytes, u);
	return 0;
}

int Dispatcher::on_device_info(Reply &r)
{
	DeviceInfo info = dev_.device_info();
	info.argsz = sizeof(DeviceInfo);
	append(r.bytes, info);
	return 0;
}

int Dispatcher::on_irq_info(Payload p, Reply &r)
{
	IrqInfo q = load<IrqInfo>(p);
	if (q.index >= irqs_.indices())
		return EINVAL;
	const IrqDesc d = dev_.irq(q.index);
	append(r.bytes, IrqInfo{sizeof(IrqInfo), d.flags, q.index, irqs_.vectors(q.index)});
	return 0;
}

void Dispatcher::disconnect()
{
	dma_.clear([&](DmaRegion &region) { dev_.dma_unmapping(region); });
	for (uint32_t i = 0; i < irqs_.indices(); i++) {
		if (irqs_.assigned(i)) {
			irqs_.disable(i);
			dev_.irq_eventfds_changed(i);
		}
	}
	negotiated_ = false;
	client_ = sent_ = Caps{};
	validator_.set_limits(limits_for(ours_, ours_, false));
	dma_.set_max_regions(ours_.max_dma_maps);
}

}  // namespace aic100::vfio_user
