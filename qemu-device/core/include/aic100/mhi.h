// SPDX-License-Identifier: GPL-2.0-or-later
// The card's MHI: the BAR0 register file (MHI block, BHI block, doorbell
// arrays, QTIMER), the MHI state machine, the context arrays, command ring,
// event rings and transfer rings in host memory. Above it sits the card's
// firmware (MhiFunction), which only sees whole messages per channel.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "aic100/family.h"
#include "aic100/host.h"
#include "aic100/mhi_ring.h"
#include "aic100/regs.h"

namespace aic100 {

struct MhiConfig {
	uint32_t serial_number = 0x00C0FFEE;
	std::array<uint32_t, regs::kOemPkHashWords> oem_pk_hash{};
	// Where the card starts after power-on: PBL (full boot, the default)
	// or straight in AMSS (READY at once, no firmware needed).
	regs::ExecEnv reset_ee = regs::ExecEnv::Pbl;
	// The channels the card serves, per EE (the family's table).
	ChannelTable channels = kAic100Channels;
	// A BHIe block at regs::kBhieBase (AIC200); without it BHIEOFF reads 0.
	bool bhie = false;
};

// The firmware's side of MHI. Every call comes from Mhi::process() (never
// from inside a register access) and may call back into Mhi.
class MhiFunction {
public:
	virtual ~MhiFunction() = default;
	// The host finished the READY handshake: M0, fresh contexts, no channel
	// running yet.
	virtual void mhi_m0() = 0;
	// The host reset MHI (or the card reset itself): every channel is gone.
	virtual void mhi_reset() = 0;
	// The host rang BHI_IMGTXDB. Answer with Mhi::bhi_complete().
	virtual void bhi_transfer(uint64_t addr, uint32_t size) = 0;
	// The host rang BHIe TXVECDB: `table_size` bytes of vector table at
	// `table_addr`. Answer with Mhi::bhie_complete().
	virtual void bhie_transfer(uint64_t table_addr, uint32_t table_size)
	{
		(void)table_addr;
		(void)table_size;
	}
	virtual void channel_started(unsigned ch) = 0;
	// The host asked to reset or stop `ch`, which the card still serves:
	// the firmware may send what it still owes on it now (it goes into the
	// buffers the host has posted). Returns how long the card then takes to
	// acknowledge the command, in ns (0: at once; capped at
	// Mhi::kMaxResetAckDelayNs). Later commands wait behind it.
	virtual uint64_t channel_resetting(unsigned ch)
	{
		(void)ch;
		return 0;
	}
	virtual void channel_stopped(unsigned ch) = 0;
	// One complete transfer descriptor (a chain of TREs) on UL channel `ch`.
	virtual void ul_message(unsigned ch, std::span<const uint8_t> data) = 0;
	// Every message queued on DL channel `ch` has reached the host: after
	// the last one went out, and whenever the host posts buffers while
	// nothing is queued (see dl_unreturned()).
	virtual void dl_drained(unsigned ch) { (void)ch; }
};

class Mhi {
public:
	Mhi(HostInterface &host, const MhiConfig &cfg);

	void set_function(MhiFunction *fn) { fn_ = fn; }

	uint64_t read(uint32_t offset, unsigned size);
	void write(uint32_t offset, uint64_t value, unsigned size);

	// Work the register accesses queued (doorbells, M0, BHI) and expired
	// timers. Runs from the host's event loop.
	void process();
	// Earliest time process() has timed work to do, or kNoDeadline.
	uint64_t next_deadline() const;

	// Power-on reset: everything back to the reset values of `cfg`.
	void reset();

	// ---- for the firmware ------------------------------------------------
	// Queues a message on DL channel `ch`. With `may_split` it may spread
	// over several host buffers; otherwise it goes whole into one buffer
	// (an OVERFLOW completion if the host's buffer is too small). False
	// when the channel is not running or its queue is full.
	bool send(unsigned ch, std::vector<uint8_t> msg, bool may_split = false);
	// The function's back-pressure on UL channel `ch`: while held, the
	// card takes no more TDs from its ring (a firmware busy with one
	// message leaves the next ones there). Released, it goes on in the
	// next pass. A new host session releases every channel.
	void hold_ul(unsigned ch, bool hold);
	size_t dl_backlog(unsigned ch) const;
	// Events written to no event ring yet: the host has given no credit.
	size_t events_without_credit() const;
	// Buffers of DL channel `ch` that the card filled and the host has not
	// posted again: the most it had posted at once since the channel
	// started, less what it has posted now. Zero once a host that reposts
	// each buffer after reading it has read everything.
	size_t dl_unreturned(unsigned ch) const;
	// The card's and the host's view of DL channel `ch` and its event ring,
	// read from host memory now: for the report of a host that seems to
	// have stopped answering, never for decisions.
	std::string describe_dl(unsigned ch) const;
	// The firmware stops serving `ch` (its EE is over); queued data is lost.
	void retire_channel(unsigned ch);
	bool channel_running(unsigned ch) const;

	// Result of a BHI transfer: STATUS success, or error with ERRCODE and
	// ERRDBG1..3; raises the BHI interrupt either way.
	void bhi_complete(uint32_t errcode, uint32_t dbg1 = 0, uint32_t dbg2 = 0, uint32_t dbg3 = 0);
	// Result of a BHIe transfer: TXVECSTATUS complete or error, with the
	// doorbell's sequence number; raises the BHI interrupt either way.
	void bhie_complete(bool ok);
	// The firmware now runs in `ee` and waits for the host's READY handshake
	// (after a BHI load: PBL hands over to SBL).
	void become_ready(regs::ExecEnv ee);
	// Switches the execution environment while in M0 and tells the host.
	void enter_exec_env(regs::ExecEnv ee);
	// The firmware failed: SYS_ERR in MHISTATUS, event and interrupt. `why`
	// is kept for the crash record (sys_err_reason()).
	void sys_err(const char *why = "the card's MHI failed");
	const std::string &sys_err_reason() const { return sys_err_reason_; }
	// True once after sys_err(): the owner must stop the firmware's DMA
	// before the host can look (it frees the DBCs' memory on SYS_ERR,
	// before it resets MHI).
	bool take_halt_request() { return std::exchange(halt_requested_, false); }
	// The card is idle and lets the link rest: M1, which the host answers
	// by moving it to M2 (MHICTRL) until it wants it again (a doorbell).
	// Only from M0; false otherwise.
	bool enter_m1();
	// SoC reset: the card reboots into its reset EE. When a host was using
	// MHI, the PBL reports the reboot as SYS_ERR so the host recovers.
	// Runs from process(); the register only asks for it.
	void soc_reset();

	regs::MhiState state() const { return state_; }
	regs::ExecEnv exec_env() const { return ee_; }
	uint64_t qtimer_ticks() const;
	const MhiConfig &config() const { return cfg_; }

	// Limits on what the host may make the card hold or do at once.
	static constexpr size_t kMaxTdBytes = 1u << 20;
	static constexpr size_t kMaxTdTres = 1024;           // TREs in one chained TD
	static constexpr unsigned kCommandsPerPass = 256;    // then the next pass goes on
	static constexpr size_t kMaxDlQueue = 512;           // messages queued per DL channel
	static constexpr size_t kMaxDlQueueBytes = 16u << 20; // their bytes
	static constexpr size_t kUlBudgetBytes = 64u << 20;  // UL bytes one process() call reads per channel
	// What one TRE costs of that budget, whatever its length: at most
	// 16,384 TREs a channel a pass, however short their TDs.
	static constexpr size_t kUlTreCost = 4096;
	// The longest a channel reset may wait for its acknowledgement, well
	// inside the host's command timeout (upstream qaic: 2 s).
	static constexpr uint64_t kMaxResetAckDelayNs = 1'000'000'000;
	// The execution environments in which the card serves channel `ch`, as
	// bits 1 << EE (upstream qaic's channel table); 0 for a channel it has not.
	uint32_t channel_ee_mask(unsigned ch) const;

private:
	struct Outgoing {
		std::vector<uint8_t> data;
		bool may_split;
	};
	struct Channel {
		bool running = false;
		// Stopped by the host (STOP_CHAN): it keeps its place in the ring
		// and its queued data for a START.
		bool stopped = false;
		bool inbound = false; // device to host (DL)
		unsigned er = 0;
		uint64_t ctx = 0;
		mhi::RingGeometry geo;
		uint64_t rp = 0;
		uint64_t wp = 0;
		std::deque<Outgoing> out;
		size_t out_offset = 0;
		size_t out_bytes = 0; // of every message in `out`
		size_t posted_high = 0; // most buffers posted at once (DL)
	};
	// Where the host keeps its channel, event and command ring contexts.
	struct ContextBases {
		uint64_t channels = 0, events = 0, commands = 0;
		uint32_t mhicfg = 0;
		bool operator==(const ContextBases &) const = default;
	};

	uint32_t read32(uint32_t offset);
	void write32(uint32_t offset, uint32_t value);
	uint32_t read_bhi(uint32_t offset) const;
	void write_bhi(uint32_t offset, uint32_t value);
	static bool in_bhie(uint32_t offset);
	uint32_t read_bhie(uint32_t offset) const;
	void write_bhie(uint32_t offset, uint32_t value);
	void write_ctrl(uint32_t value);
	uint32_t status_reg() const;
	void channel_doorbell(unsigned ch, uint64_t wp);
	void take_channel_doorbell(unsigned ch, uint64_t wp);
	bool doorbell_is_older(unsigned ch, uint64_t wp, uint64_t than);
	static bool older(const Channel &c, uint64_t wp, uint64_t than);
	// Has process() serve `ch` again up to the furthest write pointer known.
	void reservice(unsigned ch);
	// TREs between the card's RP and the host's WP (by default, the last
	// one the card took).
	static size_t posted(const Channel &c, uint64_t wp);
	static size_t posted(const Channel &c) { return posted(c, c.wp); }

	void mhi_reset_from_host();
	void drop_channels();
	void do_m0();
	ContextBases context_bases() const;
	bool same_session() const;
	void repeat_m0();
	// M3 (the host suspends the card) and back to M0 from M1, M2 or M3.
	void do_m3();
	void do_wake();
	// In M1, M2 or M3: the card touches no host memory and leaves the
	// host's doorbells for when it is back in M0.
	bool asleep() const;
	void doorbell_rung();
	// The host's doorbells (event rings, commands, channels) and timed work.
	void run_doorbells();
	void write_chstate(unsigned ch, mhi::ChannelState st);
	void do_commands();
	// False when the command ring must stop here (reset under it, or a
	// reset acknowledgement is deferred).
	bool run_command(const mhi::RingElement &e, uint64_t at);
	void finish_deferred_reset();
	bool start_channel(unsigned ch);
	bool restart_channel(unsigned ch);
	void stop_channel(unsigned ch);
	void service_channel(unsigned ch);
	void service_ul(unsigned ch);
	enum class TdScan { Complete, Partial, Failed };
	TdScan scan_td(unsigned ch, std::vector<mhi::RingElement> &tres, uint64_t &end);
	uint64_t td_cost(const Channel &c, const std::vector<mhi::RingElement> &tres) const;
	bool read_td(unsigned ch, const std::vector<mhi::RingElement> &tres, std::vector<uint8_t> &data);
	void complete_td(unsigned ch, const std::vector<mhi::RingElement> &tres);
	void service_dl(unsigned ch);
	void post(unsigned er, const mhi::RingElement &e, bool irq = true);
	void raise_intvec();
	void error(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	// A state change worth a line in the card's trace (rare events only).
	void note(const char *fmt, ...) __attribute__((format(printf, 2, 3)));

	HostInterface &host_;
	MhiConfig cfg_;
	MhiFunction *fn_ = nullptr;

	regs::MhiState state_ = regs::MhiState::Reset;
	regs::ExecEnv ee_ = regs::ExecEnv::Pbl;
	bool ready_ = false;
	uint32_t mhicfg_ = 0;
	uint32_t mhictrl_ = 0;
	// Host-written 64-bit context/base/limit registers, as 32-bit halves,
	// indexed by (offset - CCABAP_LOWER) / 4.
	std::array<uint32_t, (regs::MHIDATALIMIT_HIGHER - regs::CCABAP_LOWER) / 4 + 1> ctx_regs_{};
	uint64_t ctx_reg64(uint32_t lower) const;
	uint32_t crdb_[2] = {};

	struct Bhi {
		uint64_t img_addr = 0;
		uint32_t img_size = 0;
		uint32_t img_txdb = 0;
		uint32_t intvec = 0;
		uint32_t status = 0;
		std::array<uint32_t, 4> err{}; // ERRCODE, ERRDBG1..3
	} bhi_;

	// The BHIe block (cfg_.bhie): the host's transmit vector registers.
	struct Bhie {
		uint64_t vec_addr = 0;
		uint32_t vec_size = 0;
		uint32_t seq = 0;    // TXVECDB [29:0]
		uint32_t status = 0; // TXVECSTATUS
	} bhie_;

	// Doorbells as the host last wrote them (64-bit, written high then low).
	std::array<uint64_t, regs::kNumChannels> ch_db_{};
	// The write pointer each pending channel doorbell hands to process():
	// the furthest the host has rung (see doorbell_is_older()).
	std::array<uint64_t, regs::kNumChannels> ch_wp_{};
	std::array<uint64_t, regs::kMaxEventRings> er_db_{};

	// Work queued by register writes, done in process().
	bool pending_m0_ = false;
	bool pending_m3_ = false;
	bool pending_wake_ = false;
	bool pending_bhi_ = false;
	bool pending_bhie_ = false;
	bool pending_crdb_ = false;
	// Resets the host asked for by register: done in process(), since they
	// stop NSP threads and reload firmware, which is no work for the vCPU
	// thread, and the host must not see them done before they are.
	bool pending_host_reset_ = false;
	bool pending_soc_reset_ = false;
	std::string sys_err_reason_;
	bool halt_requested_ = false;
	std::bitset<regs::kMaxEventRings> pending_erdb_;
	std::bitset<regs::kNumChannels> pending_chdb_;
	std::bitset<regs::kNumChannels> ul_held_; // see hold_ul()

	// Rings, valid between M0 and the next reset.
	std::vector<std::unique_ptr<mhi::EventRing>> events_;
	// The context bases and MHICFG as they were at M0. A host that takes
	// over a card left in M0 (a re-probe after a non-graceful remove)
	// writes new bases and rings its new event rings' doorbells before its
	// M0, which loads them; the same host saying M0 twice keeps them.
	ContextBases m0_bases_;
	mhi::CommandRing commands_;
	std::array<Channel, regs::kNumChannels> channels_{};
	// A channel reset whose completion the firmware asked to delay
	// (channel_resetting()); the command ring waits behind it.
	struct DeferredReset {
		bool active = false;
		unsigned ch = 0;
		uint64_t at = 0; // the command's bus address
		uint64_t deadline = 0;
	} deferred_reset_;
	// Bumped by every reset, so loops notice when a callback reset MHI.
	uint64_t epoch_ = 0;
};

} // namespace aic100
