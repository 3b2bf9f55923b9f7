// SPDX-License-Identifier: GPL-2.0-or-later
// Runs fuzz inputs (fuzz_input.h) against a Device: the libFuzzer target,
// the replay program and the seed generator all go through this.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "aic100/device.h"
#include "aic100/regs.h"
#include "fuzz_host.h"
#include "fuzz_input.h"

namespace aic100::fuzz {

// The card an input's first byte asks for. One NSP (two on request): the
// NSPs run on threads of their own, and fewer of them keep what a workload
// does between two operations closer to the same from run to run.
inline DeviceConfig config_of(uint8_t c)
{
	DeviceConfig cfg;
	cfg.boot_amss = c & kCfgAmss;
	cfg.nnc_crc = c & kCfgCrc;
	cfg.nsp_count = c & kCfgTwoNsps ? 2 : 1;
	cfg.ddr_size = kMinDdrSize; // sparse; pages cost memory only once written
	cfg.test_mailbox = true;
	return cfg;
}

class Harness {
public:
	// The bottom half runs at most this often for one Settle: each run is
	// bounded work (the core's budgets), and a card that keeps asking is
	// allowed to: the guest carries on meanwhile.
	static constexpr unsigned kSettleRounds = 32;

	explicit Harness(uint8_t config) : cfg_(config_of(config)), dev_(host_, cfg_)
	{
		host_.vectors = config & kCfgOneMsi ? 1 : 32;
	}

	FuzzHost &host() { return host_; }
	Device &device() { return dev_; }

	// Runs operations until the input ends; then whatever the guest left
	// queued runs, as QEMU's main loop would run it.
	void run(Reader &in)
	{
		while (step(in)) {
		}
		settle();
	}

	// One operation; false when the input is spent.
	bool step(Reader &in)
	{
		uint8_t opcode;
		if (!in.u8(opcode))
			return false;
		const auto op = static_cast<Op>(opcode % static_cast<uint8_t>(Op::kCount));
		switch (op) {
		case Op::Write:
		case Op::Read:
			return bar_access(in, op == Op::Write);
		case Op::Write32:
			return write32(in);
		case Op::Doorbell:
			return doorbell(in);
		case Op::Dbc:
			return dbc_write(in);
		case Op::Mem:
			return mem(in);
		case Op::Clock:
			return clock(in);
		case Op::Process:
			dev_.process();
			return true;
		case Op::Settle:
			settle();
			return true;
		case Op::Mailbox:
		case Op::Inject:
			return mailbox_text(in, op);
		case Op::Reset:
			dev_.reset();
			return true;
		case Op::Msi:
			return msi(in);
		case Op::kCount:
			break;
		}
		return false;
	}

	void settle()
	{
		for (unsigned i = 0; i < kSettleRounds; i++) {
			const uint64_t before = host_.kicks.load();
			dev_.process();
			if (host_.kicks.load() == before)
				return;
		}
	}

private:
	// A read or a write of any BAR, as QEMU issues them: 1, 2, 4 or 8
	// bytes, naturally aligned, inside the BAR (the glue's MemoryRegionOps
	// refuse the rest).
	bool bar_access(Reader &in, bool write)
	{
		uint8_t b, sz;
		uint32_t offset;
		uint64_t value = 0;
		if (!in.u8(b) || !in.u8(sz) || !in.u32(offset) || (write && !in.u64(value)))
			return false;
		const unsigned bar = b % 3 * 2, size = 1u << (sz & 3);
		const uint64_t off = (offset % bar_size(bar)) & ~uint64_t{size - 1};
		if (write)
			dev_.bar_write(bar, off, size == 8 ? value : value & ((uint64_t{1} << (size * 8)) - 1), size);
		else
			(void)dev_.bar_read(bar, off, size);
		return true;
	}

	// A 32-bit write to BAR 0 (MHI's registers).
	bool write32(Reader &in)
	{
		uint16_t offset;
		uint32_t value;
		if (!in.u16(offset) || !in.u32(value))
			return false;
		dev_.bar_write(0, (offset % regs::kBar0Size) & ~3u, value, 4);
		return true;
	}

	// A 64-bit doorbell: the command ring's, a channel's or an event ring's.
	bool doorbell(Reader &in)
	{
		uint8_t kind, index;
		uint64_t value;
		if (!in.u8(kind) || !in.u8(index) || !in.u64(value))
			return false;
		uint32_t reg = regs::CRDB_LOWER;
		if (kind % 3 == Writer::kChannel)
			reg = regs::kChdbBase + 8 * (index % regs::kNumChannels);
		else if (kind % 3 == Writer::kEventRing)
			reg = regs::kErdbBase + 8 * (index % regs::kMaxEventRings);
		dev_.bar_write(0, reg + 4, value >> 32, 4);
		dev_.bar_write(0, reg, static_cast<uint32_t>(value), 4);
		return true;
	}

	// A write to one of a DBC's four registers.
	bool dbc_write(Reader &in)
	{
		uint8_t dbc, reg;
		uint32_t value;
		if (!in.u8(dbc) || !in.u8(reg) || !in.u32(value))
			return false;
		dev_.bar_write(2, regs::kDbcBase + (dbc % regs::kNumDbc) * regs::kDbcStride + (reg % 4) * 4, value, 4);
		return true;
	}

	// Bytes into host memory.
	bool mem(Reader &in)
	{
		uint32_t offset;
		uint16_t len;
		if (!in.u32(offset) || !in.u16(len))
			return false;
		const uint8_t *p = in.bytes(len);
		if (!p)
			return false;
		offset %= kMemSize;
		std::memcpy(host_.mem.data() + offset, p, std::min<uint64_t>(len, kMemSize - offset));
		return true;
	}

	// Time passes; the device's timer fires when its deadline comes.
	bool clock(Reader &in)
	{
		uint32_t us;
		if (!in.u32(us))
			return false;
		host_.clock_ns += uint64_t{us} * 1000;
		if (host_.deadline != HostInterface::kNoDeadline && host_.deadline <= host_.clock_ns)
			dev_.process(); // the timer fires
		return true;
	}

	// A line for the test mailbox or an injected fault.
	bool mailbox_text(Reader &in, Op op)
	{
		uint8_t n;
		if (!in.u8(n))
			return false;
		const uint8_t *s = in.bytes(n);
		if (!s)
			return false;
		text(op, s, n);
		return true;
	}

	// Multiple Message Enable: MSI off, or 1, 2, 4 ... 32 vectors.
	bool msi(Reader &in)
	{
		uint8_t v;
		if (!in.u8(v))
			return false;
		host_.vectors = v % 7 == 0 ? 0 : 1u << (v % 7 - 1);
		return true;
	}

	uint64_t bar_size(unsigned bar) const
	{
		return bar == 0 ? regs::kBar0Size : bar == 2 ? regs::kBar2Size : cfg_.bar4_size;
	}

	void text(Op op, const uint8_t *s, size_t n)
	{
		const std::string t(reinterpret_cast<const char *>(s), n);
		if (op == Op::Inject) {
			(void)dev_.inject(t);
			return;
		}
		// As a guest does it: the command into the mailbox's buffer a
		// word at a time, then its length, which queues it.
		for (size_t i = 0; i < n; i += 4) {
			uint32_t w = 0;
			std::memcpy(&w, s + i, std::min<size_t>(4, n - i));
			dev_.bar_write(4, i, w, 4);
		}
		dev_.bar_write(4, 0x100, n, 4);
	}

	FuzzHost host_;
	DeviceConfig cfg_;
	Device dev_;
};

// One whole input.
inline void run_input(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	Harness h(data[0]);
	Reader in(data + 1, size - 1);
	h.run(in);
}

} // namespace aic100::fuzz
