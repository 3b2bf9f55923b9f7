// SPDX-License-Identifier: GPL-2.0-or-later
// The card's DDR: up to 32 GiB of device memory, backed by a sparse host
// mapping (pages cost host memory only once written), with the QSM's
// allocator. Addresses are device addresses from 0 to size().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

namespace aic100 {

class Ddr {
public:
	explicit Ddr(uint64_t size);
	~Ddr();
	Ddr(const Ddr &) = delete;
	Ddr &operator=(const Ddr &) = delete;

	uint64_t size() const { return size_; }
	uint64_t free_bytes() const { return free_bytes_; }
	// Number of free extents: 1 means unfragmented.
	size_t free_extents() const { return free_.size(); }
	// The largest free extent.
	uint64_t largest_free() const;

	static constexpr uint64_t kAlign = 4096;
	static constexpr uint64_t kNoAddress = ~0ull;
	// First fit, kAlign-aligned; kNoAddress when no extent is large enough.
	uint64_t allocate(uint64_t bytes);
	// Returns the extent to the pool and its pages to the host.
	void release(uint64_t addr);
	uint64_t allocation_size(uint64_t addr) const;

	// Bounds-checked access; false (and nothing done) outside [0, size()).
	bool write(uint64_t addr, std::span<const uint8_t> data);
	bool read(uint64_t addr, std::span<uint8_t> out) const;
	// Direct access for the NSPs: nullptr unless [addr, addr+len) is inside.
	uint8_t *span(uint64_t addr, uint64_t len);

private:
	uint64_t size_;
	uint8_t *base_ = nullptr;
	uint64_t free_bytes_;
	std::map<uint64_t, uint64_t> free_; // start -> length
	std::map<uint64_t, uint64_t> used_; // start -> length
};

} // namespace aic100
