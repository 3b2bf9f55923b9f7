// SPDX-License-Identifier: GPL-2.0-or-later
// BAR0 of the card: the MHI register block, the BHI block, the doorbell
// arrays and the QTIMER, as the host's MHI stack sees them.
#pragma once

#include <array>
#include <cstdint>

#include "aic100/host.h"
#include "aic100/regs.h"

namespace aic100 {

struct MhiConfig {
	uint32_t serial_number = 0x00C0FFEE;
	std::array<uint32_t, regs::kOemPkHashWords> oem_pk_hash{};
	regs::ExecEnv reset_ee = regs::ExecEnv::Pbl;
};

class Mhi {
public:
	Mhi(HostInterface &host, const MhiConfig &cfg);

	uint64_t read(uint32_t offset, unsigned size);
	void write(uint32_t offset, uint64_t value, unsigned size);

	// Power-on reset: everything back to the reset values of `cfg`.
	void reset();

	regs::MhiState state() const { return state_; }
	regs::ExecEnv exec_env() const { return ee_; }
	uint64_t qtimer_ticks() const;

private:
	uint32_t read32(uint32_t offset);
	void write32(uint32_t offset, uint32_t value);
	uint32_t read_bhi(uint32_t offset) const;
	void write_bhi(uint32_t offset, uint32_t value);
	void write_ctrl(uint32_t value);
	uint32_t status_reg() const;

	HostInterface &host_;
	MhiConfig cfg_;

	regs::MhiState state_ = regs::MhiState::Reset;
	regs::ExecEnv ee_ = regs::ExecEnv::Pbl;
	bool ready_ = false;
	uint32_t mhicfg_ = 0;
	uint32_t mhictrl_ = 0;
	// Host-written 64-bit context/base/limit registers, as 32-bit halves,
	// indexed by (offset - CCABAP_LOWER) / 4.
	std::array<uint32_t, (regs::MHIDATALIMIT_HIGHER - regs::CCABAP_LOWER) / 4 + 1> ctx_regs_{};

	struct Bhi {
		uint64_t img_addr = 0;
		uint32_t img_size = 0;
		uint32_t img_txdb = 0;
		uint32_t intvec = 0;
		uint32_t status = 0;
		std::array<uint32_t, 4> err{}; // ERRCODE, ERRDBG1..3
	} bhi_;

	// Doorbells as the host last wrote them (64-bit, written high then low).
	std::array<uint64_t, regs::kNumChannels> ch_db_{};
	std::array<uint64_t, regs::kMaxEventRings> er_db_{};
};

} // namespace aic100
