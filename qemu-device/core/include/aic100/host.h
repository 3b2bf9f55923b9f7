// SPDX-License-Identifier: GPL-2.0-or-later
// The device core's only window on the outside world. QEMU's glue implements
// it with pci_dma_*, msi_notify and QEMU_CLOCK_VIRTUAL; unit tests implement it
// with fake memory and a fake clock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace aic100 {

enum class DmaStatus { Ok, Error };

class HostInterface {
public:
	virtual ~HostInterface() = default;

	// Bus-master accesses at a PCI bus address (an IOVA when an IOMMU is on).
	virtual DmaStatus dma_read(uint64_t bus_addr, void *buf, size_t len) = 0;
	virtual DmaStatus dma_write(uint64_t bus_addr, const void *buf, size_t len) = 0;

	// Where a DMA at `bus_addr` lands: RAM, which the host copies at memory
	// speed, or not (device registers, or nothing), where QEMU makes one
	// register access for every 1 to 8 bytes. `len` of the answer is how far
	// from `bus_addr` that holds: at least 1, at most the `len` asked for.
	// A host that cannot tell says RAM.
	struct DmaExtent {
		bool ram = true;
		uint64_t len = 0;
	};
	virtual DmaExtent dma_extent(uint64_t bus_addr, uint64_t len, bool is_write) const
	{
		(void)bus_addr;
		(void)is_write;
		return {true, len};
	}

	// What a pass of the card pays for a DMA: a byte of RAM 1, a byte
	// anywhere else kNotRamWeight, for the register access QEMU makes for
	// every 1 to 8 bytes there, each far slower than a copy.
	static constexpr uint64_t kNotRamWeight = 1024;
	uint64_t dma_cost(uint64_t bus_addr, uint64_t len, bool is_write) const
	{
		uint64_t budget = UINT64_MAX;
		dma_affordable(bus_addr, len, is_write, budget);
		return UINT64_MAX - budget;
	}
	// How many of the `len` bytes at `bus_addr` `budget` pays for, taken
	// from it. Fewer than `len` leave the budget at 0: the pass is over.
	uint64_t dma_affordable(uint64_t bus_addr, uint64_t len, bool is_write, uint64_t &budget) const
	{
		uint64_t paid = 0;
		while (paid < len) {
			const DmaExtent e = dma_extent(bus_addr + paid, len - paid, is_write);
			const uint64_t weight = e.ram ? 1 : kNotRamWeight;
			const uint64_t n = std::min({std::max<uint64_t>(e.len, 1), len - paid, budget / weight});
			if (n == 0) {
				budget = 0;
				break;
			}
			budget -= n * weight;
			paid += n;
		}
		return paid;
	}

	// Signals MSI `vector`. The caller has already folded the vector onto what
	// the host enabled (see msi_vectors_enabled()).
	virtual void raise_msi(unsigned vector) = 0;

	// Number of MSI vectors the host enabled (Multiple Message Enable), 0 when
	// MSI is disabled.
	virtual unsigned msi_vectors_enabled() const = 0;

	// Monotonic device time in nanoseconds (guest virtual time).
	virtual uint64_t now_ns() const = 0;

	// Asks for a call to Device::process() soon, from the host's event loop
	// rather than from inside the current register access.
	virtual void kick() = 0;

	// Asks for a call to Device::process() once now_ns() reaches
	// `deadline_ns`; replaces any earlier request. kNoDeadline cancels.
	virtual void arm_timer(uint64_t deadline_ns) = 0;
	static constexpr uint64_t kNoDeadline = ~0ull;

	// Notable device events (boot stages, resets) for tracing. Optional.
	virtual void trace(const char *msg) { (void)msg; }

	// Reports something the guest did wrong (LOG_GUEST_ERROR in QEMU). The
	// device carries on with the access ignored or refused.
	virtual void guest_error(const char *msg) = 0;
};

// Keeps a guest from flooding QEMU's log: the card's own DMA aimed at its
// registers makes a guest error per register access, millions a second.
// At most kLines a window of kWindowNs (device time) get through; the rest
// are counted, and the count is reported once their window is over, with the
// next line let through or at the end of a pass (take_dropped()). Thread-safe:
// vCPUs report BAR2's guest errors without the BQL.
class GuestErrorLimit {
public:
	static constexpr unsigned kLines = 100;
	static constexpr uint64_t kWindowNs = 1'000'000'000;

	// True when a line may be logged at `now_ns`; `dropped` is then the
	// count, not yet reported, of lines dropped in windows now over.
	bool admit(uint64_t now_ns, uint64_t &dropped)
	{
		const std::lock_guard<std::mutex> hold(mu_);
		dropped = take_locked(now_ns);
		if (lines_ >= kLines) {
			dropped_++;
			return false;
		}
		lines_++;
		return true;
	}
	// The count of dropped lines whose window is over by `now_ns` (0: none).
	uint64_t take_dropped(uint64_t now_ns)
	{
		const std::lock_guard<std::mutex> hold(mu_);
		return take_locked(now_ns);
	}

private:
	uint64_t take_locked(uint64_t now_ns)
	{
		if (now_ns - window_start_ < kWindowNs)
			return 0;
		window_start_ = now_ns;
		lines_ = 0;
		const uint64_t n = dropped_;
		dropped_ = 0;
		return n;
	}

	std::mutex mu_;
	uint64_t window_start_ = 0;
	unsigned lines_ = 0;
	uint64_t dropped_ = 0;
};

} // namespace aic100
