// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/mhi.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace aic100 {

using namespace regs;
using mhi::Completion;
using mhi::ElementType;
using mhi::RingElement;

namespace {

constexpr uint32_t kResetMhiCfg = (kNumChannels & 0xFF) | (1u << 16); // NCH=128, NER=1
constexpr unsigned kWakeChannel = 127;
constexpr uint32_t kBhiStatusSuccess = 2u << 30;
constexpr uint32_t kBhiStatusError = 3u << 30;

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

Mhi::Mhi(HostInterface &host, const MhiConfig &cfg) : host_(host), cfg_(cfg), commands_(host)
{
	reset();
}

void Mhi::error(const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	host_.guest_error(msg);
}

void Mhi::note(const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	host_.trace(msg);
}

void Mhi::reset()
{
	drop_channels();
	ee_ = cfg_.reset_ee;
	// PBL shows no MHI yet; a card that comes up in AMSS is immediately READY.
	ready_ = ee_ != ExecEnv::Pbl;
	state_ = ready_ ? MhiState::Ready : MhiState::Reset;
	mhicfg_ = kResetMhiCfg;
	mhictrl_ = 0;
	ctx_regs_.fill(0);
	crdb_[0] = crdb_[1] = 0;
	bhi_ = Bhi{};
	bhie_ = Bhie{};
	ch_db_.fill(0);
	ch_wp_.fill(0);
	er_db_.fill(0);
	pending_bhi_ = pending_host_reset_ = pending_soc_reset_ = halt_requested_ = false;
	pending_bhie_ = false;
}

uint64_t Mhi::qtimer_ticks() const
{
	// 19.2 MHz: ticks = ns * 19.2e6 / 1e9 = ns * 12 / 625, without overflow.
	const unsigned __int128 ns = host_.now_ns();
	return static_cast<uint64_t>(ns * 12 / 625);
}

uint64_t Mhi::ctx_reg64(uint32_t lower) const
{
	const unsigned i = (lower - CCABAP_LOWER) / 4;
	return ctx_regs_[i] | (uint64_t{ctx_regs_[i + 1]} << 32);
}

// ---- register file -----------------------------------------------------

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
		error("BAR0: %u-byte write at 0x%x ignored (32-bit only)", size, offset);
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
	if (cfg_.bhie && in_bhie(offset))
		return read_bhie(offset - kBhieBase);
	if (offset >= kChdbBase && offset < kChdbBase + 8 * kNumChannels)
		return get_half(ch_db_[(offset - kChdbBase) / 8], offset & 4);
	if (offset >= kErdbBase && offset < kErdbBase + 8 * kMaxEventRings)
		return get_half(er_db_[(offset - kErdbBase) / 8], offset & 4);
	if (offset >= CCABAP_LOWER && offset <= MHIDATALIMIT_HIGHER && offset != CRDB_LOWER &&
	    offset != CRDB_HIGHER)
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
	case BHIEOFF:
		return cfg_.bhie ? kBhieBase : 0;
	case MHICTRL:
		return mhictrl_;
	case MHISTATUS:
		return status_reg();
	case CRDB_LOWER:
		return crdb_[0];
	case CRDB_HIGHER:
		return crdb_[1];
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
	if (cfg_.bhie && in_bhie(offset)) {
		write_bhie(offset - kBhieBase, value);
		return;
	}
	if (offset >= kChdbBase && offset < kChdbBase + 8 * kNumChannels) {
		const unsigned ch = (offset - kChdbBase) / 8;
		set_half(ch_db_[ch], offset & 4, value);
		// The low half completes the doorbell. The wake doorbell only
		// asks for the card awake (out of M1/M2) when the host asserts
		// it (1); it writes 0 when it lets the card rest again.
		if (!(offset & 4)) {
			if (ch != kWakeChannel)
				take_channel_doorbell(ch, ch_db_[ch]);
			if (ch != kWakeChannel || value)
				doorbell_rung();
			host_.kick();
		}
		return;
	}
	if (offset >= kErdbBase && offset < kErdbBase + 8 * kMaxEventRings) {
		const unsigned er = (offset - kErdbBase) / 8;
		set_half(er_db_[er], offset & 4, value);
		if (!(offset & 4)) {
			pending_erdb_.set(er);
			host_.kick();
		}
		return;
	}
	if (offset >= CCABAP_LOWER && offset <= MHIDATALIMIT_HIGHER &&
	    !(offset == CRDB_LOWER || offset == CRDB_HIGHER)) {
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
	case CRDB_HIGHER:
		crdb_[1] = value;
		return;
	case CRDB_LOWER:
		crdb_[0] = value;
		pending_crdb_ = true;
		doorbell_rung();
		host_.kick();
		return;
	case MHI_SOC_RESET_REQ:
		// The SoC reboots in process(): the host sees SYS_ERR only once
		// nothing of the old boot can touch its memory any more.
		if (value & 1) {
			pending_soc_reset_ = true;
			host_.kick();
		}
		return;
	default:
		error("BAR0: write 0x%x to read-only/reserved 0x%x", value, offset);
		return;
	}
}

void Mhi::write_ctrl(uint32_t value)
{
	if (value & MHICTRL_RESET) {
		// RESET reads back set until the firmware has stopped touching
		// host memory (in process()), then clears with an interrupt: the
		// host waits for that before it frees its rings and buffers.
		mhictrl_ |= MHICTRL_RESET;
		pending_host_reset_ = true;
		host_.kick();
		return;
	}
	if (pending_host_reset_) {
		error("MHICTRL: write 0x%x during a reset ignored", value);
		return;
	}
	mhictrl_ = value & MHICTRL_STATE_MASK;
	const auto req = static_cast<MhiState>((value & MHICTRL_STATE_MASK) >> kStateShift);
	switch (req) {
	case MhiState::M0:
		if (state_ == MhiState::M3) {
			pending_wake_ = true; // resume
			host_.kick();
			return;
		}
		if (state_ != MhiState::Ready && state_ != MhiState::M0) {
			error("MHICTRL: M0 requested in MHI state 0x%x", static_cast<unsigned>(state_));
			return;
		}
		pending_m0_ = true;
		host_.kick();
		return;
	case MhiState::M2:
		// The host's answer to the card's M1; nothing to tell it back.
		if (state_ != MhiState::M1) {
			error("MHICTRL: M2 requested in MHI state 0x%x", static_cast<unsigned>(state_));
			return;
		}
		state_ = MhiState::M2;
		host_.trace("MHI: M2");
		return;
	case MhiState::M3:
		if (state_ != MhiState::M0 && state_ != MhiState::M1 && state_ != MhiState::M2) {
			error("MHICTRL: M3 requested in MHI state 0x%x", static_cast<unsigned>(state_));
			return;
		}
		pending_m3_ = true;
		host_.kick();
		return;
	case MhiState::Reset:
	case MhiState::Ready:
		return;
	default:
		error("MHICTRL: MHI state 0x%x is not supported", static_cast<unsigned>(req));
		return;
	}
}

void Mhi::mhi_reset_from_host()
{
	drop_channels();
	ctx_regs_.fill(0);
	crdb_[0] = crdb_[1] = 0;
	bhi_.intvec = 0; // the host rewrites it after every reset
	// The firmware restarts its MHI side in the same environment; past PBL
	// it is READY again straight away.
	ready_ = ee_ != ExecEnv::Pbl;
	state_ = ready_ ? MhiState::Ready : MhiState::Reset;
	host_.trace("MHI: reset by host");
	if (fn_)
		fn_->mhi_reset();
	// Only now may the host free what the card could still have written to.
	mhictrl_ = 0;
	raise_intvec();
}

void Mhi::drop_channels()
{
	epoch_++;
	for (auto &c : channels_)
		c = Channel{};
	deferred_reset_ = {};
	for (auto &e : events_)
		e->unload();
	events_.clear();
	commands_.unload();
	pending_m0_ = pending_m3_ = pending_wake_ = pending_crdb_ = false;
	pending_erdb_.reset();
	pending_chdb_.reset();
	ul_held_.reset();
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
		if (ee_ != ExecEnv::Pbl) {
			error("BHI: image doorbell outside PBL (EE %u) ignored", static_cast<unsigned>(ee_));
			return;
		}
		pending_bhi_ = true;
		host_.kick();
		return;
	case BHI_INTVEC:
		bhi_.intvec = value;
		return;
	case BHI_STATUS:
		bhi_.status = value;
		return;
	default:
		error("BHI: write 0x%x to read-only/reserved +0x%x", value, offset);
		return;
	}
}

// ---- state machine -----------------------------------------------------

void Mhi::raise_intvec()
{
	const unsigned enabled = host_.msi_vectors_enabled();
	if (enabled)
		host_.raise_msi(bhi_.intvec < enabled ? bhi_.intvec : 0);
}

void Mhi::bhi_complete(uint32_t errcode, uint32_t dbg1, uint32_t dbg2, uint32_t dbg3)
{
	bhi_.err = {errcode, dbg1, dbg2, dbg3};
	bhi_.status = errcode ? kBhiStatusError : kBhiStatusSuccess;
	raise_intvec();
}

void Mhi::become_ready(ExecEnv ee)
{
	drop_channels();
	ee_ = ee;
	ready_ = true;
	state_ = MhiState::Ready;
	note("MHI: READY in EE %u", static_cast<unsigned>(ee));
}

void Mhi::enter_exec_env(ExecEnv ee)
{
	note("MHI: EE %u -> %u%s", static_cast<unsigned>(ee_), static_cast<unsigned>(ee),
	     state_ == MhiState::M0 ? "" : " (no event: not in M0)");
	ee_ = ee;
	if (state_ == MhiState::M0)
		post(0, mhi::ee_event(static_cast<uint8_t>(ee)));
}

void Mhi::sys_err(const char *why)
{
	if (state_ == MhiState::SysErr)
		return;
	sys_err_reason_ = why;
	const bool rings = !events_.empty() && events_[0]->loaded();
	// The card stops touching host memory except to report the error.
	epoch_++;
	for (auto &c : channels_)
		c = Channel{};
	deferred_reset_ = {};
	pending_chdb_.reset();
	ul_held_.reset();
	pending_crdb_ = pending_m0_ = pending_m3_ = pending_wake_ = false;
	state_ = MhiState::SysErr;
	halt_requested_ = true;
	host_.trace("MHI: SYS_ERR");
	if (rings)
		post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::SysErr)));
	else
		raise_intvec();
}

void Mhi::soc_reset()
{
	// A host that had MHI up sees the reboot as SYS_ERR reported by PBL.
	const bool attached = state_ == MhiState::M0 || state_ == MhiState::SysErr;
	const uint32_t intvec = bhi_.intvec;
	host_.trace("MHI: SoC reset");
	reset();
	if (fn_)
		fn_->mhi_reset();
	if (attached) {
		bhi_.intvec = intvec;
		state_ = MhiState::SysErr;
		raise_intvec();
	}
}

void Mhi::do_m0()
{
	if (state_ != MhiState::Ready && state_ != MhiState::M0)
		return;
	// M0 while already in M0 from a new host (a re-probe after a
	// non-graceful remove): forget the old contexts and channels first.
	// From the same host it only asks for M0 again.
	const bool fresh = state_ == MhiState::M0;
	if (fresh && same_session()) {
		repeat_m0();
		return;
	}
	drop_channels();
	if (fresh && fn_)
		fn_->mhi_reset();

	unsigned ner = (mhicfg_ & MHICFG_NER_MASK) >> 16;
	if (ner == 0 || ner > kMaxEventRings) {
		error("MHI: %u event rings configured (1..%u supported)", ner, kMaxEventRings);
		sys_err("MHI: unsupported number of event rings at M0");
		return;
	}
	m0_bases_ = context_bases();
	const uint64_t ecabap = m0_bases_.events;
	for (unsigned i = 0; i < ner; i++) {
		events_.push_back(std::make_unique<mhi::EventRing>(host_));
		events_.back()->load(ecabap + i * sizeof(mhi::EventContext));
	}
	if (!events_[0]->loaded() || !commands_.load(ctx_reg64(CRCBAP_LOWER))) {
		error("MHI: unusable event ring 0 or command ring context at M0");
		sys_err("MHI: unusable event ring 0 or command ring context at M0");
		return;
	}
	state_ = MhiState::M0;
	host_.trace(fresh ? "MHI: M0 (new host)" : "MHI: M0");
	post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::M0)));
	post(0, mhi::ee_event(static_cast<uint8_t>(ee_)));
	if (fn_)
		fn_->mhi_m0();
}

Mhi::ContextBases Mhi::context_bases() const
{
	return {ctx_reg64(CCABAP_LOWER), ctx_reg64(ECABAP_LOWER), ctx_reg64(CRCBAP_LOWER), mhicfg_};
}

// The same host's session goes on when it writes the same context bases
// and left event ring 0's context where the card put it: a new host (even
// one given the same addresses again) starts its rings afresh.
bool Mhi::same_session() const
{
	if (context_bases() != m0_bases_ || events_.empty())
		return false;
	uint64_t rp = 0;
	return host_.dma_read(m0_bases_.events + mhi::kCtxRpOffset, &rp, sizeof(rp)) == DmaStatus::Ok &&
	       rp == events_[0]->rp();
}

// Linux's MHI core runs its READY transition twice when a SYS_ERR's
// recovery and the READY interrupt race, and so writes M0 again, possibly
// after it has already queued commands on the first M0's rings. As the MHI
// endpoint stack, the card answers with M0 and its EE once more and keeps
// every ring, doorbell and channel.
void Mhi::repeat_m0()
{
	host_.trace("MHI: M0 again from the same host");
	post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::M0)));
	post(0, mhi::ee_event(static_cast<uint8_t>(ee_)));
}

bool Mhi::asleep() const
{
	return state_ == MhiState::M1 || state_ == MhiState::M2 || state_ == MhiState::M3;
}

// A channel or command doorbell in M1 or M2, the wake doorbell included, is
// the host wanting the card again (in M3 the host resumes it through MHICTRL
// first). Event-ring doorbells only return credits: the host rings them in
// M2 too.
void Mhi::doorbell_rung()
{
	if (state_ == MhiState::M1 || state_ == MhiState::M2)
		pending_wake_ = true;
}

bool Mhi::enter_m1()
{
	if (state_ != MhiState::M0)
		return false;
	state_ = MhiState::M1;
	host_.trace("MHI: M1");
	post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::M1)));
	return true;
}

void Mhi::do_m3()
{
	if (state_ != MhiState::M0 && state_ != MhiState::M1 && state_ != MhiState::M2)
		return;
	// As the MHI endpoint stack: running channels show SUSPENDED to the
	// host until the resume; the M3 event is the last the host hears.
	for (unsigned ch = 0; ch < kNumChannels; ch++) {
		if (channels_[ch].running)
			write_chstate(ch, mhi::ChannelState::Suspended);
	}
	state_ = MhiState::M3;
	host_.trace("MHI: M3");
	post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::M3)));
}

void Mhi::do_wake()
{
	if (!asleep())
		return;
	const bool resume = state_ == MhiState::M3;
	state_ = MhiState::M0;
	host_.trace(resume ? "MHI: M0 (resumed from M3)" : "MHI: M0 (woken)");
	if (resume) {
		for (unsigned ch = 0; ch < kNumChannels; ch++) {
			if (channels_[ch].running)
				write_chstate(ch, mhi::ChannelState::Running);
		}
	}
	post(0, mhi::state_change_event(static_cast<uint8_t>(MhiState::M0)));
	// What waited: the host's doorbells (still pending) and the firmware's
	// messages for the host.
	for (unsigned ch = 0; ch < kNumChannels; ch++) {
		if (channels_[ch].running && channels_[ch].inbound && !channels_[ch].out.empty())
			reservice(ch);
	}
	host_.kick();
}

// ---- work loop ---------------------------------------------------------

void Mhi::process()
{
	if (pending_soc_reset_) {
		pending_soc_reset_ = pending_host_reset_ = false;
		soc_reset();
	}
	if (pending_host_reset_) {
		pending_host_reset_ = false;
		mhi_reset_from_host();
	}
	if (pending_bhi_) {
		pending_bhi_ = false;
		if (ee_ == ExecEnv::Pbl && fn_)
			fn_->bhi_transfer(bhi_.img_addr, bhi_.img_size);
	}
	if (pending_bhie_) {
		pending_bhie_ = false;
		if (ee_ == ExecEnv::Pbl && fn_)
			fn_->bhie_transfer(bhie_.vec_addr, bhie_.vec_size);
	}
	if (pending_m0_) {
		pending_m0_ = false;
		do_m0();
	}
	if (pending_m3_) {
		pending_m3_ = false;
		do_m3();
	}
	if (pending_wake_) {
		pending_wake_ = false;
		do_wake();
	}
	// Asleep, the card leaves the host's doorbells pending until M0.
	if (!asleep())
		run_doorbells();
	for (auto &e : events_)
		e->poll();
}

void Mhi::run_doorbells()
{
	// Doorbells of event rings the host has re-based since they were
	// loaded are for the rings its coming M0 loads (their write pointer
	// is in the new context): not the old rings' business.
	const bool rebased = ctx_reg64(ECABAP_LOWER) != m0_bases_.events;
	for (unsigned i = 0; i < kMaxEventRings; i++) {
		if (!pending_erdb_.test(i))
			continue;
		pending_erdb_.reset(i);
		if (i < events_.size() && events_[i]->loaded() && !rebased)
			events_[i]->doorbell(er_db_[i]);
	}
	if (deferred_reset_.active && host_.now_ns() >= deferred_reset_.deadline)
		finish_deferred_reset();
	if (pending_crdb_) {
		pending_crdb_ = false;
		do_commands();
	}
	for (unsigned ch = 0; ch < kNumChannels; ch++) {
		if (!pending_chdb_.test(ch))
			continue;
		pending_chdb_.reset(ch);
		channel_doorbell(ch, ch_wp_[ch]);
	}
}

uint64_t Mhi::next_deadline() const
{
	uint64_t d = deferred_reset_.active ? deferred_reset_.deadline : HostInterface::kNoDeadline;
	for (const auto &e : events_)
		d = std::min(d, e->deadline());
	return d;
}

void Mhi::post(unsigned er, const RingElement &e, bool irq)
{
	if (er >= events_.size() || !events_[er]->loaded())
		er = 0;
	if (events_.empty() || !events_[0]->loaded()) {
		error("MHI: event with no event ring loaded dropped");
		return;
	}
	if (events_[er]->post(e, irq) == mhi::EventRing::Post::Fault && er == 0 && state_ != MhiState::SysErr) {
		// The card cannot tell the host anything any more.
		sys_err("MHI: event ring 0 unusable");
	}
}

void Mhi::do_commands()
{
	// Commands complete in ring order: nothing runs while a reset waits
	// for its acknowledgement.
	if (state_ != MhiState::M0 || !commands_.loaded() || deferred_reset_.active)
		return;
	const uint64_t wp = crdb_[0] | (uint64_t{crdb_[1]} << 32);
	const uint64_t epoch = epoch_;
	bool more = false;
	commands_.doorbell(
		wp,
		[this, epoch](const RingElement &e, uint64_t at) {
			const bool go_on = run_command(e, at);
			return go_on && epoch == epoch_ && state_ == MhiState::M0;
		},
		kCommandsPerPass, more);
	// A ring of any length is the host's to choose: the rest waits for
	// the next pass, so that QEMU's main loop and the vCPUs get their turn.
	if (more) {
		pending_crdb_ = true;
		host_.kick();
	}
}

void Mhi::finish_deferred_reset()
{
	const DeferredReset d = deferred_reset_;
	deferred_reset_ = {};
	const uint64_t epoch = epoch_;
	post(0, mhi::command_completion(d.at, Completion::Success));
	if (fn_ && epoch == epoch_)
		fn_->channel_stopped(d.ch);
	// The commands the host queued meanwhile.
	if (epoch == epoch_)
		do_commands();
}

bool Mhi::run_command(const RingElement &e, uint64_t at)
{
	const unsigned ch = mhi::command_channel(e);
	const ElementType type = mhi::element_type(e);
	switch (type) {
	case ElementType::Nop:
		post(0, mhi::command_completion(at, Completion::Success));
		return true;
	case ElementType::StartChannel:
		if (ch >= kNumChannels - 1 || !(channel_ee_mask(ch) & (1u << static_cast<unsigned>(ee_)))) {
			error("MHI: START of channel %u, which the card does not serve in EE %u", ch,
			      static_cast<unsigned>(ee_));
			post(0, mhi::command_completion(at, Completion::UndefinedError));
			return true;
		}
		if (!(channels_[ch].stopped ? restart_channel(ch) : start_channel(ch))) {
			post(0, mhi::command_completion(at, Completion::UndefinedError));
			return true;
		}
		note("MHI: channel %u started", ch);
		post(0, mhi::command_completion(at, Completion::Success));
		if (fn_)
			fn_->channel_started(ch);
		return true;
	case ElementType::ResetChannel:
	case ElementType::StopChannel: {
		if (ch >= kNumChannels - 1) {
			error("MHI: %s of channel %u", type == ElementType::ResetChannel ? "reset" : "stop", ch);
			post(0, mhi::command_completion(at, Completion::UndefinedError));
			return true;
		}
		// Last words on a channel the card still serves; they go out
		// before the command's completion, in event-ring order.
		uint64_t delay = 0;
		if (fn_ && channels_[ch].running) {
			const uint64_t epoch = epoch_;
			delay = std::min(fn_->channel_resetting(ch), kMaxResetAckDelayNs);
			if (epoch != epoch_)
				return false;
		}
		note("MHI: channel %u %s%s", ch, type == ElementType::ResetChannel ? "reset" : "stopped",
		     delay ? " (acknowledged after its last messages)" : "");
		// The host's context tells where the card stands, as the MHI
		// endpoint stack keeps it: a stopped channel keeps its place in
		// the ring (rp) for its next START, a reset one is disabled.
		if (type == ElementType::StopChannel && channels_[ch].running) {
			Channel &c = channels_[ch];
			c.running = false;
			c.stopped = true;
			pending_chdb_.reset(ch);
			const uint64_t rp = c.rp;
			host_.dma_write(c.ctx + mhi::kCtxRpOffset, &rp, sizeof(rp));
			write_chstate(ch, mhi::ChannelState::Stop);
		} else {
			const bool known = channels_[ch].running || channels_[ch].stopped;
			stop_channel(ch);
			if (known)
				write_chstate(ch, mhi::ChannelState::Disabled);
		}
		if (delay) {
			deferred_reset_ = {true, ch, at, host_.now_ns() + delay};
			return false;
		}
		post(0, mhi::command_completion(at, Completion::Success));
		if (fn_)
			fn_->channel_stopped(ch);
		return true;
	}
	default:
		error("MHI: unknown command type 0x%x", static_cast<unsigned>(type));
		post(0, mhi::command_completion(at, Completion::UndefinedError));
		return true;
	}
}

bool Mhi::start_channel(unsigned ch)
{
	const uint64_t ctx_addr = ctx_reg64(CCABAP_LOWER) + uint64_t{ch} * sizeof(mhi::ChannelContext);
	mhi::ChannelContext ctx;
	if (host_.dma_read(ctx_addr, &ctx, sizeof(ctx)) != DmaStatus::Ok) {
		error("MHI: channel %u context unreadable", ch);
		return false;
	}
	const mhi::RingGeometry geo{ctx.rbase, ctx.rlen};
	if (!geo.valid() || !geo.contains(ctx.rp) || !geo.contains(ctx.wp)) {
		error("MHI: channel %u context describes no valid ring", ch);
		return false;
	}
	if (ctx.chtype != 1 && ctx.chtype != 2) {
		error("MHI: channel %u has type %u", ch, ctx.chtype);
		return false;
	}
	Channel &c = channels_[ch];
	c = Channel{};
	c.running = true;
	c.inbound = ctx.chtype == 2;
	c.er = ctx.erindex;
	c.ctx = ctx_addr;
	c.geo = geo;
	c.rp = ctx.rp;
	c.wp = ctx.wp;
	// The host writes the context's wp before each doorbell: a doorbell
	// still pending is of this ring at most as far, or of the one before.
	ch_wp_[ch] = c.wp;
	const uint32_t chcfg = (ctx.chcfg & ~0xFFu) | static_cast<uint32_t>(mhi::ChannelState::Running);
	host_.dma_write(ctx_addr + mhi::kChCtxCfgOffset, &chcfg, sizeof(chcfg));
	return true;
}

// START of a channel the host stopped: it goes on from where it stood, up
// to what the host has queued since (the context's wp).
bool Mhi::restart_channel(unsigned ch)
{
	Channel &c = channels_[ch];
	uint64_t wp = 0;
	if (host_.dma_read(c.ctx + mhi::kCtxWpOffset, &wp, sizeof(wp)) != DmaStatus::Ok || !c.geo.contains(wp)) {
		error("MHI: channel %u context unusable at its restart", ch);
		stop_channel(ch);
		return false;
	}
	c.stopped = false;
	c.running = true;
	c.wp = wp;
	write_chstate(ch, mhi::ChannelState::Running);
	if (c.rp != c.wp || (c.inbound && !c.out.empty()))
		reservice(ch);
	return true;
}

void Mhi::write_chstate(unsigned ch, mhi::ChannelState st)
{
	const uint64_t addr = ctx_reg64(CCABAP_LOWER) + uint64_t{ch} * sizeof(mhi::ChannelContext) + mhi::kChCtxCfgOffset;
	uint32_t chcfg = 0;
	if (host_.dma_read(addr, &chcfg, sizeof(chcfg)) != DmaStatus::Ok)
		return;
	chcfg = (chcfg & ~0xFFu) | static_cast<uint32_t>(st);
	host_.dma_write(addr, &chcfg, sizeof(chcfg));
}

uint32_t Mhi::channel_ee_mask(unsigned ch) const
{
	// The family's table (aic100/family.h), pairs 0/1 .. 22/23.
	return ch / 2 < cfg_.channels.size() ? cfg_.channels[ch / 2] : 0;
}

std::string Mhi::describe_dl(unsigned ch) const
{
	char out[400];
	if (ch >= kNumChannels || !channels_[ch].running) {
		std::snprintf(out, sizeof(out), "channel %u not running", ch);
		return out;
	}
	const Channel &c = channels_[ch];
	// The host writes the context's wp as it rings the doorbell: a wp
	// ahead of the card's is a doorbell the card never saw. Transfer TREs
	// past the card's wp are buffers the host queued without ringing.
	mhi::ChannelContext ctx{};
	const bool ctx_ok = host_.dma_read(c.ctx, &ctx, sizeof(ctx)) == DmaStatus::Ok && c.geo.contains(ctx.wp);
	unsigned queued_unrung = 0;
	for (uint64_t at = c.wp; c.geo.next(at) != c.rp; at = c.geo.next(at)) {
		RingElement e;
		if (host_.dma_read(at, &e, sizeof(e)) != DmaStatus::Ok || mhi::element_type(e) != ElementType::Transfer ||
		    !e.ptr)
			break;
		queued_unrung++;
	}
	int n = std::snprintf(out, sizeof(out),
			      "channel %u: card rp %llu wp %llu of %llu; host context wp %lld; %u transfer TREs past "
			      "the card's wp",
			      ch, c.geo.index(c.rp), c.geo.index(c.wp), static_cast<unsigned long long>(c.geo.elements()),
			      ctx_ok ? static_cast<long long>(c.geo.index(ctx.wp)) : -1LL, queued_unrung);
	const unsigned er = c.er < events_.size() ? c.er : 0;
	if (er < events_.size() && n > 0 && static_cast<size_t>(n) < sizeof(out)) {
		const auto s = events_[er]->snapshot();
		const uint64_t now = host_.now_ns();
		std::snprintf(out + n, sizeof(out) - n,
			      "; event ring %u: card rp %llu wp %llu of %llu, host context rp %lld wp %lld, %zu queued, "
			      "MSI %u %s, last sent %.3f s ago",
			      er, static_cast<unsigned long long>(s.rp), static_cast<unsigned long long>(s.wp),
			      static_cast<unsigned long long>(s.elements), s.ctx_readable ? static_cast<long long>(s.ctx_rp) : -1LL,
			      s.ctx_readable ? static_cast<long long>(s.ctx_wp) : -1LL, s.queued, s.msivec,
			      s.msi_held ? "held (moderation)" : "not held",
			      s.last_msi_ns ? static_cast<double>(now - s.last_msi_ns) / 1e9 : -1.0);
	}
	return out;
}

void Mhi::retire_channel(unsigned ch)
{
	if (ch < kNumChannels)
		stop_channel(ch);
}

void Mhi::stop_channel(unsigned ch)
{
	channels_[ch] = Channel{};
	pending_chdb_.reset(ch);
}

bool Mhi::channel_running(unsigned ch) const
{
	return ch < kNumChannels && channels_[ch].running;
}

// The host never takes back a TRE it posted, so a write pointer that would
// leave fewer posted than one the card already has is an older doorbell
// landing last. Linux's mhi_queue() reads the ring's wp and writes the
// doorbell outside the channel lock: a client that queues from two contexts
// at once (qaic's boot log: its probe loop and its completion handler) can
// ring an older value after a newer one. Taking it would hide TREs the host
// did post, for good if it then has nothing more to queue.
bool Mhi::older(const Channel &c, uint64_t wp, uint64_t than)
{
	return c.running && c.geo.contains(wp) && c.geo.contains(than) && posted(c, wp) < posted(c, than);
}

bool Mhi::doorbell_is_older(unsigned ch, uint64_t wp, uint64_t than)
{
	const Channel &c = channels_[ch];
	if (!older(c, wp, than))
		return false;
	note("MHI: channel %u: doorbell at TRE %llu behind TRE %llu ignored (an older doorbell landing last)", ch,
	     c.geo.index(wp),
	     c.geo.index(than));
	return true;
}

void Mhi::take_channel_doorbell(unsigned ch, uint64_t wp)
{
	// Doorbells are latched until process(); the furthest one counts.
	const uint64_t latest = pending_chdb_.test(ch) ? ch_wp_[ch] : channels_[ch].wp;
	if (doorbell_is_older(ch, wp, latest))
		return;
	ch_wp_[ch] = wp;
	pending_chdb_.set(ch);
}

void Mhi::reservice(unsigned ch)
{
	const Channel &c = channels_[ch];
	if (!pending_chdb_.test(ch) || older(c, ch_wp_[ch], c.wp))
		ch_wp_[ch] = c.wp;
	pending_chdb_.set(ch);
}

void Mhi::channel_doorbell(unsigned ch, uint64_t wp)
{
	Channel &c = channels_[ch];
	if (state_ != MhiState::M0 || !c.running)
		return; // stale doorbell of a channel the card no longer serves
	if (!c.geo.contains(wp)) {
		error("MHI: channel %u doorbell 0x%llx outside its ring", ch, static_cast<unsigned long long>(wp));
		return;
	}
	if (doorbell_is_older(ch, wp, c.wp))
		return;
	// The host writes the context's wp, after the TREs, just before each
	// doorbell (MHI requires it; Linux's mhi_ring_chan_db() does it), so
	// the context is never behind the doorbell it precedes. A doorbell
	// ahead of the context is therefore an older one that landed after
	// the card had consumed past it: by its value alone it posts the ring
	// nearly full. The context says what is posted then (as a card in
	// burst mode reads it). A context the card cannot use leaves the
	// doorbell's value.
	uint64_t ctx_wp = 0;
	if (posted(c, wp) > posted(c) &&
	    host_.dma_read(c.ctx + mhi::kCtxWpOffset, &ctx_wp, sizeof(ctx_wp)) == DmaStatus::Ok &&
	    c.geo.contains(ctx_wp) && posted(c, ctx_wp) < posted(c, wp)) {
		note("MHI: channel %u: doorbell at TRE %llu ahead of the context's TRE %llu: an older doorbell "
		     "landing last, behind what the card consumed",
		     ch, c.geo.index(wp),
		     c.geo.index(ctx_wp));
		if (posted(c, ctx_wp) <= posted(c))
			return;
		wp = ctx_wp;
	}
	c.wp = wp;
	// Counted before the card fills any of them: see dl_unreturned().
	c.posted_high = std::max(c.posted_high, posted(c));
	service_channel(ch);
}

void Mhi::service_channel(unsigned ch)
{
	if (channels_[ch].inbound)
		service_dl(ch);
	else
		service_ul(ch);
}

// Collects the TREs of the TD at the channel's rp; `end` is where the next
// TD starts. Its buffers are read only once it is complete, so that a TD
// the host is still writing is not read twice.
Mhi::TdScan Mhi::scan_td(unsigned ch, std::vector<RingElement> &tres, uint64_t &end)
{
	const Channel &c = channels_[ch];
	uint64_t p = c.rp;
	while (p != c.wp) {
		RingElement e;
		if (host_.dma_read(p, &e, sizeof(e)) != DmaStatus::Ok) {
			error("MHI: channel %u TRE at 0x%llx unreadable", ch, static_cast<unsigned long long>(p));
			stop_channel(ch);
			return TdScan::Failed;
		}
		if (tres.size() == kMaxTdTres) {
			error("MHI: channel %u: TD of more than %zu TREs; channel stopped", ch, kMaxTdTres);
			stop_channel(ch);
			return TdScan::Failed;
		}
		tres.push_back(e);
		p = c.geo.next(p);
		if (!(e.dword1 & mhi::kTreChain)) {
			end = p;
			return TdScan::Complete;
		}
	}
	return TdScan::Partial; // the rest of the chain has not been rung yet
}

// The TD's data, or false when any of it is unusable (every TRE is still
// looked at, so that each error is reported).
bool Mhi::read_td(unsigned ch, const std::vector<RingElement> &tres, std::vector<uint8_t> &data)
{
	bool ok = true;
	for (const auto &e : tres) {
		if (mhi::element_type(e) != ElementType::Transfer) {
			error("MHI: channel %u: element type 0x%x in a transfer ring", ch,
			      static_cast<unsigned>(mhi::element_type(e)));
			ok = false;
			continue;
		}
		const uint32_t len = mhi::tre_length(e);
		if (!ok || data.size() + len > kMaxTdBytes) {
			if (ok)
				error("MHI: channel %u: transfer longer than %zu bytes dropped", ch, kMaxTdBytes);
			ok = false;
			continue;
		}
		const size_t old = data.size();
		data.resize(old + len);
		if (len && host_.dma_read(e.ptr, data.data() + old, len) != DmaStatus::Ok) {
			error("MHI: channel %u: buffer at 0x%llx unreadable", ch, static_cast<unsigned long long>(e.ptr));
			ok = false;
		}
	}
	return ok;
}

// Completions: EOB for every TRE that asks (IEOB), and one EOT per TD at its
// last TRE (IEOT). The host frees the buffers on them, so even a refused TD
// is completed.
void Mhi::complete_td(unsigned ch, const std::vector<RingElement> &tres)
{
	const Channel &c = channels_[ch];
	uint64_t tre = c.rp;
	for (size_t i = 0; i < tres.size(); i++, tre = c.geo.next(tre)) {
		const RingElement &e = tres[i];
		const bool end = i + 1 == tres.size();
		if (end && (e.dword1 & mhi::kTreIeot))
			post(c.er, mhi::transfer_event(tre, mhi::Completion::Eot, mhi::tre_length(e), ch),
			     !(e.dword1 & mhi::kTreBei));
		else if (e.dword1 & mhi::kTreIeob)
			post(c.er, mhi::transfer_event(tre, mhi::Completion::Eob, mhi::tre_length(e), ch),
			     !(e.dword1 & mhi::kTreBei));
	}
}

// What a TD at the channel's rp costs the pass's UL budget: each TRE
// kUlTreCost whatever its length (a read, a TD's bookkeeping, maybe an
// event), or its read's cost outside RAM if more, and the buffers' bytes as
// HostInterface::dma_cost weighs them.
uint64_t Mhi::td_cost(const Channel &c, const std::vector<RingElement> &tres) const
{
	uint64_t cost = 0, tre = c.rp;
	for (const auto &e : tres) {
		cost += std::max<uint64_t>(kUlTreCost, host_.dma_cost(tre, sizeof(e), false));
		if (mhi::element_type(e) == ElementType::Transfer)
			cost += host_.dma_cost(e.ptr, mhi::tre_length(e), false);
		tre = c.geo.next(tre);
	}
	return cost;
}

void Mhi::service_ul(unsigned ch)
{
	const uint64_t epoch = epoch_;
	size_t budget = kUlBudgetBytes;
	for (;;) {
		Channel &c = channels_[ch];
		// The function holds the channel while the work of a message it
		// took goes on over several passes (hold_ul()).
		if (epoch != epoch_ || !c.running || c.rp == c.wp || ul_held_.test(ch))
			return;
		if (budget == 0) {
			// The rest in a later pass: a ring full of large TDs must not
			// hold the event loop.
			reservice(ch);
			host_.kick();
			return;
		}
		std::vector<RingElement> tres;
		uint64_t end = 0;
		if (scan_td(ch, tres, end) != TdScan::Complete)
			return;
		std::vector<uint8_t> data;
		const bool ok = read_td(ch, tres, data);
		complete_td(ch, tres);
		const uint64_t cost = td_cost(c, tres);
		c.rp = end;
		budget -= std::min<uint64_t>(budget, cost);
		if (ok && fn_)
			fn_->ul_message(ch, data);
	}
}

void Mhi::hold_ul(unsigned ch, bool hold)
{
	if (ch >= kNumChannels || ul_held_.test(ch) == hold)
		return;
	ul_held_.set(ch, hold);
	const Channel &c = channels_[ch];
	if (!hold && c.running && !c.inbound && c.rp != c.wp) {
		reservice(ch);
		host_.kick();
	}
}

bool Mhi::send(unsigned ch, std::vector<uint8_t> msg, bool may_split)
{
	if (ch >= kNumChannels || !channels_[ch].running || !channels_[ch].inbound || msg.empty())
		return false;
	Channel &c = channels_[ch];
	if (c.out.size() >= kMaxDlQueue || c.out_bytes + msg.size() > kMaxDlQueueBytes) {
		error("MHI: channel %u: host posts no buffers; message dropped", ch);
		return false;
	}
	c.out_bytes += msg.size();
	c.out.push_back({std::move(msg), may_split});
	if (asleep()) {
		// It goes out once the host has the card back in M0.
		reservice(ch);
		return true;
	}
	service_dl(ch);
	return true;
}

size_t Mhi::dl_backlog(unsigned ch) const
{
	return ch < kNumChannels ? channels_[ch].out.size() : 0;
}

size_t Mhi::events_without_credit() const
{
	size_t n = 0;
	for (const auto &e : events_)
		n += e->queued();
	return n;
}

size_t Mhi::posted(const Channel &c, uint64_t wp)
{
	return static_cast<size_t>((wp + c.geo.len - c.rp) % c.geo.len / mhi::kElementSize);
}

size_t Mhi::dl_unreturned(unsigned ch) const
{
	if (ch >= kNumChannels || !channels_[ch].running || !channels_[ch].inbound)
		return 0;
	const Channel &c = channels_[ch];
	return c.posted_high - std::min(c.posted_high, posted(c));
}

void Mhi::service_dl(unsigned ch)
{
	const uint64_t epoch = epoch_;
	for (;;) {
		Channel &c = channels_[ch];
		if (epoch != epoch_ || !c.running)
			return;
		if (c.out.empty() || c.rp == c.wp)
			break;
		RingElement e;
		if (host_.dma_read(c.rp, &e, sizeof(e)) != DmaStatus::Ok ||
		    mhi::element_type(e) != ElementType::Transfer) {
			error("MHI: channel %u: unusable TRE at 0x%llx", ch, static_cast<unsigned long long>(c.rp));
			stop_channel(ch);
			return;
		}
		Outgoing &m = c.out.front();
		const size_t left = m.data.size() - c.out_offset;
		const uint32_t room = mhi::tre_length(e);
		Completion code = Completion::Eot;
		size_t n = std::min<size_t>(left, room);
		if (!m.may_split && left > room)
			code = Completion::Overflow; // the host drops it
		if (n && host_.dma_write(e.ptr, m.data.data() + c.out_offset, n) != DmaStatus::Ok) {
			error("MHI: channel %u: buffer at 0x%llx not writable", ch,
			      static_cast<unsigned long long>(e.ptr));
			code = Completion::Overflow;
			n = 0;
		}
		c.out_offset += n;
		if (code != Completion::Eot || c.out_offset == m.data.size()) {
			c.out_bytes -= m.data.size();
			c.out.pop_front();
			c.out_offset = 0;
		}
		const uint64_t tre = c.rp;
		c.rp = c.geo.next(c.rp);
		post(c.er, mhi::transfer_event(tre, code, static_cast<uint32_t>(n), ch), !(e.dword1 & mhi::kTreBei));
	}
	// Also when nothing was sent: a host posting buffers again is how the
	// firmware learns that it has read what it was sent.
	if (channels_[ch].out.empty() && fn_)
		fn_->dl_drained(ch);
}

} // namespace aic100
