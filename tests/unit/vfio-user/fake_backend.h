// SPDX-License-Identifier: GPL-2.0-or-later
// A DeviceBackend with memory behind each region and a record of every
// call, for the protocol layer's unit tests and its fuzzer. It also checks
// the dispatcher's side of the contract (accesses inside their region,
// IRQ ranges inside their index) and counts each breach in `violations`.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "aic100/vfio_user/backend.h"

namespace aic100::vfio_user::test {

class FakeBackend : public DeviceBackend {
public:
	static constexpr uint64_t kBar0Size = 16 * 1024;
	static constexpr uint64_t kBar2Size = 64 * 1024;
	static constexpr uint64_t kBar4Size = 4096;
	static constexpr uint64_t kConfigSize = 4096;

	FakeBackend()
	{
		mem_[0].resize(kBar0Size);
		mem_[2].resize(kBar2Size);
		mem_[4].resize(kBar4Size);
		mem_[kConfigRegion].resize(kConfigSize);
	}

	DeviceInfo device_info() const override { return {0, kDeviceReset | kDevicePci, kPciRegions, kPciIrqs}; }

	RegionDesc region(uint32_t index) const override
	{
		RegionDesc d;
		const auto it = mem_.find(index);
		if (it == mem_.end())
			return d;  // size 0: not implemented
		d.flags = kRegionRead | kRegionWrite;
		d.size = it->second.size();
		if (index == 2) {
			d.flags |= kRegionMmap;
			d.mmap_offset = 0;
			d.areas = {{0x1000, 0x1000}, {0x3000, 0x1000}};
			d.fd = bar2_fd;
		}
		return d;
	}

	IrqDesc irq(uint32_t index) const override
	{
		static constexpr IrqDesc table[kPciIrqs] = {
			{kIrqEventfd | kIrqMaskable | kIrqAutomasked, 1},  // INTx
			{kIrqEventfd | kIrqNoresize, 32},                    // MSI
			{kIrqEventfd | kIrqNoresize, 0},                     // MSI-X: none
			{kIrqEventfd, 1},                                    // ERR
			{kIrqEventfd, 0},                                    // REQ
		};
		return index < kPciIrqs ? table[index] : IrqDesc{};
	}

	int region_read(uint32_t index, uint64_t offset, std::span<uint8_t> out) override
	{
		if (!inside(index, offset, out.size()) || index == kConfigRegion)
			return violation();
		std::memcpy(out.data(), mem_[index].data() + offset, out.size());
		reads++;
		return read_error;
	}
	int region_write(uint32_t index, uint64_t offset, std::span<const uint8_t> in) override
	{
		if (!inside(index, offset, in.size()) || index == kConfigRegion)
			return violation();
		std::memcpy(mem_[index].data() + offset, in.data(), in.size());
		writes++;
		return 0;
	}
	int config_read(uint64_t offset, std::span<uint8_t> out) override
	{
		config_accesses++;
		return region_read_config(offset, out);
	}
	int config_write(uint64_t offset, std::span<const uint8_t> in) override
	{
		if (!inside(kConfigRegion, offset, in.size()))
			return violation();
		config_accesses++;
		std::memcpy(mem_[kConfigRegion].data() + offset, in.data(), in.size());
		return 0;
	}

	int irq_action(const IrqSet &set, std::span<const uint8_t> bools) override
	{
		if (set.index >= kPciIrqs || uint64_t{set.start} + set.count > irq(set.index).count || set.count == 0)
			return violation();
		if ((set.flags & kIrqDataBool) && bools.size() != set.count)
			return violation();
		actions.push_back(set);
		return 0;
	}
	void irq_eventfds_changed(uint32_t index) override
	{
		if (index >= kPciIrqs)
			violation();
		eventfd_changes[index]++;
	}

	int dma_mapped(DmaRegion &r) override
	{
		if (r.size == 0)
			return violation();
		mapped++;
		return map_error;
	}
	void dma_unmapping(DmaRegion &r) override
	{
		if (r.size == 0)
			violation();
		unmapped.push_back(r.address);
	}
	int reset() override
	{
		resets++;
		return 0;
	}

	std::vector<uint8_t> &memory(uint32_t index) { return mem_[index]; }

	int bar2_fd = -1;
	int read_error = 0;
	int map_error = 0;
	int violations = 0;
	int reads = 0, writes = 0, config_accesses = 0, mapped = 0, resets = 0;
	std::vector<uint64_t> unmapped;
	std::vector<IrqSet> actions;
	std::map<uint32_t, int> eventfd_changes;

private:
	bool inside(uint32_t index, uint64_t offset, uint64_t len) const
	{
		const auto it = mem_.find(index);
		return it != mem_.end() && len >= 1 && offset <= it->second.size() && len <= it->second.size() - offset;
	}
	int region_read_config(uint64_t offset, std::span<uint8_t> out)
	{
		if (!inside(kConfigRegion, offset, out.size()))
			return violation();
		std::memcpy(out.data(), mem_[kConfigRegion].data() + offset, out.size());
		return 0;
	}
	int violation()
	{
		violations++;
		return EIO;
	}

	std::map<uint32_t, std::vector<uint8_t>> mem_;
};

}  // namespace aic100::vfio_user::test
