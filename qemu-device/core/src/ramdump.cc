// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/ramdump.h"

#include <algorithm>
#include <cstring>

#include "aic100/sahara_wire.h"

namespace aic100 {

namespace {

void put64(std::vector<uint8_t> &v, size_t off, uint64_t x)
{
	std::memcpy(v.data() + off, &x, 8);
}

void put_name(std::vector<uint8_t> &v, size_t off, const std::string &s)
{
	std::memcpy(v.data() + off, s.data(), s.size()); // the rest stays NUL
}

// [address, address + length) inside [base, base + size)? Without overflow.
bool inside(uint64_t address, uint64_t length, uint64_t base, uint64_t size)
{
	return address >= base && address - base <= size && length <= size - (address - base);
}

} // namespace

void RamDump::add(std::string description, std::string filename, std::vector<uint8_t> data)
{
	add_shared(std::move(description), std::move(filename),
		   std::make_shared<const std::vector<uint8_t>>(std::move(data)));
}

void RamDump::add_shared(std::string description, std::string filename,
			 std::shared_ptr<const std::vector<uint8_t>> data)
{
	if (!data || data->empty())
		return;
	description.resize(std::min(description.size(), kNameSize - 1));
	filename.resize(std::min(filename.size(), kNameSize - 1));
	const std::span<const uint8_t> view(*data);
	Region r{std::move(description), std::move(filename), std::move(data), view,
		 kTableAddress + kRegionStride * (regions_.size() + 1)};
	const size_t e = table_.size();
	table_.resize(e + kEntrySize, 0);
	put64(table_, e, 0);
	put64(table_, e + 8, r.address);
	put64(table_, e + 16, r.data.size());
	put_name(table_, e + 24, r.description);
	put_name(table_, e + 24 + kNameSize, r.filename);
	regions_.push_back(std::move(r));
}

uint64_t RamDump::total_bytes() const
{
	uint64_t n = table_.size();
	for (const Region &r : regions_)
		n += r.data.size();
	return n;
}

RamDump::Read RamDump::read(uint64_t address, uint64_t length) const
{
	if (length == 0 || length > kMaxRead)
		return {sahara::kInvalidDataSizeRequest, {}};
	if (inside(address, length, kTableAddress, table_.size()))
		return {sahara::kSuccess, std::span(table_).subspan(address - kTableAddress, length)};
	for (const Region &r : regions_) {
		if (inside(address, length, r.address, r.data.size()))
			return {sahara::kSuccess, r.data.subspan(address - r.address, length)};
	}
	return {sahara::kInvalidMemoryRead, {}};
}

} // namespace aic100
