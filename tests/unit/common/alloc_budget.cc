// SPDX-License-Identifier: GPL-2.0-or-later
#include "alloc_budget.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> g_armed{false};
std::atomic<bool> g_exceeded{false};
std::atomic<size_t> g_left{0};

// Takes `n` from the budget when one is armed; false when it does not fit.
bool take(size_t n) noexcept
{
	if (!g_armed.load(std::memory_order_acquire))
		return true;
	size_t left = g_left.load(std::memory_order_relaxed);
	do {
		if (n > left) {
			g_exceeded.store(true);
			return false;
		}
	} while (!g_left.compare_exchange_weak(left, left - n, std::memory_order_relaxed));
	return true;
}

void *allocate(size_t n, size_t align) noexcept
{
	if (!take(n))
		return nullptr;
	if (n == 0)
		n = 1;
	if (align <= alignof(std::max_align_t))
		return std::malloc(n);
	return std::aligned_alloc(align, (n + align - 1) / align * align);
}

void *allocate_or_throw(size_t n, size_t align)
{
	void *p = allocate(n, align);
	if (!p)
		throw std::bad_alloc();
	return p;
}

} // namespace

namespace aic100::test {

AllocBudget::AllocBudget(size_t bytes)
{
	g_left.store(bytes);
	g_exceeded.store(false);
	g_armed.store(true, std::memory_order_release);
}

AllocBudget::~AllocBudget()
{
	g_armed.store(false, std::memory_order_release);
}

bool AllocBudget::exceeded() const
{
	return g_exceeded.load();
}

} // namespace aic100::test

// The replaceable global allocation functions, all of them, so that every
// form of new goes through the budget.
void *operator new(size_t n)
{
	return allocate_or_throw(n, 0);
}
void *operator new[](size_t n)
{
	return allocate_or_throw(n, 0);
}
void *operator new(size_t n, std::align_val_t a)
{
	return allocate_or_throw(n, size_t(a));
}
void *operator new[](size_t n, std::align_val_t a)
{
	return allocate_or_throw(n, size_t(a));
}
void *operator new(size_t n, const std::nothrow_t &) noexcept
{
	return allocate(n, 0);
}
void *operator new[](size_t n, const std::nothrow_t &) noexcept
{
	return allocate(n, 0);
}
void *operator new(size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return allocate(n, size_t(a));
}
void *operator new[](size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
	return allocate(n, size_t(a));
}
void operator delete(void *p) noexcept
{
	std::free(p);
}
void operator delete[](void *p) noexcept
{
	std::free(p);
}
void operator delete(void *p, size_t) noexcept
{
	std::free(p);
}
void operator delete[](void *p, size_t) noexcept
{
	std::free(p);
}
void operator delete(void *p, std::align_val_t) noexcept
{
	std::free(p);
}
void operator delete[](void *p, std::align_val_t) noexcept
{
	std::free(p);
}
void operator delete(void *p, size_t, std::align_val_t) noexcept
{
	std::free(p);
}
void operator delete[](void *p, size_t, std::align_val_t) noexcept
{
	std::free(p);
}
void operator delete(void *p, const std::nothrow_t &) noexcept
{
	std::free(p);
}
void operator delete[](void *p, const std::nothrow_t &) noexcept
{
	std::free(p);
}
