// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/semaphores.h"

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
		notify = on_change_;
	}
	cv_.notify_all();
	if (notify)
		notify();
	return true;
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
	if (index >= kCount)
		return false;
	std::unique_lock<std::mutex> l(mu_);
	while (!test(index, op, value & kMax)) {
		if (stop())
			return false;
		cv_.wait_for(l, std::chrono::milliseconds(10));
	}
	return true;
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
	}
	cv_.notify_all();
}

void Semaphores::wake_all()
{
	cv_.notify_all();
}

} // namespace aic100
