// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/mhi_ring.h"

#include <cstdio>

namespace aic100::mhi {

bool EventRing::load(uint64_t ctx_addr)
{
	EventContext ctx;
	loaded_ = false;
	pending_.clear();
	if (host_.dma_read(ctx_addr, &ctx, sizeof(ctx)) != DmaStatus::Ok) {
		host_.guest_error("MHI: event context unreadable");
		return false;
	}
	const RingGeometry geo{ctx.rbase, ctx.rlen};
	if (!geo.valid() || !geo.contains(ctx.rp) || !geo.contains(ctx.wp)) {
		host_.guest_error("MHI: event context describes no valid ring");
		return false;
	}
	ctx_ = ctx_addr;
	geo_ = geo;
	rp_ = ctx.rp;
	wp_ = ctx.wp;
	msivec_ = ctx.msivec;
	intmod_ns_ = uint64_t{ctx.intmod >> 16} * 1'000'000;
	last_msi_ns_ = 0;
	msi_held_ = false;
	loaded_ = true;
	return true;
}

void EventRing::unload()
{
	loaded_ = false;
	msi_held_ = false;
	pending_.clear();
}

bool EventRing::doorbell(uint64_t wp)
{
	if (!loaded_)
		return false;
	if (!geo_.contains(wp)) {
		host_.guest_error("MHI: event ring doorbell outside the ring");
		return false;
	}
	wp_ = wp;
	while (!pending_.empty() && rp_ != wp_) {
		if (!write_one(pending_.front().e, pending_.front().irq))
			return false;
		pending_.pop_front();
	}
	return true;
}

EventRing::Post EventRing::post(const RingElement &e, bool irq)
{
	if (!loaded_)
		return Post::Fault;
	if (rp_ == wp_ || !pending_.empty()) {
		if (pending_.size() >= kMaxQueued) {
			host_.guest_error("MHI: host returns no event ring credit; event dropped");
			return Post::Fault;
		}
		pending_.push_back({e, irq});
		return Post::Queued;
	}
	return write_one(e, irq) ? Post::Sent : Post::Fault;
}

bool EventRing::write_one(const RingElement &e, bool irq)
{
	const uint64_t slot = rp_;
	const uint64_t next = geo_.next(slot);
	if (host_.dma_write(slot, &e, sizeof(e)) != DmaStatus::Ok ||
	    host_.dma_write(ctx_ + kCtxRpOffset, &next, sizeof(next)) != DmaStatus::Ok) {
		host_.guest_error("MHI: event ring write failed");
		return false;
	}
	rp_ = next;
	if (!irq)
		return true;
	const uint64_t now = host_.now_ns();
	if (intmod_ns_ && now - last_msi_ns_ < intmod_ns_) {
		// Moderated: one interrupt per INTMODT covers every event since.
		if (!msi_held_) {
			msi_held_ = true;
			msi_deadline_ = last_msi_ns_ + intmod_ns_;
		}
		return true;
	}
	signal();
	return true;
}

void EventRing::signal()
{
	last_msi_ns_ = host_.now_ns();
	msi_held_ = false;
	const unsigned enabled = host_.msi_vectors_enabled();
	if (enabled)
		host_.raise_msi(msivec_ < enabled ? msivec_ : 0);
}

void EventRing::poll()
{
	if (loaded_ && msi_held_ && host_.now_ns() >= msi_deadline_)
		signal();
}

EventRing::Snapshot EventRing::snapshot() const
{
	Snapshot s;
	s.loaded = loaded_;
	if (!loaded_)
		return s;
	s.elements = geo_.elements();
	s.rp = geo_.index(rp_);
	s.wp = geo_.index(wp_);
	EventContext ctx;
	if (host_.dma_read(ctx_, &ctx, sizeof(ctx)) == DmaStatus::Ok && geo_.contains(ctx.rp) &&
	    geo_.contains(ctx.wp)) {
		s.ctx_readable = true;
		s.ctx_rp = geo_.index(ctx.rp);
		s.ctx_wp = geo_.index(ctx.wp);
	}
	s.queued = pending_.size();
	s.msi_held = msi_held_;
	s.msivec = msivec_;
	s.last_msi_ns = last_msi_ns_;
	return s;
}

bool CommandRing::load(uint64_t ctx_addr)
{
	CommandContext ctx;
	loaded_ = false;
	if (host_.dma_read(ctx_addr, &ctx, sizeof(ctx)) != DmaStatus::Ok) {
		host_.guest_error("MHI: command context unreadable");
		return false;
	}
	const RingGeometry geo{ctx.rbase, ctx.rlen};
	if (!geo.valid() || !geo.contains(ctx.rp)) {
		host_.guest_error("MHI: command context describes no valid ring");
		return false;
	}
	ctx_ = ctx_addr;
	geo_ = geo;
	rp_ = ctx.rp;
	loaded_ = true;
	return true;
}

bool CommandRing::doorbell(uint64_t wp, const std::function<bool(const RingElement &, uint64_t)> &run,
			   unsigned budget, bool &more)
{
	more = false;
	if (!loaded_)
		return false;
	if (!geo_.contains(wp)) {
		host_.guest_error("MHI: command ring doorbell outside the ring");
		return false;
	}
	for (; rp_ != wp; budget--) {
		if (!budget) {
			more = true;
			return true;
		}
		RingElement e;
		if (host_.dma_read(rp_, &e, sizeof(e)) != DmaStatus::Ok) {
			host_.guest_error("MHI: command element unreadable");
			return false;
		}
		const uint64_t at = rp_;
		rp_ = geo_.next(rp_);
		if (!run(e, at))
			return true;
	}
	return true;
}

} // namespace aic100::mhi
