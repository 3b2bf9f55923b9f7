// SPDX-License-Identifier: GPL-2.0-or-later
// A miniature MHI host for unit tests: it lays out contexts and rings in the
// FakeHost's memory and drives a Device through BAR0 the way the Linux MHI
// host stack does (BHI load, READY handshake, channel start, TREs, event
// processing with credit return), so whole boot flows run without a guest.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "aic100/bhie.h"
#include "aic100/device.h"
#include "aic100/mhi_wire.h"
#include "aic100/regs.h"
#include "fake_host.h"

namespace aic100::test {

class HostMhi {
public:
	static constexpr unsigned kEventElements = 32;
	static constexpr unsigned kCmdElements = 128;

	HostMhi(FakeHost &h, Device &d) : h_(h), d_(d), mhi_bar_(family_config(d.config().family).mhi_bar) {}

	// The MHI BAR's registers (BAR0, or BAR1 on AIC200).
	void w(uint32_t off, uint32_t v) { d_.bar_write(mhi_bar_, off, v, 4); }
	uint32_t r(uint32_t off) { return static_cast<uint32_t>(d_.bar_read(mhi_bar_, off, 4)); }
	uint32_t bhi(uint32_t off) { return r(regs::kBhiBase + off); }
	// The BHIe block, where BHIEOFF says it is.
	uint32_t bhie(uint32_t off) { return r(r(regs::BHIEOFF) + off); }

	// Lets the device run its queued work, then handles its events.
	void settle()
	{
		for (int i = 0; i < 64; i++) {
			d_.process();
			if (!drain_events())
				return;
		}
	}
	// Advances the clock to the device's timer and runs it.
	void fire_timer()
	{
		if (h_.deadline != HostInterface::kNoDeadline && h_.deadline > h_.clock_ns)
			h_.clock_ns = h_.deadline;
		settle();
	}

	uint64_t alloc(uint64_t size, uint64_t align = 16)
	{
		next_ = (next_ + align - 1) & ~(align - 1);
		const uint64_t a = next_;
		next_ += size;
		return a;
	}
	void put(uint64_t addr, const void *p, size_t n) { h_.poke(addr, p, n); }
	std::vector<uint8_t> get(uint64_t addr, size_t n)
	{
		std::vector<uint8_t> v(n);
		h_.peek(addr, v.data(), n);
		return v;
	}
	template <typename T> T get_obj(uint64_t addr)
	{
		T t{};
		h_.peek(addr, &t, sizeof(t));
		return t;
	}

	// PBL path: hands the image to BHI; returns BHI_STATUS[31:30].
	uint32_t bhi_load(const std::vector<uint8_t> &img)
	{
		const uint64_t a = alloc(img.size(), 4096);
		put(a, img.data(), img.size());
		w(regs::kBhiBase + regs::BHI_STATUS, 0);
		w(regs::kBhiBase + regs::BHI_IMGADDR_HIGH, static_cast<uint32_t>(a >> 32));
		w(regs::kBhiBase + regs::BHI_IMGADDR_LOW, static_cast<uint32_t>(a));
		w(regs::kBhiBase + regs::BHI_IMGSIZE, static_cast<uint32_t>(img.size()));
		w(regs::kBhiBase + regs::BHI_IMGTXDB, 0x1234);
		settle();
		return bhi(regs::BHI_STATUS) >> 30;
	}

	// PBL path over BHIe, as upstream's mhi_fw_load_bhie: the image in
	// separately allocated segments of `seg_len` bytes, the vector table,
	// then TXVECADDR, TXVECSIZE and the doorbell's read-modify-write.
	// Returns TXVECSTATUS.
	uint32_t bhie_load(const std::vector<uint8_t> &img, uint32_t seg_len = 512 * 1024, uint32_t seq = 0x2345)
	{
		std::vector<bhie::VecEntry> table;
		for (size_t off = 0; off < img.size(); off += seg_len) {
			const size_t n = std::min<size_t>(seg_len, img.size() - off);
			const uint64_t seg = alloc(seg_len + 4096, 4096); // a gap between segments
			put(seg, img.data() + off, n);
			table.push_back({seg, n});
		}
		const uint64_t at = alloc(table.size() * sizeof(bhie::VecEntry), 64);
		put(at, table.data(), table.size() * sizeof(bhie::VecEntry));
		return bhie_ring(at, static_cast<uint32_t>(table.size() * sizeof(bhie::VecEntry)), seq);
	}
	// The register writes of a BHIe load of the table at `at`; TXVECSTATUS.
	uint32_t bhie_ring(uint64_t at, uint32_t table_bytes, uint32_t seq)
	{
		const uint32_t base = r(regs::BHIEOFF);
		w(base + bhie::TXVECADDR_HIGH, static_cast<uint32_t>(at >> 32));
		w(base + bhie::TXVECADDR_LOW, static_cast<uint32_t>(at));
		w(base + bhie::TXVECSIZE, table_bytes);
		const uint32_t db = r(base + bhie::TXVECDB);
		w(base + bhie::TXVECDB, (db & ~bhie::kSeqMask) | (seq & bhie::kSeqMask));
		settle();
		return r(base + bhie::TXVECSTATUS);
	}

	// mhi_init_mmio + event credits + M0, as mhi_ready_state_transition.
	void ready_handshake()
	{
		if (!reuse_addresses || !ccabap_) {
			ccabap_ = alloc(128 * sizeof(mhi::ChannelContext), 64);
			ecabap_ = alloc(sizeof(mhi::EventContext), 64);
			crcbap_ = alloc(sizeof(mhi::CommandContext), 64);
			ev_base_ = alloc(kEventElements * 16, kEventElements * 16);
			cmd_base_ = cmd_base_at ? cmd_base_at : alloc(cmd_elements * 16, cmd_elements * 16);
		}
		std::vector<uint8_t> zero(128 * sizeof(mhi::ChannelContext), 0);
		put(ccabap_, zero.data(), zero.size());
		mhi::EventContext ec{};
		ec.ertype = 1;
		ec.rbase = ev_base_;
		ec.rlen = kEventElements * 16;
		ec.rp = ec.wp = ev_base_;
		ec.intmod = intmod_ms << 16;
		put(ecabap_, &ec, sizeof(ec));
		mhi::CommandContext cc{};
		cc.rbase = cmd_base_;
		cc.rlen = uint64_t{cmd_elements} * 16;
		cc.rp = cc.wp = cmd_base_;
		put(crcbap_, &cc, sizeof(cc));
		ev_rp_ = ev_base_;
		cmd_wp_ = cmd_base_;
		chans_.clear();
		rx.clear();
		rx_codes.clear();
		ul_done.clear();
		ul_codes.clear();
		order.clear();

		set64(regs::CCABAP_LOWER, ccabap_);
		set64(regs::ECABAP_LOWER, ecabap_);
		set64(regs::CRCBAP_LOWER, crcbap_);
		w(regs::MHICFG, (r(regs::MHICFG) & 0xFFFF) | (1u << 16));
		// Credits: all but one slot.
		ev_wp_ = ev_base_ + (kEventElements - 1) * 16;
		put(ecabap_ + mhi::kCtxWpOffset, &ev_wp_, 8);
		ring(regs::kErdbBase, ev_wp_);
		// A card in a guest runs between the host's register writes.
		if (run_between_writes)
			d_.process();
		w(regs::MHICTRL, (r(regs::MHICTRL) & ~0xFF00u) | (2u << 8));
		settle();
	}

	// START_CHAN, as mhi_prepare_channel; true on a SUCCESS completion.
	bool start(unsigned ch, unsigned elements = 32)
	{
		init_channel(ch, elements);
		return command(ch, mhi::ElementType::StartChannel) == 1;
	}
	// Writes the channel's ring and context, as mhi_init_chan_ctxt.
	void init_channel(unsigned ch, unsigned elements = 32)
	{
		Chan c;
		c.elements = elements;
		c.base = chan_base_at ? chan_base_at : alloc(elements * 16, elements * 16);
		c.wp = c.rp = c.base;
		mhi::ChannelContext ctx{};
		ctx.chcfg = 1 | (2u << 8);
		ctx.chtype = (ch & 1) ? 2 : 1;
		ctx.rbase = c.base;
		ctx.rlen = elements * 16;
		ctx.rp = ctx.wp = c.base;
		put(ccabap_ + ch * sizeof(ctx), &ctx, sizeof(ctx));
		chans_[ch] = c;
	}
	bool reset_channel(unsigned ch) { return command(ch, mhi::ElementType::ResetChannel) == 1; }
	// The channel's context as the host's memory has it.
	mhi::ChannelContext context(unsigned ch) { return get_obj<mhi::ChannelContext>(ccabap_ + ch * sizeof(mhi::ChannelContext)); }
	// Where the host writes the channel's next TRE.
	uint64_t ring_wp(unsigned ch) const { return chans_.at(ch).wp; }
	void set_state(regs::MhiState st) { w(regs::MHICTRL, (r(regs::MHICTRL) & ~0xFF00u) | (uint32_t{static_cast<uint8_t>(st)} << 8)); }

	uint8_t command(unsigned ch, mhi::ElementType t)
	{
		const uint64_t at = issue(ch, t);
		auto it = cmd_done.find(at);
		return it == cmd_done.end() ? 0 : it->second;
	}
	// Rings one command and (unless told not to) lets the device run;
	// returns the command's address, the key of its completion in
	// cmd_done (absent until then).
	uint64_t issue(unsigned ch, mhi::ElementType t, bool run = true)
	{
		const mhi::RingElement e{0, 0, (uint32_t{ch} << 24) | (uint32_t{static_cast<uint8_t>(t)} << 16)};
		const uint64_t at = cmd_wp_;
		put(at, &e, sizeof(e));
		cmd_wp_ = next(cmd_wp_, cmd_base_, cmd_elements);
		put(crcbap_ + mhi::kCtxWpOffset, &cmd_wp_, 8);
		w(regs::CRDB_HIGHER, static_cast<uint32_t>(cmd_wp_ >> 32));
		w(regs::CRDB_LOWER, static_cast<uint32_t>(cmd_wp_));
		if (run)
			settle();
		return at;
	}

	// Queues `n` empty receive buffers on DL channel `ch`.
	void queue_dl(unsigned ch, uint32_t len, unsigned n = 1)
	{
		Chan &c = chans_.at(ch);
		for (unsigned i = 0; i < n; i++) {
			const uint64_t buf = alloc(len, 8);
			add_tre(c, buf, len, mhi::kTreIeot);
			c.bufs[c.last] = {buf, len};
		}
		ring_channel(ch);
		settle();
	}

	// Writes `n` receive TREs on DL channel `ch` and rings no doorbell: a
	// host whose MHI state forbids doorbells (MHI_DB_ACCESS_VALID).
	void queue_dl_unrung(unsigned ch, uint32_t len, unsigned n)
	{
		Chan &c = chans_.at(ch);
		for (unsigned i = 0; i < n; i++) {
			const uint64_t buf = alloc(len, 8);
			add_tre(c, buf, len, mhi::kTreIeot);
			c.bufs[c.last] = {buf, len};
		}
	}

	// Sends one TD on UL channel `ch`, one TRE per piece (CHAIN on all but
	// the last, which has IEOT), plus `extra` flags on every TRE.
	void send(unsigned ch, const std::vector<std::vector<uint8_t>> &pieces, uint32_t extra = 0)
	{
		Chan &c = chans_.at(ch);
		for (size_t i = 0; i < pieces.size(); i++) {
			const uint64_t buf = alloc(pieces[i].size() + 1, 8);
			put(buf, pieces[i].data(), pieces[i].size());
			const bool last = i + 1 == pieces.size();
			add_tre(c, buf, static_cast<uint32_t>(pieces[i].size()),
				(last ? mhi::kTreIeot : mhi::kTreChain) | extra);
		}
		ring_channel(ch);
		settle();
	}
	void send(unsigned ch, const std::vector<uint8_t> &msg) { send(ch, std::vector<std::vector<uint8_t>>{msg}); }
	// Queues `n` one-TRE TDs of `len` bytes on UL channel `ch`, the k-th at
	// host address base + k * len (contents as the host's memory has them),
	// only the last asking for a completion event, and rings the doorbell
	// without letting the device run.
	void queue_ul(unsigned ch, uint64_t base, uint32_t len, unsigned n)
	{
		Chan &c = chans_.at(ch);
		for (unsigned k = 0; k < n; k++)
			add_tre(c, base + uint64_t{k} * len, len, k + 1 == n ? mhi::kTreIeot : 0);
		ring_channel(ch);
	}

	// Moves the channel's write pointer `n` elements on over TREs the ring
	// already holds (as the host's memory has them) and rings the doorbell.
	void advance(unsigned ch, unsigned n)
	{
		Chan &c = chans_.at(ch);
		for (unsigned k = 0; k < n; k++)
			c.wp = next(c.wp, c.base, c.elements);
		ring_channel(ch);
	}

	// The channel's context wp, then its doorbell, as mhi_ring_chan_db().
	void ring_channel(unsigned ch)
	{
		const uint64_t wp = chans_.at(ch).wp;
		put(ccabap_ + ch * sizeof(mhi::ChannelContext) + mhi::kCtxWpOffset, &wp, 8);
		ring(regs::kChdbBase + 8 * ch, wp);
	}

	void ring(uint32_t db, uint64_t v)
	{
		w(db + 4, static_cast<uint32_t>(v >> 32));
		w(db, static_cast<uint32_t>(v));
	}

	// Handles every new event; returns whether there were any.
	bool drain_events()
	{
		if (!ecabap_)
			return false;
		const uint64_t dev_rp = get_obj<uint64_t>(ecabap_ + mhi::kCtxRpOffset);
		unsigned n = 0;
		while (ev_rp_ != dev_rp) {
			const auto e = get_obj<mhi::RingElement>(ev_rp_);
			handle(e);
			ev_rp_ = next(ev_rp_, ev_base_, kEventElements);
			n++;
		}
		if (n) {
			for (unsigned i = 0; i < n; i++)
				ev_wp_ = next(ev_wp_, ev_base_, kEventElements);
			put(ecabap_ + mhi::kCtxWpOffset, &ev_wp_, 8);
			ring(regs::kErdbBase, ev_wp_);
		}
		return n != 0;
	}

	// What the device sent on DL channels, one entry per completed buffer.
	std::map<unsigned, std::deque<std::vector<uint8_t>>> rx;
	std::map<unsigned, std::vector<uint8_t>> rx_codes;
	std::map<unsigned, unsigned> ul_done;
	std::map<unsigned, std::vector<uint8_t>> ul_codes;
	std::map<uint64_t, uint8_t> cmd_done;
	std::vector<uint8_t> states, ees;
	// Command completions ("cmd") and DL completions ("rx<ch>") as handled.
	std::vector<std::string> order;
	bool requeue = true; // give DL buffers back after each completion
	// The command ring of the next ready_handshake(): its size, and where
	// it is (0: allocated here).
	unsigned cmd_elements = kCmdElements;
	uint64_t cmd_base_at = 0;
	uint64_t chan_base_at = 0; // where init_channel puts the next ring (0: allocated here)
	std::set<unsigned> keep_buffers; // DL channels whose buffers are not given back
	uint32_t intmod_ms = 0;
	bool run_between_writes = false; // ready_handshake lets the device run before its M0
	bool reuse_addresses = false;    // ready_handshake keeps the last one's rings and contexts

	std::vector<uint8_t> pop(unsigned ch)
	{
		auto &q = rx[ch];
		if (q.empty())
			return {};
		auto v = std::move(q.front());
		q.pop_front();
		return v;
	}

private:
	struct Chan {
		unsigned elements = 32;
		uint64_t base = 0, wp = 0, rp = 0, last = 0;
		std::map<uint64_t, std::pair<uint64_t, uint32_t>> bufs; // TRE -> buffer
	};

	static uint64_t next(uint64_t p, uint64_t base, unsigned n) { return p + 16 == base + n * 16 ? base : p + 16; }
	void set64(uint32_t lower, uint64_t v)
	{
		w(lower + 4, static_cast<uint32_t>(v >> 32));
		w(lower, static_cast<uint32_t>(v));
	}
	void add_tre(Chan &c, uint64_t buf, uint32_t len, uint32_t flags)
	{
		const mhi::RingElement e{buf, len, (uint32_t{0x02} << 16) | flags};
		put(c.wp, &e, sizeof(e));
		c.last = c.wp;
		c.wp = next(c.wp, c.base, c.elements);
	}
	void handle(const mhi::RingElement &e)
	{
		const auto type = mhi::element_type(e);
		const uint8_t code = e.dword0 >> 24;
		switch (type) {
		case mhi::ElementType::StateChangeEvent:
			states.push_back(code);
			return;
		case mhi::ElementType::ExecEnvEvent:
			ees.push_back(code);
			return;
		case mhi::ElementType::CommandCompletionEvent:
			cmd_done[e.ptr] = code;
			order.push_back("cmd");
			return;
		case mhi::ElementType::TransferEvent: {
			const unsigned ch = e.dword1 >> 24;
			if (!chans_.count(ch))
				return;
			Chan &c = chans_[ch];
			if (!(ch & 1)) {
				ul_done[ch]++;
				ul_codes[ch].push_back(code);
				return;
			}
			auto it = c.bufs.find(e.ptr);
			if (it == c.bufs.end())
				return;
			order.push_back("rx" + std::to_string(ch));
			const uint32_t n = std::min<uint32_t>(e.dword0 & 0xFFFF, it->second.second);
			rx[ch].push_back(get(it->second.first, n));
			rx_codes[ch].push_back(code);
			const uint32_t len = it->second.second;
			c.bufs.erase(it);
			if (requeue && !keep_buffers.count(ch)) {
				const uint64_t buf = alloc(len, 8);
				add_tre(c, buf, len, mhi::kTreIeot);
				c.bufs[c.last] = {buf, len};
				ring_channel(ch);
			}
			return;
		}
		default:
			return;
		}
	}

	FakeHost &h_;
	Device &d_;
	unsigned mhi_bar_;
	uint64_t next_ = 0x100000;
	uint64_t ccabap_ = 0, ecabap_ = 0, crcbap_ = 0, ev_base_ = 0, cmd_base_ = 0;
	uint64_t ev_rp_ = 0, ev_wp_ = 0, cmd_wp_ = 0;
	std::map<unsigned, Chan> chans_;
};

} // namespace aic100::test
