// SPDX-License-Identifier: GPL-2.0-or-later
// The card's firmware as a whole, from power-on: the PBL (loads sbl.bin
// over BHI, or BHIe on AIC200, and checks it), then the SBL, then AMSS with
// the QSM. Boot is what MHI calls up to; it hands each event to the stage
// that is running.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aic100/family.h"
#include "aic100/mhi.h"
#include "aic100/qsm.h"
#include "aic100/sbl.h"

namespace aic100 {

class Boot final : public MhiFunction, public Sbl::Owner {
public:
	Boot(HostInterface &host, Mhi &mhi, DmaBridge &dbr, Ddr &ddr, const QsmConfig &qsm,
	     Family family = Family::Aic100);

	// Power-on (after Mhi::reset()): PBL, or straight into AMSS when the
	// card is configured to start there.
	void reset();
	void poll();
	uint64_t next_deadline() const;

	// The running firmware fails: SYS_ERR. When the host resets MHI, a
	// failed AMSS comes back through the SBL, which offers a RAM dump of the
	// failure and loads the images again (a card started straight in AMSS
	// has no SBL and restarts AMSS); a failed SBL restarts.
	void inject_sys_err();
	// After SYS_ERR, before the host sees it: the firmware has failed, so
	// no activation goes on touching host memory. Records the RAM dump.
	void halt_after_sys_err();
	// The RAM dump waiting for the host: recorded at the failure, handed
	// to the SBL at the host's reset, dropped once the host took it.
	bool dump_pending() const { return crash_ != nullptr || sbl_.dump_pending(); }

	// "pbl", "sbl", "sbl-halted", "amss".
	const char *stage() const;
	Sbl &sbl() { return sbl_; }
	Qsm &qsm() { return qsm_; }

	// MhiFunction
	void mhi_m0() override;
	void mhi_reset() override;
	void bhi_transfer(uint64_t addr, uint32_t size) override;
	void bhie_transfer(uint64_t table_addr, uint32_t table_size) override;
	void channel_started(unsigned ch) override;
	uint64_t channel_resetting(unsigned ch) override;
	void channel_stopped(unsigned ch) override;
	void ul_message(unsigned ch, std::span<const uint8_t> data) override;
	void dl_drained(unsigned ch) override;

private:
	void sbl_handover(std::vector<LoadedImage> images) override;
	void bhi_fail(fw::Error e, uint32_t dbg1, uint32_t dbg2);
	void bhie_fail(const std::string &why);
	// What the PBL makes of an sbl.bin it received, by BHI or BHIe.
	struct SblCheck {
		fw::Error error = fw::Error::None;
		uint32_t dbg1 = 0, dbg2 = 0; // for BHI's ERRDBG registers
		fw::Header header{};
		std::vector<uint32_t> manifest;
	};
	static SblCheck check_sbl(std::span<const uint8_t> image);
	void start_sbl(const SblCheck &sbl);
	std::shared_ptr<const RamDump> record_crash(const std::string &why);

	HostInterface &host_;
	Mhi &mhi_;
	const FamilyConfig &family_;
	Sbl sbl_;
	Qsm qsm_;
	// What the last SBL loaded, shared with the QSM (the payloads are held
	// once); AMSS restarts from it after a host's MHI reset.
	std::vector<LoadedImage> images_;
	// The RAM dump's mhi_regs.bin: the MHI block and the BHI block.
	static constexpr uint32_t kDumpedRegisterBytes = 0x200;
	std::shared_ptr<const RamDump> crash_; // until the host resets MHI
	unsigned failures_ = 0;               // AMSS failures since power-on
};

} // namespace aic100
