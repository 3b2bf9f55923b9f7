// SPDX-License-Identifier: GPL-2.0-or-later
// A HostInterface for unit tests: sparse fake host memory, a settable clock,
// and records of every MSI and guest error the device produced.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "aic100/host.h"

namespace aic100::test {

class FakeHost : public HostInterface {
public:
	// The card's DMA: runs the on_dma hook first.
	DmaStatus dma_read(uint64_t addr, void *buf, size_t len) override
	{
		if (on_dma && in_memory(addr, len))
			on_dma();
		return peek(addr, buf, len);
	}
	DmaStatus dma_write(uint64_t addr, const void *buf, size_t len) override
	{
		if (on_dma && in_memory(addr, len))
			on_dma();
		return poke(addr, buf, len);
	}

	// The host's own accesses to its memory (test helpers).
	DmaStatus peek(uint64_t addr, void *buf, size_t len)
	{
		if (!in_memory(addr, len))
			return DmaStatus::Error;
		auto *out = static_cast<uint8_t *>(buf);
		if (addr >= zero_from) {
			std::memset(out, 0, len);
			dma_read_bytes += len;
			return DmaStatus::Ok;
		}
		for (size_t i = 0; i < len; i++) {
			auto it = mem.find(addr + i);
			out[i] = it == mem.end() ? 0 : it->second;
		}
		return DmaStatus::Ok;
	}
	DmaStatus poke(uint64_t addr, const void *buf, size_t len)
	{
		if (!in_memory(addr, len))
			return DmaStatus::Error;
		const auto *in = static_cast<const uint8_t *>(buf);
		for (size_t i = 0; i < len; i++)
			mem[addr + i] = in[i];
		return DmaStatus::Ok;
	}
	// Bus addresses at and above not_ram_from are device registers to the
	// card (QEMU would dispatch every 1-8 bytes there), below it RAM.
	DmaExtent dma_extent(uint64_t addr, uint64_t len, bool) const override
	{
		if (addr >= not_ram_from)
			return {false, len};
		return {true, std::min(len, not_ram_from - addr)};
	}
	void raise_msi(unsigned vector) override { msis.push_back(vector); }
	unsigned msi_vectors_enabled() const override { return vectors; }
	uint64_t now_ns() const override { return clock_ns; }
	void guest_error(const char *msg) override { errors.emplace_back(msg); }
	void trace(const char *msg) override { traces.emplace_back(msg); }
	void kick() override { kicks++; }
	void arm_timer(uint64_t deadline_ns) override { deadline = deadline_ns; }

	bool in_memory(uint64_t addr, size_t len) const
	{
		return addr <= mem_limit && len <= mem_limit - addr;
	}

	std::map<uint64_t, uint8_t> mem;
	// Memory at and above this bus address reads as zeros, quickly: room
	// for transfers far larger than the byte map could hold.
	uint64_t zero_from = ~0ull;
	uint64_t dma_read_bytes = 0; // read from the zero region
	uint64_t not_ram_from = ~0ull;
	// Runs at every DMA, before it: how a test makes the card's own DMA
	// reach back into the card (a transfer aimed at its BARs).
	std::function<void()> on_dma;
	uint64_t mem_limit = 1ull << 32; // bus addresses at or beyond this fault
	std::vector<unsigned> msis;
	std::vector<std::string> errors;
	std::vector<std::string> traces;
	unsigned vectors = 32;
	uint64_t clock_ns = 0;
	std::atomic<unsigned> kicks{0}; // NSP threads kick too
	uint64_t deadline = kNoDeadline;
};

} // namespace aic100::test
