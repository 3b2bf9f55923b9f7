// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers that the in-guest test programs share: files, the kernel
// log, waiting for a condition, and a card's state as users see it.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "qaic.h"

namespace guest_util {

constexpr double kOnlineTimeout = 60; // seconds; TCG guests are slow

inline std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline bool spit(const std::string &path, const std::string &data)
{
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	f.write(data.data(), static_cast<std::streamsize>(data.size()));
	f.flush();
	return static_cast<bool>(f);
}

inline std::string dmesg()
{
	std::string out;
	FILE *p = popen("dmesg", "r");
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	if (p)
		pclose(p);
	return out;
}

// A card's current view; re-read because minors change across reloads.
inline std::optional<qaic::Card> card_at(const std::string &bdf)
{
	for (auto &c : qaic::find_cards())
		if (c.bdf == bdf)
			return c;
	return std::nullopt;
}

// ONLINE is what upstream qaic and ours both show to users: open() of the
// accel node succeeds (it gives ENODEV until the NNC exchange is done).
inline bool is_online(const std::string &bdf)
{
	auto c = card_at(bdf);
	if (!c || !c->accel_minor)
		return false;
	return qaic::Device::open(*c->accel_minor).has_value();
}

inline bool wait_for(const std::function<bool()> &cond, double timeout_s)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	while (std::chrono::steady_clock::now() < end) {
		if (cond())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return cond();
}

inline bool wait_online(const std::string &bdf, double timeout_s = kOnlineTimeout)
{
	return wait_for([&] { return is_online(bdf); }, timeout_s);
}

// The accel device's debugfs directory (named by PCI address in 6.12, by
// minor in older kernels).
inline std::string debugfs_dir(const qaic::Card &c)
{
	for (const std::string &d : {"/sys/kernel/debug/accel/" + c.bdf,
				    "/sys/kernel/debug/accel/" + std::to_string(c.accel_minor.value_or(-1))})
		if (std::filesystem::exists(d))
			return d;
	return {};
}

} // namespace guest_util
