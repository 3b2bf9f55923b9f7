// SPDX-License-Identifier: GPL-2.0-or-later
// The BHIe block of the MHI register file (AIC200): the host's transmit
// vector registers and their doorbell. The load itself is the PBL's
// (Boot::bhie_transfer); this only latches what the host wrote and reports
// the result.
#include "aic100/bhie.h"
#include "aic100/mhi.h"

namespace aic100 {

using namespace regs;

bool Mhi::in_bhie(uint32_t offset)
{
	return offset >= kBhieBase && offset < kBhieBase + bhie::kBlockSize;
}

uint32_t Mhi::read_bhie(uint32_t offset) const
{
	switch (offset) {
	case bhie::TXVECADDR_LOW:
		return static_cast<uint32_t>(bhie_.vec_addr);
	case bhie::TXVECADDR_HIGH:
		return static_cast<uint32_t>(bhie_.vec_addr >> 32);
	case bhie::TXVECSIZE:
		return bhie_.vec_size;
	case bhie::TXVECDB:
		// Only the sequence number is kept: the host's read-modify-write
		// gives up on a read of all-ones, which this can never be.
		return bhie_.seq;
	case bhie::TXVECSTATUS:
		return bhie_.status;
	default:
		// MSMSOCID and the receive vectors (RAM dumps over BHIe) are
		// not modelled: zero, never the all-ones of a dead link.
		return 0;
	}
}

void Mhi::write_bhie(uint32_t offset, uint32_t value)
{
	switch (offset) {
	case bhie::TXVECADDR_LOW:
		bhie_.vec_addr = (bhie_.vec_addr & ~0xFFFFFFFFull) | value;
		return;
	case bhie::TXVECADDR_HIGH:
		bhie_.vec_addr = (bhie_.vec_addr & 0xFFFFFFFFull) | (uint64_t{value} << 32);
		return;
	case bhie::TXVECSIZE:
		bhie_.vec_size = value;
		return;
	case bhie::TXVECDB:
		bhie_.seq = value & bhie::kSeqMask;
		if (ee_ != ExecEnv::Pbl) {
			error("BHIe: vector doorbell outside PBL (EE %u) ignored", static_cast<unsigned>(ee_));
			return;
		}
		// The host never clears TXVECSTATUS and polls it from the
		// doorbell on: a result left from an earlier load must not
		// answer this one.
		bhie_.status = bhie::kStatusReset << bhie::kStatusShift;
		pending_bhie_ = true;
		host_.kick();
		return;
	default:
		error("BHIe: write 0x%x to read-only/unmodelled +0x%x", value, offset);
		return;
	}
}

void Mhi::bhie_complete(bool ok)
{
	const uint32_t status = ok ? bhie::kStatusComplete : bhie::kStatusError;
	bhie_.status = (status << bhie::kStatusShift) | bhie_.seq;
	note("BHIe: TXVECSTATUS %s, sequence 0x%x", ok ? "complete" : "error", bhie_.seq);
	// The host waits on MSI vector 0 (BHI_INTVEC, which it sets to 0).
	raise_intvec();
}

} // namespace aic100
