// SPDX-License-Identifier: GPL-2.0-or-later
// The card's side of MHI rings in host memory: where a ring lies, the event
// ring the card writes (with the host's credit rule and interrupt
// moderation) and the command ring it reads. Every host-provided address is
// checked before use.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "aic100/host.h"
#include "aic100/mhi_wire.h"

namespace aic100::mhi {

struct RingGeometry {
	uint64_t base = 0;
	uint64_t len = 0;

	// Non-empty, element-aligned and not wrapping the address space.
	bool valid() const
	{
		return len >= 2 * kElementSize && len % kElementSize == 0 && base % kElementSize == 0 &&
		       base + len > base;
	}
	bool contains(uint64_t addr) const
	{
		return addr >= base && addr - base < len && (addr - base) % kElementSize == 0;
	}
	uint64_t next(uint64_t addr) const
	{
		return addr + kElementSize == base + len ? base : addr + kElementSize;
	}
	uint64_t elements() const { return len / kElementSize; }
	// The element number of `addr` in the ring (for reports).
	unsigned long long index(uint64_t addr) const { return (addr - base) / kElementSize; }
};

class EventRing {
public:
	explicit EventRing(HostInterface &host) : host_(host) {}

	// Takes the ring from the event context at ctx_addr. False (and the ring
	// unusable) when the context cannot be read or describes no valid ring.
	bool load(uint64_t ctx_addr);
	void unload();
	bool loaded() const { return loaded_; }

	// The host's doorbell: how far it has handed slots back. Queued events
	// go out as credit allows. False for a pointer outside the ring.
	bool doorbell(uint64_t wp);

	enum class Post { Sent, Queued, Fault };
	// Writes `e` at the card's read pointer, publishes the new pointer in the
	// context and signals the ring's MSI (unless `irq` is false: the event
	// waits for the next interrupt); queues it while there is no credit.
	Post post(const RingElement &e, bool irq = true);

	// Interrupt moderation (INTMODT in the context): MSIs are held back
	// until this deadline; poll() sends the held one when it has passed.
	uint64_t deadline() const { return msi_held_ ? msi_deadline_ : HostInterface::kNoDeadline; }
	void poll();

	uint64_t rp() const { return rp_; }
	size_t queued() const { return pending_.size(); }
	static constexpr size_t kMaxQueued = 1024;

	// The card's view of the ring next to the host's (its context in host
	// memory, read now), for reports when the host seems to have stopped
	// answering. Element indices, not addresses.
	struct Snapshot {
		bool loaded = false;
		uint64_t elements = 0;
		uint64_t rp = 0, wp = 0;         // the card's
		uint64_t ctx_rp = 0, ctx_wp = 0; // in the host's context
		bool ctx_readable = false;
		size_t queued = 0;
		bool msi_held = false;
		unsigned msivec = 0;
		uint64_t last_msi_ns = 0;
	};
	Snapshot snapshot() const;

private:
	bool write_one(const RingElement &e, bool irq);
	void signal();

	HostInterface &host_;
	bool loaded_ = false;
	uint64_t ctx_ = 0;
	RingGeometry geo_;
	uint64_t rp_ = 0;
	uint64_t wp_ = 0;
	unsigned msivec_ = 0;
	uint64_t intmod_ns_ = 0;
	uint64_t last_msi_ns_ = 0;
	bool msi_held_ = false;
	uint64_t msi_deadline_ = 0;
	struct Queued {
		RingElement e;
		bool irq;
	};
	std::deque<Queued> pending_;
};

class CommandRing {
public:
	explicit CommandRing(HostInterface &host) : host_(host) {}

	bool load(uint64_t ctx_addr);
	void unload() { loaded_ = false; }
	bool loaded() const { return loaded_; }

	// Runs the commands from the card's read pointer up to `wp`, in order,
	// at most `budget` of them, handing each (with its bus address) to
	// `run`. False when `wp` or an element cannot be used; commands before
	// it have run. `run` returns false to stop early (the ring was reset
	// under it). `more` tells whether commands before `wp` are left.
	bool doorbell(uint64_t wp, const std::function<bool(const RingElement &, uint64_t)> &run, unsigned budget,
		      bool &more);

	uint64_t rp() const { return rp_; }

private:
	HostInterface &host_;
	bool loaded_ = false;
	uint64_t ctx_ = 0;
	RingGeometry geo_;
	uint64_t rp_ = 0;
};

} // namespace aic100::mhi
