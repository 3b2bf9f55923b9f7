// SPDX-License-Identifier: GPL-2.0-or-later
// The device core's only window on the outside world. QEMU's glue implements
// it with pci_dma_*, msi_notify and QEMU_CLOCK_VIRTUAL; unit tests implement it
// with fake memory and a fake clock.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aic100 {

enum class DmaStatus { Ok, Error };

class HostInterface {
public:
	virtual ~HostInterface() = default;

	// Bus-master accesses at a PCI bus address (an IOVA when an IOMMU is on).
	virtual DmaStatus dma_read(uint64_t bus_addr, void *buf, size_t len) = 0;
	virtual DmaStatus dma_write(uint64_t bus_addr, const void *buf, size_t len) = 0;

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

} // namespace aic100
