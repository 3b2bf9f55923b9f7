// SPDX-License-Identifier: GPL-2.0-or-later
// The eventfds SET_IRQS gives the server, per IRQ index (INTx, MSI,
// MSI-X, ERR, REQ) and vector: the card raises vector n of the index by
// writing to the fd, and the client (KVM's irqfd, or QEMU) injects it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aic100/vfio_user/unique_fd.h"

namespace aic100::vfio_user {

class IrqTable {
public:
	// counts[i]: how many vectors index i has.
	explicit IrqTable(std::span<const uint32_t> counts);

	// Vectors start.. of `index` get `fds` (the earlier ones are closed);
	// EINVAL when the range is past the index's vectors.
	int assign(uint32_t index, uint32_t start, std::vector<UniqueFd> &&fds);
	// Vectors start..start+count-1 lose their fds; EINVAL when out of range.
	int deassign(uint32_t index, uint32_t start, uint32_t count);
	void disable(uint32_t index);
	void clear();

	int fd(uint32_t index, uint32_t vector) const;  // -1 when none
	uint32_t assigned(uint32_t index) const;       // vectors with an fd
	uint32_t vectors(uint32_t index) const;
	uint32_t indices() const { return static_cast<uint32_t>(fds_.size()); }

private:
	bool in_range(uint32_t index, uint32_t start, uint64_t count) const;
	std::vector<std::vector<UniqueFd>> fds_;
};

}  // namespace aic100::vfio_user
