// SPDX-License-Identifier: GPL-2.0-or-later
// What the boot tests build their firmware from, and look for in the log.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace aic100::test {

// n bytes that differ with the seed: an image's payload.
inline std::vector<uint8_t> payload(size_t n, uint8_t seed)
{
	std::vector<uint8_t> p(n);
	for (size_t i = 0; i < n; i++)
		p[i] = static_cast<uint8_t>(i * 31 + seed);
	return p;
}

// An SBL's manifest: the count, then the image ids it loads.
inline std::vector<uint8_t> manifest(const std::vector<uint32_t> &ids)
{
	std::vector<uint8_t> m(4 + 4 * ids.size());
	const uint32_t n = static_cast<uint32_t>(ids.size());
	std::memcpy(m.data(), &n, 4);
	size_t off = 4;
	for (uint32_t id : ids) {
		std::memcpy(m.data() + off, &id, 4);
		off += 4;
	}
	return m;
}
inline std::vector<uint8_t> manifest(std::initializer_list<uint32_t> ids)
{
	return manifest(std::vector<uint32_t>(ids));
}

// Whether any line contains s.
inline bool has(const std::vector<std::string> &lines, const std::string &s)
{
	return std::any_of(lines.begin(), lines.end(),
			   [&](const std::string &l) { return l.find(s) != std::string::npos; });
}

// This process's resident memory (Linux's /proc/self/status), for tests of
// what the card holds. Only touched pages count: a buffer reserved and never
// filled costs nothing, a copy costs its size. Large buffers (above glibc's
// 32 MiB mmap threshold at most) are mapped afresh and unmapped when freed,
// so memory freed before start() cannot hide them.
class ResidentMemory {
public:
	// Resets the peak (VmHWM) to the current size (clear_refs "5", Linux
	// 4.0) and takes that as the base. False where the peak cannot be reset.
	bool start()
	{
		std::ofstream("/proc/self/clear_refs") << "5";
		base_ = kib("VmRSS:");
		return base_ != 0 && kib("VmHWM:") < base_ + 1024;
	}
	// Bytes above the base: at the peak since start(), and now.
	uint64_t peak_growth() const { return above_base(kib("VmHWM:")); }
	uint64_t growth() const { return above_base(kib("VmRSS:")); }
	// The peak, as ru_maxrss gives it for a process run alone.
	uint64_t peak() const { return kib("VmHWM:") * 1024; }

private:
	uint64_t above_base(uint64_t k) const { return k > base_ ? (k - base_) * 1024 : 0; }
	static uint64_t kib(const char *field)
	{
		std::ifstream status("/proc/self/status");
		std::string line;
		while (std::getline(status, line))
			if (line.rfind(field, 0) == 0) {
				uint64_t k = 0;
				std::istringstream(line.substr(std::strlen(field))) >> k;
				return k;
			}
		return 0;
	}
	uint64_t base_ = 0; // KiB
};

constexpr uint64_t kMiB = uint64_t{1} << 20;

// ThreadSanitizer's shadow is twice the memory it covers: resident sizes
// under it say nothing about copies.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kResidentSizeMeansCopies = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kResidentSizeMeansCopies = false;
#else
inline constexpr bool kResidentSizeMeansCopies = true;
#endif
#else
inline constexpr bool kResidentSizeMeansCopies = true;
#endif

} // namespace aic100::test
