// SPDX-License-Identifier: GPL-2.0-or-later
// A ceiling on what operator new hands out while a test runs code fed with
// hostile sizes: past it, new throws std::bad_alloc instead of letting the
// code under test take the machine's memory (or the OOM killer take the
// test). Process-wide, so that threads the code starts count too.
#pragma once

#include <cstddef>

namespace aic100::test {

class AllocBudget {
public:
	// Armed from here until the destructor: at most `bytes` in all,
	// counted as allocated (frees do not give any back).
	explicit AllocBudget(size_t bytes);
	~AllocBudget();
	AllocBudget(const AllocBudget &) = delete;
	AllocBudget &operator=(const AllocBudget &) = delete;

	// Whether an allocation was refused since the budget was armed.
	bool exceeded() const;
};

} // namespace aic100::test
