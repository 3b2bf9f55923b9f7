// SPDX-License-Identifier: GPL-2.0-or-later
// The fuzzer's HostInterface: flat host memory of kMemSize bytes at bus
// address 0 (the unit tests' FakeHost keeps a map per byte, too slow for
// the megabytes an input moves), a clock the input advances, and the
// requests of the core (kick, timer) for the harness to act on.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aic100/host.h"
#include "fuzz_input.h"

namespace aic100::fuzz {

class FuzzHost final : public HostInterface {
public:
	// Host memory comes zeroed from a pool: a fresh megabyte per input would
	// cost the page faults of its first touch, more than most inputs take.
	FuzzHost() : mem(take_memory()) {}
	~FuzzHost() override { pool().push_back(std::move(mem)); }
	FuzzHost(const FuzzHost &) = delete;
	FuzzHost &operator=(const FuzzHost &) = delete;

	DmaStatus dma_read(uint64_t addr, void *buf, size_t len) override
	{
		if (!inside(addr, len))
			return DmaStatus::Error;
		std::memcpy(buf, mem.data() + addr, len);
		return DmaStatus::Ok;
	}
	DmaStatus dma_write(uint64_t addr, const void *buf, size_t len) override
	{
		if (!inside(addr, len))
			return DmaStatus::Error;
		std::memcpy(mem.data() + addr, buf, len);
		return DmaStatus::Ok;
	}
	void raise_msi(unsigned vector) override
	{
		// host.h: the core folds vectors onto what the host enabled.
		if (vector >= vectors) {
			std::fprintf(stderr, "raise_msi(%u) with %u vectors enabled\n", vector, vectors);
			std::abort();
		}
		msis++;
	}
	unsigned msi_vectors_enabled() const override { return vectors; }
	uint64_t now_ns() const override { return clock_ns; }
	void kick() override { kicks.fetch_add(1, std::memory_order_relaxed); } // NSP threads kick too
	void arm_timer(uint64_t deadline_ns) override { deadline = deadline_ns; }
	void guest_error(const char *msg) override
	{
		(void)msg;
		guest_errors++;
	}

	static bool inside(uint64_t addr, size_t len) { return addr <= kMemSize && len <= kMemSize - addr; }

private:
	static std::vector<std::vector<uint8_t>> &pool()
	{
		static std::vector<std::vector<uint8_t>> p;
		return p;
	}
	static std::vector<uint8_t> take_memory()
	{
		auto &p = pool();
		if (p.empty())
			return std::vector<uint8_t>(kMemSize, 0);
		std::vector<uint8_t> m = std::move(p.back());
		p.pop_back();
		std::memset(m.data(), 0, m.size());
		return m;
	}

public:

	std::vector<uint8_t> mem;
	unsigned vectors = 32;
	uint64_t clock_ns = 0;
	uint64_t deadline = kNoDeadline;
	std::atomic<uint64_t> kicks{0};
	uint64_t msis = 0, guest_errors = 0;
};

} // namespace aic100::fuzz
