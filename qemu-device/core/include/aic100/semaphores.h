// SPDX-License-Identifier: GPL-2.0-or-later
// The 32 semaphores of one DBC, shared by the DMA Bridge (request presync
// and postsync commands) and the NSPs of the activation on that DBC. NSP
// threads may block on them; the DMA Bridge never blocks: it tests, and is
// called back (from whichever thread changed a value) to retry.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "aic100/sem.h"

namespace aic100 {

class Semaphores {
public:
	static constexpr unsigned kCount = sem::kCount;
	static constexpr uint16_t kMax = sem::kMax;

	using Op = sem::Op;
	// A wait op on one semaphore.
	struct Cond {
		unsigned index;
		Op op;
		uint16_t value;
	};

	// Called (outside the lock) after any value changed.
	void set_on_change(std::function<void()> fn);

	// INIT/INC/DEC (saturating); false for an index out of range or a wait op.
	bool apply(unsigned index, Op op, uint16_t value);
	// Whether a wait op is satisfied now (non-wait ops: true).
	bool satisfied(unsigned index, Op op, uint16_t value) const;
	// Blocks until satisfied or `stop` returns true (checked when woken by
	// wake_all() and at least every 10 ms). True when satisfied. A change
	// wakes only the waiters it satisfies: the NSPs of a barrier are woken
	// once, by the last one to arrive, not at every arrival.
	bool wait(unsigned index, Op op, uint16_t value, const std::function<bool()> &stop);
	// The same for several conditions: returns when any one holds (true),
	// or on `stop` (false). False at once for an index out of range.
	bool wait_any(std::span<const Cond> conds, const std::function<bool()> &stop);
	uint16_t value(unsigned index) const;
	void reset();
	// Wakes every waiter so it can re-check its stop condition.
	void wake_all();
	// How many times a change woke a blocked waiter (not counting
	// wake_all()): what the NSPs' synchronization costs in sleeps.
	uint64_t wakeups() const;
	// How many threads are blocked in wait() now.
	size_t waiting() const;

private:
	// A thread blocked in wait(), on its own stack; listed while it waits.
	struct Waiter {
		std::span<const Cond> conds;
		std::condition_variable cv;
	};

	bool test(unsigned index, Op op, uint16_t value) const; // lock held
	bool any(std::span<const Cond> conds) const;           // lock held
	void wake_satisfied(unsigned index);                    // lock held
	mutable std::mutex mu_;
	std::vector<Waiter *> waiters_;
	uint64_t wakeups_ = 0;
	std::array<uint16_t, kCount> v_{};
	std::function<void()> on_change_;
};

} // namespace aic100
