// SPDX-License-Identifier: GPL-2.0-or-later
// What the vfio-user protocol layer asks of the device behind it. The
// dispatcher has checked every argument against the device's own region
// and IRQ descriptions before it calls: a region access lies inside its
// region and has 1 to max_data_xfer_size bytes, an IRQ range lies inside
// its index. Errors are positive errnos, sent to the client as they are.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/dma_map.h"

namespace aic100::vfio_user {

struct RegionDesc {
	uint32_t flags = 0;  // kRegionRead | kRegionWrite | kRegionMmap
	uint64_t size = 0;
	uint64_t mmap_offset = 0;        // RegionInfo::offset
	std::vector<SparseArea> areas;  // mmappable parts; empty with kRegionMmap: the whole region
	int fd = -1;                     // for kRegionMmap; the backend keeps it open
};

struct IrqDesc {
	uint32_t flags = 0;  // kIrqEventfd, kIrqMaskable, ...
	uint32_t count = 0;
};

class DeviceBackend {
public:
	virtual ~DeviceBackend() = default;

	// flags (kDeviceReset, kDevicePci), num_regions, num_irqs; argsz unused.
	virtual DeviceInfo device_info() const = 0;
	virtual RegionDesc region(uint32_t index) const = 0;
	virtual IrqDesc irq(uint32_t index) const = 0;

	// Regions other than PCI config space (the BARs, the ROM).
	virtual int region_read(uint32_t index, uint64_t offset, std::span<uint8_t> out) = 0;
	virtual int region_write(uint32_t index, uint64_t offset, std::span<const uint8_t> in) = 0;
	// Region kConfigRegion.
	virtual int config_read(uint64_t offset, std::span<uint8_t> out) = 0;
	virtual int config_write(uint64_t offset, std::span<const uint8_t> in) = 0;

	// SET_IRQS without eventfds (DATA_NONE or DATA_BOOL with count > 0):
	// mask, unmask or trigger vectors; `bools` has count bytes for DATA_BOOL.
	virtual int irq_action(const IrqSet &set, std::span<const uint8_t> bools) = 0;
	// The eventfds of `index` changed (assigned, de-assigned, all dropped).
	virtual void irq_eventfds_changed(uint32_t index) = 0;

	// A region was mapped: the backend may mmap its fd and set r.host; an
	// error undoes the DMA_MAP.
	virtual int dma_mapped(DmaRegion &r) = 0;
	// A region goes: before this returns, no DMA into it is in flight and
	// nothing keeps r.host (the backend unmaps it).
	virtual void dma_unmapping(DmaRegion &r) = 0;

	// DEVICE_RESET; DMA regions and eventfds stay.
	virtual int reset() = 0;
};

}  // namespace aic100::vfio_user
