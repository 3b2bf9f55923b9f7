// SPDX-License-Identifier: GPL-2.0-or-later
// The qaic data path for user space: buffer objects (CREATE_BO, MMAP_BO,
// GEM close), slices (ATTACH_SLICE_BO, DETACH_SLICE_BO), EXECUTE_BO /
// PARTIAL_EXECUTE_BO, WAIT_BO and PERF_STATS_BO. Every call returns 0 or
// -errno, as the driver does.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "qaic.h"
#include "qaic_accel.h"

namespace qaic {

// A buffer object, mapped into this process. Closed (GEM close) and
// unmapped on destruction.
class Bo {
public:
	static std::optional<Bo> create(const Device &dev, uint64_t size, int *err = nullptr);
	Bo(Bo &&o) noexcept;
	Bo &operator=(Bo &&o) noexcept;
	Bo(const Bo &) = delete;
	Bo &operator=(const Bo &) = delete;
	~Bo();

	uint32_t handle() const { return handle_; }
	uint64_t size() const { return size_; }
	uint8_t *data() const { return map_; }
	std::span<uint8_t> bytes() const { return {map_, static_cast<size_t>(size_)}; }

private:
	Bo(const Device &dev, uint32_t handle, uint64_t size, uint8_t *map)
		: dev_(&dev), handle_(handle), size_(size), map_(map) {}
	void release();
	const Device *dev_ = nullptr;
	uint32_t handle_ = 0;
	uint64_t size_ = 0;
	uint8_t *map_ = nullptr;
};

enum Dir : uint32_t { kToDevice = 1, kFromDevice = 2 };

// A semaphore command of a slice (QAIC_SEM_*).
qaic_sem sem(uint8_t cmd, uint8_t index, uint16_t val, bool presync, uint8_t flags = 0);

// Slices of `size` bytes at DDR address `dev_addr` for a copy through the
// card with no program in between: the input counts semaphore `index` up
// once all of it is in DDR, and every request of the output waits for that
// and the last counts it back down. The card's DMA Bridge overlaps requests
// that no fence or semaphore orders, so an unsynchronised read-back may
// run before the input has landed.
struct CopySlices {
	qaic_attach_slice_entry in, out;
};
CopySlices copy_slices(uint64_t size, uint64_t dev_addr, uint8_t index = 0);

int attach_slices(const Device &dev, uint32_t handle, uint32_t dbc, Dir dir,
		  std::span<const qaic_attach_slice_entry> slices);
int detach_slices(const Device &dev, uint32_t handle);
int execute(const Device &dev, uint32_t dbc, std::span<const qaic_execute_entry> bos);
int partial_execute(const Device &dev, uint32_t dbc, std::span<const qaic_partial_execute_entry> bos);
// execute(), tried again while the DBC's FIFO is full (-EAGAIN), for up to
// wait_ms: the last result.
int execute_when_room(const Device &dev, uint32_t dbc, std::span<const qaic_execute_entry> bos, unsigned wait_ms);
// timeout_ms 0: the driver's default (5 s).
int wait(const Device &dev, uint32_t dbc, uint32_t handle, uint32_t timeout_ms = 0);
int perf_stats(const Device &dev, uint32_t dbc, std::span<qaic_perf_stats_entry> entries);

} // namespace qaic
