// SPDX-License-Identifier: GPL-2.0-or-later
// The input format of the device-core fuzzer (device_fuzz.cc), shared with
// the seed generator (make_seeds.cc) so that seeds follow the format when it
// changes.
//
// An input is one configuration byte, then operations until the input ends:
// one opcode byte (taken modulo the number of operations, so every byte is
// an operation) and its operands, little-endian. An operation cut short by
// the end of the input is dropped. The fake host memory is kMemSize bytes at
// bus address 0; the device's DMA outside it fails, as an IOMMU fault would.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace aic100::fuzz {

inline constexpr uint64_t kMemSize = 1u << 20;

// Byte 0.
enum Config : uint8_t {
	kCfgAmss = 1u << 0,   // boot=amss: start in AMSS, no firmware needed
	kCfgCrc = 1u << 1,    // crc=on
	kCfgTwoNsps = 1u << 2, // nsps=2 (else 1)
	kCfgOneMsi = 1u << 3, // the host enabled a single MSI vector (else 32)
};

enum class Op : uint8_t {
	Write,    // bar:u8 size:u8 offset:u32 value:u64   (bar: %3 -> 0, 2, 4; size: 1<<(%4))
	Read,     // bar:u8 size:u8 offset:u32
	Write32,  // offset:u16 value:u32                  BAR0, 32 bits (MHI is 32-bit only)
	Doorbell, // kind:u8 index:u8 value:u64            high half, then low (kind %3: channel,
		  //                                       event ring, command ring)
	Dbc,      // dbc:u8 reg:u8 value:u32               BAR2 register reg%4 of DBC dbc%16
	Mem,      // offset:u32 len:u16 bytes[len]         host memory (offset % kMemSize, clipped)
	Clock,    // us:u32                                time passes; a due timer fires
	Process,  //                                       the bottom half runs once
	Settle,   //                                       the bottom half runs until the core
		  //                                       asks for nothing more (bounded)
	Mailbox,  // len:u8 text[len]                      BAR4 test mailbox: command, length
	Inject,   // len:u8 text[len]                      the monitor's inject property
	Reset,    //                                       PCI reset
	Msi,      // vectors:u8                            vectors the host enabled (0..32)
	kCount
};

// Appends operations to an input, for the seed generator and tests.
class Writer {
public:
	explicit Writer(uint8_t config) { b_.push_back(config); }

	const std::vector<uint8_t> &bytes() const { return b_; }

	void write(unsigned bar, unsigned size, uint32_t offset, uint64_t value)
	{
		op(Op::Write);
		u8(bar == 0 ? 0 : bar == 2 ? 1 : 2);
		u8(size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3);
		u32(offset);
		u64(value);
	}
	void read(unsigned bar, unsigned size, uint32_t offset)
	{
		op(Op::Read);
		u8(bar == 0 ? 0 : bar == 2 ? 1 : 2);
		u8(size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3);
		u32(offset);
	}
	void write32(uint16_t offset, uint32_t value)
	{
		op(Op::Write32);
		u16(offset);
		u32(value);
	}
	enum DoorbellKind : uint8_t { kChannel = 0, kEventRing = 1, kCommandRing = 2 };
	void doorbell(DoorbellKind kind, uint8_t index, uint64_t value)
	{
		op(Op::Doorbell);
		u8(kind);
		u8(index);
		u64(value);
	}
	void dbc(uint8_t dbc, uint8_t reg, uint32_t value)
	{
		op(Op::Dbc);
		u8(dbc);
		u8(reg);
		u32(value);
	}
	void mem(uint32_t offset, const void *p, size_t n)
	{
		const auto *s = static_cast<const uint8_t *>(p);
		// One operation carries at most 64 KiB.
		while (n) {
			const size_t k = n < 0xFFFF ? n : 0xFFFF;
			op(Op::Mem);
			u32(offset);
			u16(static_cast<uint16_t>(k));
			b_.insert(b_.end(), s, s + k);
			s += k;
			offset += static_cast<uint32_t>(k);
			n -= k;
		}
	}
	template <typename T> void mem_obj(uint32_t offset, const T &v) { mem(offset, &v, sizeof(v)); }
	void clock_us(uint32_t us)
	{
		op(Op::Clock);
		u32(us);
	}
	void process() { op(Op::Process); }
	void settle() { op(Op::Settle); }
	void mailbox(const std::string &text) { text_op(Op::Mailbox, text); }
	void inject(const std::string &text) { text_op(Op::Inject, text); }
	void reset() { op(Op::Reset); }
	void msi(uint8_t vectors)
	{
		op(Op::Msi);
		u8(vectors);
	}

private:
	void op(Op o) { b_.push_back(static_cast<uint8_t>(o)); }
	void u8(uint8_t v) { b_.push_back(v); }
	void u16(uint16_t v) { put(&v, 2); }
	void u32(uint32_t v) { put(&v, 4); }
	void u64(uint64_t v) { put(&v, 8); }
	void put(const void *p, size_t n)
	{
		const auto *s = static_cast<const uint8_t *>(p);
		b_.insert(b_.end(), s, s + n);
	}
	void text_op(Op o, const std::string &text)
	{
		op(o);
		const size_t n = text.size() < 255 ? text.size() : 255;
		u8(static_cast<uint8_t>(n));
		b_.insert(b_.end(), text.begin(), text.begin() + static_cast<long>(n));
	}

	std::vector<uint8_t> b_;
};

// Takes operands off an input; every take fails once the input is spent.
class Reader {
public:
	Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}

	bool done() const { return off_ >= n_; }
	bool u8(uint8_t &v) { return take(&v, 1); }
	bool u16(uint16_t &v) { return take(&v, 2); }
	bool u32(uint32_t &v) { return take(&v, 4); }
	bool u64(uint64_t &v) { return take(&v, 8); }
	// `n` bytes in place (valid as long as the input).
	const uint8_t *bytes(size_t n)
	{
		if (n > n_ - off_)
			return nullptr;
		const uint8_t *s = p_ + off_;
		off_ += n;
		return s;
	}

private:
	bool take(void *v, size_t n)
	{
		const uint8_t *s = bytes(n);
		if (!s)
			return false;
		std::memcpy(v, s, n);
		return true;
	}

	const uint8_t *p_;
	size_t n_;
	size_t off_ = 0;
};

} // namespace aic100::fuzz
