// SPDX-License-Identifier: GPL-2.0-or-later
// The client memory the server may reach, as DMA_MAP and DMA_UNMAP describe
// it: ranges of client (guest bus) addresses, each with the fd the client
// shared it through (or none: then only DMA_READ/DMA_WRITE messages reach
// it) and, once the front end has mmapped that fd, where it is here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "aic100/vfio_user/unique_fd.h"

namespace aic100::vfio_user {

struct DmaRegion {
	uint64_t address = 0;
	uint64_t size = 0;
	uint64_t offset = 0;  // into fd's file
	uint32_t prot = 0;    // kDmaRead | kDmaWrite
	UniqueFd fd;          // invalid: no shared memory
	uint8_t *host = nullptr;  // the mapping of fd here, set by the front end

	uint64_t last() const { return address + (size - 1); }
};

// How the server reaches `len` bytes at a client address: through memory it
// mapped, through messages, or not at all. `len` is how many of the bytes
// asked for lie in the one region found (a range across two regions is
// reached in two steps).
struct DmaTarget {
	enum class Kind { Memory, Message, Unmapped, Denied };
	Kind kind = Kind::Unmapped;
	uint8_t *host = nullptr;  // for Memory: the first byte
	uint64_t len = 0;
};

class DmaMapTable {
public:
	explicit DmaMapTable(uint64_t max_regions) : max_regions_(max_regions) {}

	// 0, or EEXIST when the range overlaps a region, ENOSPC when the table
	// is full. Size and overflow are the caller's to check (size > 0,
	// address + size - 1 within 64 bits).
	int insert(DmaRegion &&r);
	// What insert() would answer for [address, address + size), without
	// inserting.
	int check_insert(uint64_t address, uint64_t size) const;
	// The region at exactly [address, address + size), or none.
	DmaRegion *exact(uint64_t address, uint64_t size);
	// Takes out the region at exactly [address, address + size): 0, or
	// ENOENT when no region has that start and size.
	int remove(uint64_t address, uint64_t size, DmaRegion &out);
	// Takes out every region inside [address, address + size), each handed
	// to `each` before it goes, as Linux's type1 IOMMU unmaps: 0 also when
	// there is none; EINVAL, and nothing taken, when a region lies across
	// either end (the range would cut it in two).
	int remove_within(uint64_t address, uint64_t size, const std::function<void(DmaRegion &)> &each);
	// Every region, each handed to `each` before it goes.
	void clear(const std::function<void(DmaRegion &)> &each);

	DmaTarget find(uint64_t address, uint64_t len, bool write) const;
	const DmaRegion *at(uint64_t address) const;
	size_t size() const { return regions_.size(); }
	void set_max_regions(uint64_t n) { max_regions_ = n; }

private:
	std::map<uint64_t, DmaRegion> regions_;  // by address
	uint64_t max_regions_;
};

}  // namespace aic100::vfio_user
