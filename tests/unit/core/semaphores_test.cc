// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/semaphores.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace aic100 {
namespace {

using Op = Semaphores::Op;

const std::function<bool()> kNever = [] { return false; };

// Yields until @n threads are blocked in wait(): a waiter is listed under
// the lock before it sleeps, so a change made after this reaches it.
void until_blocked(const Semaphores &s, size_t n)
{
	while (s.waiting() < n)
		std::this_thread::yield();
}

TEST(SemaphoresTest, ValuesSaturateAtTwelveBits)
{
	Semaphores s;
	EXPECT_TRUE(s.apply(3, Op::Init, 0xFFE));
	EXPECT_TRUE(s.apply(3, Op::Inc, 5));
	EXPECT_EQ(s.value(3), Semaphores::kMax);
	EXPECT_TRUE(s.apply(3, Op::Dec, 0x1000 + 2)); // the value is 12 bits too
	EXPECT_EQ(s.value(3), Semaphores::kMax - 2);
	EXPECT_TRUE(s.apply(3, Op::Dec, 0xFFF));
	EXPECT_EQ(s.value(3), 0);
	EXPECT_FALSE(s.apply(Semaphores::kCount, Op::Inc, 1));
	EXPECT_FALSE(s.apply(0, Op::WaitEq, 1));
	EXPECT_FALSE(s.satisfied(Semaphores::kCount, Op::WaitEq, 0));
}

TEST(SemaphoresTest, WaitReturnsAtOnceWhenSatisfied)
{
	Semaphores s;
	s.apply(1, Op::Init, 4);
	EXPECT_TRUE(s.wait(1, Op::WaitGe, 4, kNever));
	EXPECT_TRUE(s.wait(1, Op::WaitGt0, 0, kNever));
	EXPECT_TRUE(s.wait(2, Op::WaitEq, 0, kNever));
	EXPECT_EQ(s.wakeups(), 0u);
}

// A barrier of four: each arrival increments, each waits for all four.
// Only the last arrival satisfies the waiters, so the three that blocked
// are woken once each, and a waiter on another semaphore not at all.
TEST(SemaphoresTest, BarrierWakesEachBlockedWaiterOnce)
{
	Semaphores s;
	constexpr unsigned kThreads = 3;
	std::atomic<bool> stop_other = false;
	std::thread other([&] { s.wait(9, Op::WaitGe, 1, [&] { return stop_other.load(); }); });
	std::vector<std::thread> t;
	for (unsigned i = 0; i < kThreads; i++)
		t.emplace_back([&] {
			s.apply(0, Op::Inc, 1);
			EXPECT_TRUE(s.wait(0, Op::WaitGe, kThreads + 1, kNever));
		});
	until_blocked(s, kThreads + 1);
	EXPECT_EQ(s.wakeups(), 0u); // three arrivals so far woke nobody
	s.apply(0, Op::Inc, 1);     // the last arrival
	for (auto &x : t)
		x.join();
	EXPECT_EQ(s.wakeups(), kThreads);
	EXPECT_EQ(s.waiting(), 1u); // the other one still waits
	stop_other = true;
	s.wake_all();
	other.join();
	EXPECT_EQ(s.wakeups(), kThreads); // wake_all() is not counted
	EXPECT_EQ(s.waiting(), 0u);
}

TEST(SemaphoresTest, ChangesThatDoNotSatisfyWakeNobody)
{
	Semaphores s;
	std::thread waiter([&] { EXPECT_TRUE(s.wait(4, Op::WaitEq, 3, kNever)); });
	until_blocked(s, 1);
	s.apply(4, Op::Inc, 1);
	s.apply(4, Op::Inc, 1);
	s.apply(5, Op::Init, 3);
	EXPECT_EQ(s.wakeups(), 0u);
	s.apply(4, Op::Inc, 1);
	waiter.join();
	EXPECT_EQ(s.wakeups(), 1u);
}

TEST(SemaphoresTest, StopEndsAWaitThroughWakeAll)
{
	Semaphores s;
	std::atomic<bool> stop = false;
	bool result = true;
	std::thread waiter([&] { result = s.wait(2, Op::WaitGt0, 0, [&] { return stop.load(); }); });
	until_blocked(s, 1);
	stop = true;
	s.wake_all();
	waiter.join();
	EXPECT_FALSE(result);
	EXPECT_EQ(s.value(2), 0);
}

TEST(SemaphoresTest, ResetWakesWaitersForZero)
{
	Semaphores s;
	s.apply(7, Op::Init, 2);
	std::thread waiter([&] { EXPECT_TRUE(s.wait(7, Op::WaitEq, 0, kNever)); });
	until_blocked(s, 1);
	s.reset();
	waiter.join();
	EXPECT_EQ(s.wakeups(), 1u);
}

TEST(SemaphoresTest, OnChangeIsCalledOutsideTheLock)
{
	Semaphores s;
	unsigned calls = 0;
	// The callback reads a value: it would deadlock if called under the lock.
	s.set_on_change([&] { calls += s.value(0) == 1; });
	s.apply(0, Op::Inc, 1);
	EXPECT_EQ(calls, 1u);
}

// Many rounds of a four-thread barrier: nobody is lost or left behind.
TEST(SemaphoresTest, RepeatedBarrierOfFourCompletes)
{
	Semaphores s;
	constexpr unsigned kThreads = 4, kRounds = 500;
	std::vector<std::thread> t;
	for (unsigned i = 0; i < kThreads; i++)
		t.emplace_back([&] {
			for (unsigned r = 1; r <= kRounds; r++) {
				s.apply(0, Op::Inc, 1);
				ASSERT_TRUE(s.wait(0, Op::WaitGe, uint16_t(r * kThreads), kNever));
			}
		});
	for (auto &x : t)
		x.join();
	EXPECT_EQ(s.value(0), kRounds * kThreads);
	EXPECT_EQ(s.waiting(), 0u);
}

} // namespace
} // namespace aic100
