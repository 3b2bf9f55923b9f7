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

	// The QSM hands a DBC to an activation with the FIFOs the host donated
	// (N request elements of 64 bytes, N response elements of 4 bytes); the
	// four pointers restart at 0.
	struct Queues {
		uint64_t req = 0;
		uint64_t rsp = 0;
		uint32_t n = 0;
	};
	void activate(unsigned i, const Queues &q);
	// The DBC stops touching host memory before this returns.
	void deactivate(unsigned i);
	bool active(unsigned i) const { return active_.at(i); }
	const Queues &queues(unsigned i) const { return queues_.at(i); }

private:
	HostInterface &host_;
	std::array<DbcRegs, regs::kNumDbc> dbc_{};
	std::array<bool, regs::kNumDbc> active_{};
	std::array<Queues, regs::kNumDbc> queues_{};
};

} // namespace aic100
