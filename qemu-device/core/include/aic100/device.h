// SPDX-License-Identifier: GPL-2.0-or-later
// The whole card as the host sees it: one object per hardware block, wired to
// a HostInterface. QEMU-free; the C API in aic100_core.h wraps it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "aic100/boot.h"
#include "aic100/dma_bridge.h"
#include "aic100/family.h"
#include "aic100/host.h"
#include "aic100/mhi.h"
#include "aic100/test_mailbox.h"

namespace aic100 {

struct DeviceConfig {
	// AIC100 (and AIC080) or AIC200: BARs, boot and channels
	// (aic100/family.h). device_id must be one of the family's.
	Family family = Family::Aic100;
	uint16_t device_id = 0xA100;
	unsigned nsp_count = 16;
	uint64_t ddr_size = 16ull << 30;
	uint64_t bar4_size = regs::kBar4DefaultSize;
	uint32_t serial_number = 0x00C0FFEE;
	// Start in AMSS (no firmware files needed) instead of the full boot.
	bool boot_amss = false;
	// The QSM asks the host for CRC-32 on every NNC message.
	bool nnc_crc = false;
	// A fault-injection mailbox in BAR4 for guest-side tests
	// (docs/health.md); off, BAR4 reads as zero as on the real card.
	bool test_mailbox = false;
	// Sensors pinned from power-on (m°C, µW); 0 leaves them to the model.
	int64_t soc_temp_mc = 0, board_temp_mc = 0, ddr_temp_mc = 0, board_power_uw = 0;

	// Empty when the configuration is usable, else why not.
	std::string validate() const;
};

inline constexpr unsigned kMaxNsps = 16;
inline constexpr uint64_t kMaxDdrSize = 32ull << 30;
inline constexpr uint64_t kMinDdrSize = 64ull << 20;

class Device {
public:
	// `cfg` must have passed validate().
	Device(HostInterface &host, const DeviceConfig &cfg);

	uint64_t bar_read(unsigned bar, uint64_t offset, unsigned size);
	void bar_write(unsigned bar, uint64_t offset, uint64_t value, unsigned size);
	// A PCI reset (SBR, FLR, QEMU's system reset). One that arrives from
	// inside process() (the card's own DMA reached its root port's Bridge
	// Control through ECAM) waits for the end of that pass: the pass is
	// using the rings and buffers that a reset frees.
	void reset();

	// Runs the work register accesses queued and timers that expired; the
	// host calls it after kick() or when the armed timer fires. The card's
	// own DMA may be aimed at its BARs: register writes that arrive while
	// it runs are refused (as QEMU's re-entrancy guard refuses them), so no
	// block changes under its own feet.
	void process();

	// Fault injection (QEMU monitor/QMP, the test mailbox, tests): the
	// grammar of docs/health.md, e.g. "syserr", "crash dbc=3",
	// "ras ce source=ddr addr=0x1000", "sensor soc_temp=97000".
	// Empty when done, else why not; a refused command changes nothing.
	// It runs as a pass of process() does: a fault's DMA and MSI go where
	// the guest aimed them, so the same rules hold for what they reach.
	std::string inject(const std::string &command);
	// Questions the test mailbox answers (docs/health.md, "Questions"):
	// "dma-stats dbc=N" gives DBC N's counters and DMA times as key=value
	// words. Empty when `command` is not a question; else the answer, or
	// why it was refused with `refused` set.
	std::string query(const std::string &command, bool &refused) const;
	static bool is_query(const std::string &command);
	// One line on where the card is: "ee=amss state=M0 stage=amss".
	std::string describe() const;

	const DeviceConfig &config() const { return cfg_; }
	Mhi &mhi() { return mhi_; }
	Boot &boot() { return boot_; }
	DmaBridge &dma_bridge() { return dbr_; }
	Ddr &ddr() { return ddr_; }

private:
	static MhiConfig mhi_config(const DeviceConfig &cfg);
	static QsmConfig qsm_config(const DeviceConfig &cfg);
	// What PCI BAR `bar` holds on this card's family.
	enum class BarBlock { Mhi, DmaBridge, Bar4, None };
	BarBlock bar_block(unsigned bar) const;
	uint64_t mailbox_read(uint64_t offset, unsigned size) const;
	void mailbox_write(uint64_t offset, uint64_t value, unsigned size);
	void mailbox_run();
	std::string run_injection(const std::string &command);
	void halt_on_sys_err();
	void reset_now();
	void run_pass();
	// Runs `work` as the card's own pass: register writes by its own DMA
	// are refused, and a reset asked for meanwhile is done at its end.
	// Inside a pass already (an injection from the test mailbox), the
	// outer pass keeps those rules and does the reset.
	void as_own_pass(const std::function<void()> &work);

	// The BAR4 test mailbox (test_mailbox).
	struct Mailbox {
		std::array<uint8_t, mailbox::kBufferSize> command{};
		std::array<uint8_t, mailbox::kBufferSize> message{};
		uint32_t status = mailbox::kDone; // kRefused, kPending
		std::string pending;
	};

	HostInterface &host_;
	DeviceConfig cfg_;
	Mhi mhi_;
	Ddr ddr_;
	DmaBridge dbr_;
	Boot boot_;
	Mailbox mbox_;
	bool processing_ = false;
	bool reset_pending_ = false; // asked for during process()
};

} // namespace aic100
