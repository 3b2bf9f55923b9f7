// SPDX-License-Identifier: GPL-2.0-or-later
// Which qaic driver an in-guest suite runs against, as its --upstream option
// says: ours (0), upstream Linux 6.12's (1, or 6.12) or upstream Linux 7.3's
// (7.3). The suites assert the same contract for all three, except where an
// upstream release behaves otherwise; each such place says why.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

enum class DriverUnderTest { Ours, Upstream612, Upstream73 };

inline std::optional<DriverUnderTest> parse_driver_under_test(const std::string &v)
{
	if (v == "0")
		return DriverUnderTest::Ours;
	if (v == "1" || v == "6.12")
		return DriverUnderTest::Upstream612;
	if (v == "7.3")
		return DriverUnderTest::Upstream73;
	std::fprintf(stderr, "--upstream %s: 0 (ours), 1 or 6.12 (upstream 6.12), 7.3 (upstream 7.3)\n", v.c_str());
	return std::nullopt;
}
