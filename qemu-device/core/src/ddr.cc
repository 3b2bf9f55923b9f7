// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/ddr.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <sys/mman.h>

namespace aic100 {

Ddr::Ddr(uint64_t size) : size_(size), free_bytes_(size)
{
	// MAP_NORESERVE: the mapping is as large as the card's DDR, but only
	// written pages are ever backed, so 32 GiB fits on a smaller host.
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		throw std::bad_alloc();
	base_ = static_cast<uint8_t *>(p);
	free_[0] = size;
}

Ddr::~Ddr()
{
	munmap(base_, size_);
}

uint64_t Ddr::allocate(uint64_t bytes)
{
	if (bytes == 0 || bytes > size_)
		return kNoAddress;
	const uint64_t len = (bytes + kAlign - 1) & ~(kAlign - 1);
	for (auto it = free_.begin(); it != free_.end(); ++it) {
		if (it->second < len)
			continue;
		const uint64_t addr = it->first, rest = it->second - len;
		free_.erase(it);
		if (rest)
			free_[addr + len] = rest;
		used_[addr] = len;
		free_bytes_ -= len;
		return addr;
	}
	return kNoAddress;
}

void Ddr::release(uint64_t addr)
{
	auto it = used_.find(addr);
	if (it == used_.end())
		return;
	uint64_t start = addr, len = it->second;
	used_.erase(it);
	free_bytes_ += len;
	// Zero for the next owner and give the pages back to the host.
	madvise(base_ + start, len, MADV_DONTNEED);
	// Merge with the neighbours.
	auto next = free_.lower_bound(start);
	if (next != free_.end() && start + len == next->first) {
		len += next->second;
		next = free_.erase(next);
	}
	if (next != free_.begin()) {
		auto prev = std::prev(next);
		if (prev->first + prev->second == start) {
			prev->second += len;
			return;
		}
	}
	free_[start] = len;
}

uint64_t Ddr::largest_free() const
{
	uint64_t m = 0;
	for (const auto &[start, len] : free_)
		m = std::max(m, len);
	return m;
}

uint64_t Ddr::allocation_size(uint64_t addr) const
{
	auto it = used_.find(addr);
	return it == used_.end() ? 0 : it->second;
}

uint8_t *Ddr::span(uint64_t addr, uint64_t len)
{
	if (addr > size_ || len > size_ - addr)
		return nullptr;
	return base_ + addr;
}

bool Ddr::write(uint64_t addr, std::span<const uint8_t> data)
{
	uint8_t *p = span(addr, data.size());
	if (!p)
		return false;
	std::memcpy(p, data.data(), data.size());
	return true;
}

bool Ddr::read(uint64_t addr, std::span<uint8_t> out) const
{
	if (addr > size_ || out.size() > size_ - addr)
		return false;
	std::memcpy(out.data(), base_ + addr, out.size());
	return true;
}

} // namespace aic100
