// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/dma_bridge.h"

#include <cstdio>

namespace aic100 {

using namespace regs;

DmaBridge::DmaBridge(HostInterface &host) : host_(host) {}

void DmaBridge::reset()
{
	dbc_.fill(DbcRegs{});
	active_.fill(false);
	queues_.fill(Queues{});
}

void DmaBridge::activate(unsigned i, const Queues &q)
{
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = q;
	active_.at(i) = true;
}

void DmaBridge::deactivate(unsigned i)
{
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = Queues{};
	active_.at(i) = false;
}

namespace {

// Locates a DBC register; false for anything outside the 16 register sets.
bool decode(uint32_t offset, unsigned &dbc, uint32_t &reg)
{
	if (offset < kDbcBase || offset >= kDbcBase + kNumDbc * kDbcStride)
		return false;
	dbc = (offset - kDbcBase) / kDbcStride;
	reg = (offset - kDbcBase) % kDbcStride;
	return reg <= DBC_RSPTP && (reg & 3u) == 0;
}

} // namespace

uint64_t DmaBridge::read(uint32_t offset, unsigned size)
{
	unsigned i;
	uint32_t reg;
	if (size != 4 || !decode(offset, i, reg))
		return 0; // reserved space reads as zero
	const DbcRegs &d = dbc_[i];
	switch (reg) {
	case DBC_REQHP:
		return d.req_head;
	case DBC_REQTP:
		return d.req_tail;
	case DBC_RSPHP:
		return d.rsp_head;
	default:
		return d.rsp_tail;
	}
}

void DmaBridge::write(uint32_t offset, uint64_t value, unsigned size)
{
	unsigned i;
	uint32_t reg;
	char msg[96];
	if (size != 4 || !decode(offset, i, reg)) {
		std::snprintf(msg, sizeof(msg), "BAR2: %u-byte write 0x%llx at reserved 0x%x ignored", size,
			      static_cast<unsigned long long>(value), offset);
		host_.guest_error(msg);
		return;
	}
	DbcRegs &d = dbc_[i];
	switch (reg) {
	case DBC_REQTP:
		d.req_tail = static_cast<uint32_t>(value);
		return;
	case DBC_RSPHP:
		d.rsp_head = static_cast<uint32_t>(value);
		return;
	default:
		std::snprintf(msg, sizeof(msg), "DBC%u: host write to device-owned %s ignored", i,
			      reg == DBC_REQHP ? "REQHP" : "RSPTP");
		host_.guest_error(msg);
		return;
	}
}

} // namespace aic100
