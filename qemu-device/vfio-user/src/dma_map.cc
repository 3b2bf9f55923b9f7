// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/vfio_user/dma_map.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "aic100/vfio_user.h"

namespace aic100::vfio_user {

const DmaRegion *DmaMapTable::at(uint64_t address) const
{
	auto it = regions_.upper_bound(address);
	if (it == regions_.begin())
		return nullptr;
	--it;
	return address <= it->second.last() ? &it->second : nullptr;
}

int DmaMapTable::check_insert(uint64_t address, uint64_t size) const
{
	const uint64_t last = address + (size - 1);
	// The region that starts at or after the new one, and the one before it.
	const auto next = regions_.lower_bound(address);
	if (next != regions_.end() && next->first <= last)
		return EEXIST;
	if (next != regions_.begin() && std::prev(next)->second.last() >= address)
		return EEXIST;
	return regions_.size() >= max_regions_ ? ENOSPC : 0;
}

DmaRegion *DmaMapTable::exact(uint64_t address, uint64_t size)
{
	const auto it = regions_.find(address);
	return it != regions_.end() && it->second.size == size ? &it->second : nullptr;
}

int DmaMapTable::insert(DmaRegion &&r)
{
	if (const int e = check_insert(r.address, r.size))
		return e;
	const uint64_t address = r.address;
	regions_.emplace(address, std::move(r));
	return 0;
}

int DmaMapTable::remove(uint64_t address, uint64_t size, DmaRegion &out)
{
	const auto it = regions_.find(address);
	if (it == regions_.end() || it->second.size != size)
		return ENOENT;
	out = std::move(it->second);
	regions_.erase(it);
	return 0;
}

int DmaMapTable::remove_within(uint64_t address, uint64_t size, const std::function<void(DmaRegion &)> &each)
{
	const uint64_t last = address + (size - 1);
	const DmaRegion *head = at(address), *tail = at(last);
	if ((head && head->address < address) || (tail && tail->last() > last))
		return EINVAL;
	auto it = regions_.lower_bound(address);
	while (it != regions_.end() && it->first <= last) {
		each(it->second);
		it = regions_.erase(it);
	}
	return 0;
}

void DmaMapTable::clear(const std::function<void(DmaRegion &)> &each)
{
	for (auto &[address, r] : regions_)
		each(r);
	regions_.clear();
}

DmaTarget DmaMapTable::find(uint64_t address, uint64_t len, bool write) const
{
	const DmaRegion *r = at(address);
	if (!r || len == 0)
		return {};
	const uint64_t in_region = r->last() - address + 1;  // at least 1, no overflow
	DmaTarget t;
	t.len = std::min(len, in_region);
	if (!(r->prot & (write ? kDmaWrite : kDmaRead)))
		t.kind = DmaTarget::Kind::Denied;
	else if (r->host)
		t = {DmaTarget::Kind::Memory, r->host + (address - r->address), t.len};
	else
		t.kind = DmaTarget::Kind::Message;
	return t;
}

}  // namespace aic100::vfio_user
