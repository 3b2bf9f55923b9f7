// SPDX-License-Identifier: GPL-2.0-or-later
// The MHI rings a seed generator's host keeps in its memory, as Linux's MHI
// host stack lays them out: contexts, the command ring, a transfer ring a
// channel, DL receive buffers, scratch space for what the card reads, and
// the events the card writes back. Both seed generators (tests/fuzz/core and
// tests/fuzz/qemu) drive the card through this; each sends the memory
// writes and doorbells to its own recording (a Bus).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "aic100/mhi_wire.h"

namespace aic100::seed_steps {

// Each generator defines it: says why, then ends the program.
[[noreturn]] void fail(const std::string &why);

struct RingLayout {
	uint64_t chan_ctx, event_ctx, cmd_ctx;
	uint64_t event_ring, cmd_ring, chan_rings; // chan_rings: one ring of chan_elements a channel
	uint64_t dl_bufs, dl_bufs_end, scratch, scratch_end;
	unsigned event_elements, cmd_elements, chan_elements;
	bool scratch_wraps;    // else running out of scratch space fails
	bool give_back_dl_bufs; // a filled DL buffer goes back on its ring, as the driver requeues
};

class HostRings {
public:
	// Where the host's memory writes and doorbells go.
	class Bus {
	public:
		virtual void put(uint64_t addr, const void *p, size_t n) = 0;
		virtual std::vector<uint8_t> get(uint64_t addr, size_t n) = 0;
		virtual void channel_doorbell(unsigned ch, uint64_t wp) = 0;

	protected:
		~Bus() = default;
	};

	HostRings(const RingLayout &layout, Bus &bus) : L(layout), bus_(bus) {}

	const RingLayout L;

	mhi::EventContext event_context() const
	{
		mhi::EventContext ec{};
		ec.ertype = 1;
		ec.rbase = L.event_ring;
		ec.rlen = L.event_elements * 16;
		ec.rp = ec.wp = L.event_ring;
		return ec;
	}
	mhi::CommandContext command_context() const
	{
		mhi::CommandContext cc{};
		cc.rbase = L.cmd_ring;
		cc.rlen = L.cmd_elements * 16;
		cc.rp = cc.wp = L.cmd_ring;
		return cc;
	}
	// A new READY handshake starts with empty rings and no channel.
	void reset()
	{
		ev_rp_ = L.event_ring;
		cmd_wp_ = L.cmd_ring;
		chans_.clear();
		bufs_.clear();
		rx_.clear();
		cmd_done_.clear();
		give_back_.clear();
	}

	// The channel's ring and context, as mhi_init_chan_ctxt.
	void init_channel(unsigned ch)
	{
		Chan c;
		c.base = c.wp = L.chan_rings + ch * L.chan_elements * 16;
		mhi::ChannelContext ctx{};
		ctx.chcfg = 1;
		ctx.chtype = (ch & 1) ? 2 : 1;
		ctx.rbase = c.base;
		ctx.rlen = L.chan_elements * 16;
		ctx.rp = ctx.wp = c.base;
		bus_.put(L.chan_ctx + ch * sizeof(ctx), &ctx, sizeof(ctx));
		chans_[ch] = c;
	}
	// Writes a command for channel `ch` on the command ring; its address,
	// the key of its completion code.
	uint64_t put_command(unsigned ch, mhi::ElementType type)
	{
		const uint64_t at = cmd_wp_;
		const mhi::RingElement e{0, 0, (uint32_t{ch} << 24) | (uint32_t{static_cast<uint8_t>(type)} << 16)};
		bus_.put(at, &e, sizeof(e));
		cmd_wp_ = next(cmd_wp_, L.cmd_ring, L.cmd_elements);
		return at;
	}
	uint64_t cmd_wp() const { return cmd_wp_; }
	// The completion code of the command at `at` (0: none yet).
	uint8_t completion(uint64_t at) const
	{
		const auto it = cmd_done_.find(at);
		return it == cmd_done_.end() ? 0 : it->second;
	}

	// `n` receive buffers of `len` bytes on DL channel `ch`; no doorbell.
	void add_dl_buffers(unsigned ch, uint32_t len, unsigned n)
	{
		Chan &c = chans_.at(ch);
		for (unsigned i = 0; i < n; i++) {
			const uint64_t buf = dl_next_;
			dl_next_ += (len + 63) & ~63u;
			if (dl_next_ > L.dl_bufs_end)
				fail("out of DL buffer space");
			add_tre(c, buf, len, mhi::kTreIeot);
		}
	}
	// One TD on UL channel `ch`, in pieces of at most `piece` bytes; no doorbell.
	void add_td(unsigned ch, const std::vector<uint8_t> &msg, size_t piece)
	{
		Chan &c = chans_.at(ch);
		for (size_t off = 0; off < msg.size() || off == 0; off += piece) {
			const size_t n = std::min(piece, msg.size() - off);
			const uint64_t buf = scratch(n);
			bus_.put(buf, msg.data() + off, n);
			const bool last = off + n >= msg.size();
			add_tre(c, buf, static_cast<uint32_t>(n), last ? mhi::kTreIeot : mhi::kTreChain);
			if (last)
				break;
		}
	}
	// The context's wp, then the doorbell, as Linux's mhi_ring_chan_db().
	void ring_channel(unsigned ch)
	{
		const uint64_t wp = chans_.at(ch).wp;
		bus_.put(L.chan_ctx + ch * sizeof(mhi::ChannelContext) + mhi::kCtxWpOffset, &wp, sizeof(wp));
		bus_.channel_doorbell(ch, wp);
	}

	// Space for data the card reads.
	uint64_t scratch(size_t n)
	{
		const uint64_t len = (n + 63) & ~size_t{63};
		if (scratch_ + len > L.scratch_end) {
			if (!L.scratch_wraps)
				fail("out of scratch space");
			scratch_ = L.scratch;
		}
		const uint64_t at = scratch_;
		scratch_ += len;
		return at;
	}

	// Takes the events up to the card's read pointer `dev_rp`: command
	// completions and what DL channels received. Returns how many.
	unsigned take_events(uint64_t dev_rp)
	{
		const uint64_t end = L.event_ring + L.event_elements * 16;
		if (dev_rp < L.event_ring || dev_rp >= end)
			return 0;
		unsigned n = 0;
		for (; ev_rp_ != dev_rp && n < L.event_elements; n++) {
			mhi::RingElement e{};
			const auto b = bus_.get(ev_rp_, sizeof(e));
			std::memcpy(&e, b.data(), std::min(b.size(), sizeof(e)));
			take_event(e);
			ev_rp_ = next(ev_rp_, L.event_ring, L.event_elements);
		}
		return n;
	}
	// The DL buffers the last events filled, back on their rings.
	void give_back_dl_bufs()
	{
		for (const auto &[ch, tre] : give_back_) {
			const auto [buf, len] = bufs_.at(tre);
			bufs_.erase(tre);
			add_tre(chans_.at(ch), buf, len, mhi::kTreIeot);
			ring_channel(ch);
		}
		give_back_.clear();
	}

	// What the card sent on DL channel `ch`, oldest first.
	std::vector<uint8_t> pop(unsigned ch)
	{
		auto &q = rx_[ch];
		if (q.empty())
			return {};
		auto v = std::move(q.front());
		q.pop_front();
		return v;
	}

	static uint64_t next(uint64_t p, uint64_t base, unsigned n) { return p + 16 == base + n * 16 ? base : p + 16; }

private:
	struct Chan {
		uint64_t base = 0, wp = 0;
	};

	void add_tre(Chan &c, uint64_t buf, uint32_t len, uint32_t flags)
	{
		const mhi::RingElement e{buf, len, (uint32_t{static_cast<uint8_t>(mhi::ElementType::Transfer)} << 16) | flags};
		bus_.put(c.wp, &e, sizeof(e));
		bufs_[c.wp] = {buf, len};
		c.wp = next(c.wp, c.base, L.chan_elements);
	}
	void take_event(const mhi::RingElement &e)
	{
		const auto type = mhi::element_type(e);
		if (type == mhi::ElementType::CommandCompletionEvent) {
			cmd_done_[e.ptr] = static_cast<uint8_t>(e.dword0 >> 24);
			return;
		}
		const unsigned ch = e.dword1 >> 24;
		if (type != mhi::ElementType::TransferEvent || !(ch & 1) || !chans_.count(ch))
			return;
		const auto it = bufs_.find(e.ptr);
		if (it == bufs_.end())
			return;
		rx_[ch].push_back(bus_.get(it->second.first, std::min(mhi::tre_length(e), it->second.second)));
		if (L.give_back_dl_bufs)
			give_back_.emplace_back(ch, e.ptr);
	}

	Bus &bus_;
	uint64_t ev_rp_ = 0, cmd_wp_ = 0;
	uint64_t dl_next_ = L.dl_bufs, scratch_ = L.scratch;
	std::map<unsigned, Chan> chans_;
	std::map<uint64_t, std::pair<uint64_t, uint32_t>> bufs_; // TRE -> buffer, length
	std::map<uint64_t, uint8_t> cmd_done_;
	std::map<unsigned, std::deque<std::vector<uint8_t>>> rx_;
	std::vector<std::pair<unsigned, uint64_t>> give_back_; // channel, TRE
};

} // namespace aic100::seed_steps
