// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/semaphores.h"

#include <algorithm>
#include <chrono>

namespace aic100 {

void Semaphores::set_on_change(std::function<void()> fn)
{
	std::lock_guard<std::mutex> g(mu_);
	on_change_ = std::move(fn);
}

bool Semaphores::test(unsigned index, Op op, uint16_t value) const
{
	const uint16_t v = v_[index];
	switch (op) {
	case Op::WaitEq:
		return v == value;
	case Op::WaitGe:
		return v >= value;
	case Op::WaitGt0:
		return v > 0;
	default:
		return true;
	}
}

bool Semaphores::apply(unsigned index, Op op, uint16_t value)
{
	if (index >= kCount)
		return false;
	std::function<void()> notify;
	{
		std::lock_guard<std::mutex> g(mu_);
		uint16_t &v = v_[index];
		value &= kMax;
		switch (op) {
		case Op::Nop:
			return true;
		case Op::Init:
			v = value;
			break;
		case Op::Inc:
			v = static_cast<uint16_t>(v + value > kMax ? kMax : v + value);
			break;
		case Op::Dec:
			v = static_cast<uint16_t>(v < value ? 0 : v - value);
			break;
		default:
			return false;
		}
		wake_satisfied(index);
		notify = on_change_;
	}
	if (notify)
		notify();
	return true;
}

void Semaphores::wake_satisfied(unsigned index)
{
	// Under the lock: a waiter cannot return, and take its condition
	// variable with it, before this is done.
	for (Waiter *w : waiters_)
		for (const Cond &c : w->conds)
			if (c.index == index && test(index, c.op, c.value & kMax)) {
				w->cv.notify_one();
				wakeups_++;
				break;
			}
}

bool Semaphores::any(std::span<const Cond> conds) const
{
	for (const Cond &c : conds)
		if (test(c.index, c.op, c.value & kMax))
			return true;
	return false;
}

size_t Semaphores::waiting() const
{
	std::lock_guard<std::mutex> g(mu_);
	return waiters_.size();
}

uint64_t Semaphores::wakeups() const
{
	std::lock_guard<std::mutex> g(mu_);
	return wakeups_;
}

bool Semaphores::satisfied(unsigned index, Op op, uint16_t value) const
{
	if (index >= kCount)
		return false;
	std::lock_guard<std::mutex> g(mu_);
	return test(index, op, value & kMax);
}

bool Semaphores::wait(unsigned index, Op op, uint16_t value, const std::function<bool()> &stop)
{
	const Cond c{index, op, value};
	return wait_any(std::span(&c, 1), stop);
}

bool Semaphores::wait_any(std::span<const Cond> conds, const std::function<bool()> &stop)
{
	for (const Cond &c : conds)
		if (c.index >= kCount)
			return false;
	std::unique_lock<std::mutex> l(mu_);
	if (any(conds))
		return true;
	Waiter me{conds, {}};
	waiters_.push_back(&me);
	bool ok = true;
	while (!any(conds)) {
		if (stop()) {
			ok = false;
			break;
		}
		me.cv.wait_for(l, std::chrono::milliseconds(10));
	}
	waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &me));
	return ok;
}

uint16_t Semaphores::value(unsigned index) const
{
	std::lock_guard<std::mutex> g(mu_);
	return index < kCount ? v_[index] : 0;
}

void Semaphores::reset()
{
	{
		std::lock_guard<std::mutex> g(mu_);
		v_.fill(0);
		for (unsigned i = 0; i < kCount; i++)
			wake_satisfied(i);
	}
}

void Semaphores::wake_all()
{
	std::lock_guard<std::mutex> g(mu_);
	for (Waiter *w : waiters_)
		w->cv.notify_one();
}

} // namespace aic100
