// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/mhi.h"

#include <cstdio>

namespace aic100 {

using namespace regs;

namespace {

constexpr uint32_t kResetMhiCfg = (kNumChannels & 0xFF) | (1u << 16); // NCH=128, NER=1

// Writes to a 64-bit doorbell arrive as two 32-bit halves, high first.
void set_half(uint64_t &reg, bool high, uint32_t value)
{
	if (high)
		reg = (reg & 0xFFFFFFFFull) | (uint64_t{value} << 32);
	else
		reg = (reg & ~0xFFFFFFFFull) | value;
}

uint32_t get_half(uint64_t reg, bool high)
{
	return high ? static_cast<uint32_t>(reg >> 32) : static_cast<uint32_t>(reg);
}

} // namespace

Mhi::Mhi(HostInterface &host, const MhiConfig &cfg) : host_(host), cfg_(cfg)
{
	reset();
}

void Mhi::reset()
{
	ee_ = cfg_.reset_ee;
	// PBL shows no MHI yet; a card that comes up in AMSS is immediately READY.
	ready_ = ee_ == ExecEnv::Amss;
	state_ = ready_ ? MhiState::Ready : MhiState::Reset;
	mhicfg_ = kResetMhiCfg;
	mhictrl_ = 0;
	ctx_regs_.fill(0);
	bhi_ = Bhi{};
	ch_db_.fill(0);
	er_db_.fill(0);
}

uint64_t Mhi::qtimer_ticks() const
{
	// 19.2 MHz: ticks = ns * 19.2e6 / 1e9 = ns * 12 / 625, without overflow.
	const unsigned __int128 ns = host_.now_ns();
	return static_cast<uint64_t>(ns * 12 / 625);
}

uint64_t Mhi::read(uint32_t offset, unsigned size)
{
	if (size == 8) {
		if (offset == QTIMER_LO)
			return qtimer_ticks();
		return read32(offset) | (uint64_t{read32(offset + 4)} << 32);
	}
	const uint32_t aligned = offset & ~3u;
	const uint32_t word = read32(aligned);
	const unsigned shift = (offset & 3u) * 8;
	const uint32_t mask = size >= 4 ? 0xFFFFFFFFu : ((1u << (size * 8)) - 1);
	return (word >> shift) & mask;
}

void Mhi::write(uint32_t offset, uint64_t value, unsigned size)
{
	if (size == 8) {
		// A 64-bit write is the high-then-low pair in one access.
		write32(offset + 4, static_cast<uint32_t>(value >> 32));
		write32(offset, static_cast<uint32_t>(value));
		return;
	}
	if (size != 4 || (offset & 3u)) {
		char msg[96];
		std::snprintf(msg, sizeof(msg), "BAR0: %u-byte write at 0x%x ignored (32-bit only)", size, offset);
		host_.guest_error(msg);
		return;
	}
	write32(offset, static_cast<uint32_t>(value));
}

uint32_t Mhi::status_reg() const
{
	uint32_t v = static_cast<uint32_t>(state_) << kStateShift;
	if (ready_)
		v |= MHISTATUS_READY;
	if (state_ == MhiState::SysErr)
		v |= MHISTATUS_SYSERR;
	return v;
}

uint32_t Mhi::read32(uint32_t offset)
{
	if (offset >= kBhiBase && offset < kBhiBase + kBhiSize)
		return read_bhi(offset - kBhiBase);
	if (offset >= kChdbBase && offset < kChdbBase + 8 * kNumChannels)
		return get_half(ch_db_[(offset - kChdbBase) / 8], offset & 4);
	if (offset >= kErdbBase && offset < kErdbBase + 8 * kMaxEventRings)
		return get_half(er_db_[(offset - kErdbBase) / 8], offset & 4);
	if (offset >= CCABAP_LOWER && offset <= MHIDATALIMIT_HIGHER)
		return ctx_regs_[(offset - CCABAP_LOWER) / 4];

	switch (offset) {
	case MHIREGLEN:
		return kMhiRegLen;
	case MHIVER:
		return kMhiVersion;
	case MHICFG:
		return mhicfg_;
	case CHDBOFF:
		return kChdbBase;
	case ERDBOFF:
		return kErdbBase;
	case BHIOFF:
		return kBhiBase;
	case MHICTRL:
		return mhictrl_;
	case MHISTATUS:
		return status_reg();
	case QTIMER_LO:
		return static_cast<uint32_t>(qtimer_ticks());
	case QTIMER_HI:
		return static_cast<uint32_t>(qtimer_ticks() >> 32);
	default:
		// Unimplemented and reserved registers read as zero, never all-ones:
		// qaic treats 0xFFFFFFFF as a dead link.
		return 0;
	}
}

void Mhi::write32(uint32_t offset, uint32_t value)
{
	if (offset >= kBhiBase && offset < kBhiBase + kBhiSize) {
		write_bhi(offset - kBhiBase, value);
		return;
	}
	if (offset >= kChdbBase && offset < kChdbBase + 8 * kNumChannels) {
		set_half(ch_db_[(offset - kChdbBase) / 8], offset & 4, value);
		return;
	}
	if (offset >= kErdbBase && offset < kErdbBase + 8 * kMaxEventRings) {
		set_half(er_db_[(offset - kErdbBase) / 8], offset & 4, value);
		return;
	}
	if (offset >= CCABAP_LOWER && offset <= MHIDATALIMIT_HIGHER) {
		ctx_regs_[(offset - CCABAP_LOWER) / 4] = value;
		return;
	}

	switch (offset) {
	case MHICFG:
		// The host programs the event-ring counts; channel counts are fixed.
		mhicfg_ = (mhicfg_ & (MHICFG_NCH_MASK | MHICFG_NHWCH_MASK)) |
			  (value & (MHICFG_NER_MASK | MHICFG_NHWER_MASK));
		return;
	case MHICTRL:
		write_ctrl(value);
		return;
	case MHI_SOC_RESET_REQ:
		if (value & 1)
			reset();
		return;
	default: {
		char msg[80];
		std::snprintf(msg, sizeof(msg), "BAR0: write 0x%x to read-only/reserved 0x%x", value, offset);
		host_.guest_error(msg);
		return;
	}
	}
}

void Mhi::write_ctrl(uint32_t value)
{
	if (value & MHICTRL_RESET) {
		// MHI RESET: drop the host-side state and come back READY in the
		// same execution environment. The RESET bit self-clears.
		ctx_regs_.fill(0);
		ch_db_.fill(0);
		er_db_.fill(0);
		bhi_.intvec = 0;
		mhictrl_ = 0;
		state_ = MhiState::Ready;
		ready_ = true;
		return;
	}
	mhictrl_ = value & MHICTRL_STATE_MASK;
}

uint32_t Mhi::read_bhi(uint32_t offset) const
{
	if (offset >= BHI_OEMPKHASH0 && offset < BHI_OEMPKHASH0 + 4 * kOemPkHashWords)
		return cfg_.oem_pk_hash[(offset - BHI_OEMPKHASH0) / 4];
	switch (offset) {
	case BHI_VERSION_MINOR:
		return 0;
	case BHI_VERSION_MAJOR:
		return 1;
	case BHI_IMGADDR_LOW:
		return static_cast<uint32_t>(bhi_.img_addr);
	case BHI_IMGADDR_HIGH:
		return static_cast<uint32_t>(bhi_.img_addr >> 32);
	case BHI_IMGSIZE:
		return bhi_.img_size;
	case BHI_IMGTXDB:
		return bhi_.img_txdb;
	case BHI_INTVEC:
		return bhi_.intvec;
	case BHI_EXECENV:
		return static_cast<uint32_t>(ee_);
	case BHI_STATUS:
		return bhi_.status;
	case BHI_ERRCODE:
	case BHI_ERRDBG1:
	case BHI_ERRDBG2:
	case BHI_ERRDBG3:
		return bhi_.err[(offset - BHI_ERRCODE) / 4];
	case BHI_SERIALNU:
		return cfg_.serial_number;
	default:
		return 0;
	}
}

void Mhi::write_bhi(uint32_t offset, uint32_t value)
{
	switch (offset) {
	case BHI_IMGADDR_LOW:
		bhi_.img_addr = (bhi_.img_addr & ~0xFFFFFFFFull) | value;
		return;
	case BHI_IMGADDR_HIGH:
		bhi_.img_addr = (bhi_.img_addr & 0xFFFFFFFFull) | (uint64_t{value} << 32);
		return;
	case BHI_IMGSIZE:
		bhi_.img_size = value;
		return;
	case BHI_IMGTXDB:
		bhi_.img_txdb = value;
		return;
	case BHI_INTVEC:
		bhi_.intvec = value;
		return;
	case BHI_STATUS:
		bhi_.status = value;
		return;
	default: {
		char msg[80];
		std::snprintf(msg, sizeof(msg), "BHI: write 0x%x to read-only/reserved +0x%x", value, offset);
		host_.guest_error(msg);
		return;
	}
	}
}

} // namespace aic100
