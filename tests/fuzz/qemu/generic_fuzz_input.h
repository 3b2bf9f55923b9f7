// SPDX-License-Identifier: GPL-2.0-or-later
// QEMU's generic-fuzz input (tests/qtest/fuzz/generic_fuzz.c in QEMU 10.0):
// commands separated by "FUZZ", the first byte of each an opcode (modulo
// kOpCount), the rest its arguments as the fuzzer's packed structs lay them
// out on x86-64. The card's DMA reads of guest RAM are served from the
// input's DMA patterns, one pattern per read, in turn; the rest of RAM is
// never written by an input. This file writes such inputs and models how
// QEMU runs them, so that the seed generator can check its seeds on the
// device core without QEMU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace aic100::gfuzz {

enum Op : uint8_t {
	kIn,
	kOut,
	kRead,
	kWrite,
	kPciRead,
	kPciWrite,
	kDisablePci,
	kAddDmaPattern,
	kClearDmaPatterns,
	kClockStep,
	kOpCount,
};
inline constexpr std::string_view kSeparator = "FUZZ";
// A DMA read fills at most this much of guest RAM from a pattern.
inline constexpr size_t kMaxDmaFill = 0x10000;
// MMIO access sizes of kRead/kWrite (the argument's size byte).
enum Size : uint8_t { kByte, kWord, kLong, kQuad };

// Writes one input, a command at a time.
class Writer {
public:
	const std::vector<uint8_t> &bytes() const { return out_; }

	// struct { u8 size; u8 base; u32 offset; u64 value; } (16 bytes).
	void write(uint8_t region, uint32_t offset, uint64_t value, Size size)
	{
		uint8_t a[16] = {size, region};
		std::memcpy(a + 4, &offset, 4);
		std::memcpy(a + 8, &value, 8);
		command(kWrite, a, sizeof(a));
	}
	// struct { u8 size; u8 base; u32 offset; } (8 bytes).
	void read(uint8_t region, uint32_t offset, Size size)
	{
		uint8_t a[8] = {size, region};
		std::memcpy(a + 4, &offset, 4);
		command(kRead, a, sizeof(a));
	}
	// struct { u8 index; u8 stride; } then the pattern: index 0 and stride
	// 0 repeat `data` unchanged, so a read of data.size() bytes gets `data`.
	void dma_pattern(const std::vector<uint8_t> &data)
	{
		std::vector<uint8_t> a = {0, 0};
		a.insert(a.end(), data.begin(), data.end());
		command(kAddDmaPattern, a.data(), a.size());
	}
	void clear_dma_patterns() { command(kClearDmaPatterns, nullptr, 0); }
	void clock_step() { command(kClockStep, nullptr, 0); }

private:
	void command(Op op, const uint8_t *args, size_t n)
	{
		if (!out_.empty())
			out_.insert(out_.end(), kSeparator.begin(), kSeparator.end());
		out_.push_back(op);
		out_.insert(out_.end(), args, args + n);
	}
	std::vector<uint8_t> out_;
};

// One command of an input, as generic_fuzz() splits it.
struct Command {
	Op op;
	const uint8_t *args;
	size_t len;
};

// The commands of `input` in order (empty commands are skipped, as QEMU does).
inline std::vector<Command> split(const std::vector<uint8_t> &input)
{
	std::vector<Command> cmds;
	const std::string_view all(reinterpret_cast<const char *>(input.data()), input.size());
	size_t at = 0;
	while (at < all.size()) {
		size_t end = all.find(kSeparator, at);
		if (end == std::string_view::npos)
			end = all.size();
		if (end > at)
			cmds.push_back({static_cast<Op>(input[at] % kOpCount), input.data() + at + 1, end - at - 1});
		at = end + kSeparator.size();
	}
	return cmds;
}

// The bytes a DMA read of `len` gets from a pattern (generic-fuzz's
// pattern_alloc): `data` repeated, its index'th byte raised by `stride`
// more at each repetition.
inline std::vector<uint8_t> pattern_fill(const Command &c, size_t len)
{
	std::vector<uint8_t> out(len);
	if (c.len < 3)
		return out;
	const uint8_t stride = c.args[1];
	const uint8_t *data = c.args + 2;
	const size_t n = c.len - 2, index = c.args[0] % n;
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++) {
		out[i] = data[i % n];
		if (i % n == index) {
			out[i] += sum;
			sum += stride;
		}
	}
	return out;
}

} // namespace aic100::gfuzz
