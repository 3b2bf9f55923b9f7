// SPDX-License-Identifier: GPL-2.0-or-later
// qaic-util's table view (-t) for a build without ftxui: QaicUtil.cpp calls
// this function only for -t; the build had no ftxui to draw the table with,
// so it says so and fails. Every other option of qaic-util is unchanged.
#include <cstdint>
#include <iostream>
#include <vector>

#include "QAicRuntimeTypes.h"

int txUIDisplayTable(uint32_t, const std::vector<QID> &)
{
	std::cerr << "qaic-util: -t needs ftxui, which this build was made without "
		     "(put ftxui's v3.0.0 sources in the deps folder as ftxui/)\n";
	return -1;
}
