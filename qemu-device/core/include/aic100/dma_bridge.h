// SPDX-License-Identifier: GPL-2.0-or-later
// BAR2 of the card: the DMA Bridge with its 16 DMA Bridge Channels (DBCs).
#pragma once

#include <array>
#include <cstdint>

#include "aic100/host.h"
#include "aic100/regs.h"

namespace aic100 {

class DmaBridge {
public:
	explicit DmaBridge(HostInterface &host);

	uint64_t read(uint32_t offset, unsigned size);
	void write(uint32_t offset, uint64_t value, unsigned size);
	void reset();

	struct DbcRegs {
		uint32_t req_head = 0; // device-owned
		uint32_t req_tail = 0; // host-owned
		uint32_t rsp_head = 0; // host-owned
		uint32_t rsp_tail = 0; // device-owned
	};
	const DbcRegs &dbc(unsigned i) const { return dbc_.at(i); }

private:
	HostInterface &host_;
	std::array<DbcRegs, regs::kNumDbc> dbc_{};
};

} // namespace aic100
