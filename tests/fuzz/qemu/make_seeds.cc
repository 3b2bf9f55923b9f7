// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the seed corpus and the dictionary of QEMU's generic-fuzz on the
// card (make qemu-fuzz; tests/fuzz/README.md). A seed is what a driver does
// first, recorded as generic-fuzz commands: a live device core is driven as
// a host would drive the card (register writes, contexts and rings in host
// memory), and every DMA read the card makes after a command becomes one
// DMA pattern placed just before that command, in order: generic-fuzz
// serves the card's reads from the patterns in turn, so the card reads what
// the host would have written. Each seed is then run again on a new core
// through a model of generic-fuzz (patterns only, no host memory) and must
// get as far. Every offset and structure comes from the card's ABI headers,
// so the seeds follow it; ctest qemu-fuzz-seeds fails when the committed
// seeds or dictionary differ from what this makes now.
//
//   make-qemu-seeds --out DIR      write DIR/seeds/* and DIR/aic100.dict
//   make-qemu-seeds --check DIR    fail unless DIR holds exactly those
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aic100/device.h"
#include "aic100/dma_bridge.h"
#include "aic100/firmware.h"
#include "aic100/mhi_wire.h"
#include "aic100/nnc.h"
#include "aic100/ras_wire.h"
#include "aic100/regs.h"
#include "aic100/sahara_wire.h"
#include "aic100/sbl.h"
#include "aic100/ssr_wire.h"
#include "aic100/telemetry_wire.h"
#include "aic100/test_mailbox.h"
#include "generic_fuzz_input.h"
#include "packet_bytes.h"
#include "workloads.h"

namespace {

using namespace aic100;
using aic100::test::word;
using aic100::test::words;

[[noreturn]] void fail(const std::string &why)
{
	std::fprintf(stderr, "make-qemu-seeds: %s\n", why.c_str());
	std::exit(1);
}

template <typename T> std::vector<uint8_t> raw(const T &v)
{
	std::vector<uint8_t> b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}

// ---- the machine of scripts/qemu-fuzz ----------------------------------------
// card0 (boot=amss) and card1 (boot=full), each nsps=2, ddr-size=64M,
// test-mailbox=on. generic-fuzz maps both cards' BARs and numbers the
// fuzzed MMIO ranges by address: card0's BAR0, BAR2 and BAR4, then card1's
// (the IOMMU's registers, in q35-iommu, come after them).
constexpr unsigned kCards = 2;
constexpr uint8_t kFirstRegion[kCards] = {0, 3};
uint8_t region_of(unsigned card, unsigned bar)
{
	return static_cast<uint8_t>(kFirstRegion[card] + bar / 2);
}

DeviceConfig card_config(unsigned card)
{
	DeviceConfig cfg;
	cfg.nsp_count = 2;
	cfg.ddr_size = 64ull << 20;
	cfg.boot_amss = card == 0;
	cfg.test_mailbox = true;
	return cfg;
}

// The host memory the seeds use: guest RAM above the PC's legacy holes and
// below -m 512M.
constexpr uint64_t kMemBase = 0x1000000, kMemSize = 0x200000;
constexpr uint64_t kChanCtx = kMemBase, kEventCtx = kMemBase + 0x2000, kCmdCtx = kMemBase + 0x2100;
constexpr uint64_t kEventRing = kMemBase + 0x4000, kCmdRing = kMemBase + 0x8000;
constexpr uint64_t kChanRings = kMemBase + 0x10000; // 0x200 a channel
constexpr uint64_t kDlBufs = kMemBase + 0x20000, kScratch = kMemBase + 0x60000;
constexpr uint64_t kDbcArea = kMemBase + 0x100000;
constexpr unsigned kEventElements = 1024, kCmdElements = 64, kChanElements = 32;

// Host memory with no MSI enabled (the fuzzer enables none); every DMA
// read is logged with the bytes it got.
class Host final : public HostInterface {
public:
	Host() : mem(kMemSize, 0) {}

	struct Read {
		uint64_t addr;
		std::vector<uint8_t> bytes;
	};

	DmaStatus dma_read(uint64_t addr, void *buf, size_t len) override
	{
		if (!inside(addr, len))
			return DmaStatus::Error;
		if (serve) {
			auto got = serve(len);
			std::memcpy(mem.data() + (addr - kMemBase), got.data(), std::min(len, got.size()));
		}
		std::memcpy(buf, mem.data() + (addr - kMemBase), len);
		reads.push_back({addr, std::vector<uint8_t>(static_cast<uint8_t *>(buf), static_cast<uint8_t *>(buf) + len)});
		return DmaStatus::Ok;
	}
	DmaStatus dma_write(uint64_t addr, const void *buf, size_t len) override
	{
		if (!inside(addr, len))
			return DmaStatus::Error;
		std::memcpy(mem.data() + (addr - kMemBase), buf, len);
		return DmaStatus::Ok;
	}
	void raise_msi(unsigned) override {}
	unsigned msi_vectors_enabled() const override { return 0; }
	uint64_t now_ns() const override { return clock_ns; }
	void kick() override { kicks++; }
	void arm_timer(uint64_t deadline_ns) override { deadline = deadline_ns; }
	void guest_error(const char *msg) override { trace(msg); }
	void trace(const char *msg) override
	{
		if (std::getenv("MAKE_SEEDS_TRACE"))
			std::fprintf(stderr, "card: %s\n", msg);
	}

	static bool inside(uint64_t addr, size_t len) { return addr >= kMemBase && len <= kMemSize && addr - kMemBase <= kMemSize - len; }
	void put(uint64_t addr, const void *p, size_t n)
	{
		if (!inside(addr, n))
			fail("a host write outside the seeds' memory");
		std::memcpy(mem.data() + (addr - kMemBase), p, n);
	}
	template <typename T> T get(uint64_t addr) const
	{
		T t{};
		if (inside(addr, sizeof(T)))
			std::memcpy(&t, mem.data() + (addr - kMemBase), sizeof(T));
		return t;
	}
	std::vector<uint8_t> get(uint64_t addr, size_t n) const
	{
		if (!inside(addr, n))
			return {};
		const auto at = mem.begin() + static_cast<long>(addr - kMemBase);
		return std::vector<uint8_t>(at, at + static_cast<long>(n));
	}

	std::vector<uint8_t> mem;
	std::vector<Read> reads;
	// The model of generic-fuzz: what a read gets, before it is logged.
	std::function<std::vector<uint8_t>(size_t)> serve;
	uint64_t clock_ns = 0;
	uint64_t deadline = kNoDeadline;
	std::atomic<uint64_t> kicks{0};
};

// QEMU's main loop after a command (flush_events: at most 10 rounds; the
// card's bottom half runs once a round while it asks for more). The seeds
// leave half of that unused, or a busier main loop would cut them short.
constexpr unsigned kMainLoopRounds = 10, kRoundsUsed = 5;
unsigned run_main_loop(Host &host, Device &dev, uint64_t kicks_before)
{
	unsigned rounds = 0;
	while (host.kicks.load() != kicks_before && rounds < kMainLoopRounds) {
		kicks_before = host.kicks.load();
		dev.process();
		rounds++;
	}
	return rounds;
}

// A host driving one card and recording what it does as generic-fuzz
// commands.
class Script {
public:
	explicit Script(unsigned card) : card_(card), dev_(host_, card_config(card)) {}

	const std::vector<uint8_t> &bytes() const { return w_.bytes(); }
	Device &dev() { return dev_; }
	unsigned card() const { return card_; }

	// One MMIO write as generic-fuzz makes it: the DMA patterns for the
	// reads it causes, then the write.
	void write(unsigned bar, uint32_t offset, uint64_t value, gfuzz::Size size = gfuzz::kLong)
	{
		record([&] { dev_.bar_write(bar, offset, value, 1u << size); },
		       [&] { w_.write(region_of(card_, bar), offset, value, size); });
	}
	void read(unsigned bar, uint32_t offset, gfuzz::Size size = gfuzz::kLong)
	{
		record([&] { (void)dev_.bar_read(bar, offset, 1u << size); },
		       [&] { w_.read(region_of(card_, bar), offset, size); });
	}
	// The virtual clock to the card's next deadline (qtest's clock_step
	// with no argument).
	void clock_step()
	{
		if (host_.deadline == HostInterface::kNoDeadline)
			fail("a clock step with no timer armed");
		record(
			[&] {
				host_.clock_ns = std::max(host_.clock_ns, host_.deadline);
				host_.kicks++; // the timer kicks the bottom half
			},
			[&] { w_.clock_step(); });
	}
	bool timer_armed() const { return host_.deadline != HostInterface::kNoDeadline; }
	void w32(uint32_t off, uint32_t v) { write(0, off, v); }
	void put(uint64_t addr, const void *p, size_t n) { host_.put(addr, p, n); }
	void put(uint64_t addr, const std::vector<uint8_t> &v) { put(addr, v.data(), v.size()); }
	std::vector<uint8_t> get(uint64_t addr, size_t n) const { return host_.get(addr, n); }

	// ---- MHI, as Linux's MHI host stack drives it ------------------------
	void bhi_load(const std::vector<uint8_t> &image)
	{
		const uint64_t at = scratch(image.size());
		put(at, image);
		w32(regs::kBhiBase + regs::BHI_STATUS, 0);
		w32(regs::kBhiBase + regs::BHI_IMGADDR_HIGH, static_cast<uint32_t>(at >> 32));
		w32(regs::kBhiBase + regs::BHI_IMGADDR_LOW, static_cast<uint32_t>(at));
		w32(regs::kBhiBase + regs::BHI_IMGSIZE, static_cast<uint32_t>(image.size()));
		w32(regs::kBhiBase + regs::BHI_IMGTXDB, 1);
		read(0, regs::kBhiBase + regs::BHI_STATUS);
		if ((dev_.bar_read(0, regs::kBhiBase + regs::BHI_STATUS, 4) >> 30) != 2)
			fail("BHI refused the SBL image");
	}

	void ready_handshake()
	{
		mhi::EventContext ec{};
		ec.ertype = 1;
		ec.rbase = kEventRing;
		ec.rlen = kEventElements * 16;
		ec.rp = kEventRing;
		// Every slot but one is the card's: the seeds never hand any back.
		ec.wp = kEventRing + (kEventElements - 1) * 16;
		put(kEventCtx, &ec, sizeof(ec));
		mhi::CommandContext cc{};
		cc.rbase = kCmdRing;
		cc.rlen = kCmdElements * 16;
		cc.rp = cc.wp = kCmdRing;
		put(kCmdCtx, &cc, sizeof(cc));
		ev_rp_ = kEventRing;
		cmd_wp_ = kCmdRing;
		// A new handshake (after a reset) starts with no channel.
		chans_.clear();
		bufs_.clear();
		rx_.clear();
		cmd_done_.clear();
		read(0, regs::MHISTATUS);
		set64(regs::CCABAP_LOWER, kChanCtx);
		set64(regs::ECABAP_LOWER, kEventCtx);
		set64(regs::CRCBAP_LOWER, kCmdCtx);
		w32(regs::MHICFG, (1u << 16) | regs::kNumChannels);
		ring(regs::kErdbBase, ec.wp);
		w32(regs::MHICTRL, uint32_t{static_cast<uint8_t>(regs::MhiState::M0)} << regs::kStateShift);
		events();
		if (dev_.mhi().state() != regs::MhiState::M0)
			fail("MHI did not reach M0");
	}

	// START_CHAN after the channel's context and ring, as mhi_prepare_channel.
	void start(unsigned ch)
	{
		Chan c;
		c.base = c.wp = kChanRings + ch * kChanElements * 16;
		mhi::ChannelContext ctx{};
		ctx.chcfg = 1;
		ctx.chtype = (ch & 1) ? 2 : 1;
		ctx.rbase = c.base;
		ctx.rlen = kChanElements * 16;
		ctx.rp = ctx.wp = c.base;
		put(kChanCtx + ch * sizeof(ctx), &ctx, sizeof(ctx));
		chans_[ch] = c;
		const uint64_t at = cmd_wp_;
		const mhi::RingElement e{0, 0, (uint32_t{ch} << 24) | (uint32_t{static_cast<uint8_t>(mhi::ElementType::StartChannel)} << 16)};
		put(at, &e, sizeof(e));
		cmd_wp_ = next(cmd_wp_, kCmdRing, kCmdElements);
		put(kCmdCtx + mhi::kCtxWpOffset, &cmd_wp_, 8);
		ring(regs::CRDB_LOWER, cmd_wp_);
		events();
		if (cmd_done_[at] != static_cast<uint8_t>(mhi::Completion::Success))
			fail("channel " + std::to_string(ch) + " did not start");
	}

	// `n` receive buffers of `len` bytes on DL channel `ch`.
	void queue_dl(unsigned ch, uint32_t len, unsigned n)
	{
		Chan &c = chans_.at(ch);
		for (unsigned i = 0; i < n; i++) {
			const uint64_t buf = dl_next_;
			dl_next_ += (len + 63) & ~63u;
			if (dl_next_ > kScratch)
				fail("out of DL buffer space");
			add_tre(c, buf, len, mhi::kTreIeot);
		}
		ring_channel(ch);
	}

	// One TD on UL channel `ch`, in pieces of at most `piece` bytes.
	void send(unsigned ch, const std::vector<uint8_t> &msg, size_t piece = 0xFFFF)
	{
		Chan &c = chans_.at(ch);
		for (size_t off = 0; off < msg.size() || off == 0; off += piece) {
			const size_t n = std::min(piece, msg.size() - off);
			const uint64_t buf = scratch(n);
			put(buf, msg.data() + off, n);
			const bool last = off + n >= msg.size();
			add_tre(c, buf, static_cast<uint32_t>(n), last ? mhi::kTreIeot : mhi::kTreChain);
			if (last)
				break;
		}
		ring_channel(ch);
	}

	// What the card sent on DL channel `ch`, oldest first.
	std::vector<uint8_t> pop(unsigned ch)
	{
		events();
		auto &q = rx_[ch];
		if (q.empty())
			return {};
		auto v = std::move(q.front());
		q.erase(q.begin());
		return v;
	}

	uint64_t scratch(size_t n)
	{
		const uint64_t at = scratch_;
		scratch_ += (n + 63) & ~size_t{63};
		if (scratch_ > kDbcArea)
			fail("out of scratch space");
		return at;
	}

	// A command for the test mailbox in BAR4, a word at a time, then its
	// length, which runs it.
	void mailbox(const std::string &text)
	{
		for (size_t i = 0; i < text.size(); i += 4) {
			uint32_t v = 0;
			std::memcpy(&v, text.data() + i, std::min<size_t>(4, text.size() - i));
			write(4, mailbox::kCommand + static_cast<uint32_t>(i), v);
		}
		write(4, mailbox::kLength, text.size());
		read(4, mailbox::kStatus);
	}

	// ---- NNC on QAIC_CONTROL ------------------------------------------------
	struct Trans {
		std::vector<uint8_t> data; // the whole transaction, header included
	};
	static Trans passthrough(std::vector<uint8_t> req)
	{
		req.resize(req.size() + 8, 0);
		Trans t{raw(nnc::TransHdr{nnc::kPassthroughToDev, static_cast<uint32_t>(8 + req.size())})};
		t.data.insert(t.data.end(), req.begin(), req.end());
		return t;
	}
	Trans dma(uint32_t tag, const std::vector<uint8_t> &data)
	{
		const uint64_t at = scratch(data.size());
		put(at, data);
		Trans t{raw(nnc::DmaXferToDev{{nnc::kDmaXferToDev, 24 + 16}, tag, 1, 0, 0})};
		const auto p = raw(nnc::DmaPair{at, data.size()});
		t.data.insert(t.data.end(), p.begin(), p.end());
		return t;
	}
	// One message; the reply's first passthrough payload.
	std::vector<uint8_t> nnc(const std::vector<Trans> &ts)
	{
		std::vector<uint8_t> body;
		for (const auto &t : ts)
			body.insert(body.end(), t.data.begin(), t.data.end());
		const nnc::Header hd{0, nnc::kMagic, seq_++, static_cast<uint32_t>(nnc::kHeaderSize + body.size()),
				     static_cast<uint32_t>(ts.size()), 5, 0xFFFFFFFF, 0};
		std::vector<uint8_t> m = raw(hd);
		m.insert(m.end(), body.begin(), body.end());
		queue_dl(chan::kControlDl, 4096, 1);
		send(chan::kControlUl, m, 4096);
		const auto reply = pop(chan::kControlDl);
		const size_t at = nnc::kHeaderSize;
		const uint32_t len = word(reply, at + 4);
		if (word(reply, at) != nnc::kPassthroughFromDev || len < 8 || at + len > reply.size())
			return {};
		return std::vector<uint8_t>(reply.begin() + static_cast<long>(at + 8), reply.begin() + static_cast<long>(at + len));
	}
	// QAIC_CONTROL up and the driver's STATUS exchange.
	void control_up()
	{
		start(chan::kControlUl);
		start(chan::kControlDl);
		queue_dl(chan::kControlDl, 4096, 1);
		const nnc::Header hd{0, nnc::kMagic, seq_++, 40, 1, 0, 0xFFFFFFFF, 0};
		auto m = raw(hd);
		const auto st = words({nnc::kStatusToDev, 8}, 8);
		m.insert(m.end(), st.begin(), st.end());
		send(chan::kControlUl, m);
		if (pop(chan::kControlDl).size() != nnc::kHeaderSize + sizeof(nnc::StatusFromDev))
			fail("no STATUS answer");
	}

	// Every new event: command completions and what DL channels received.
	void events()
	{
		const uint64_t dev_rp = host_.get<uint64_t>(kEventCtx + mhi::kCtxRpOffset);
		for (unsigned n = 0; ev_rp_ != dev_rp && n < kEventElements; n++) {
			const auto e = host_.get<mhi::RingElement>(ev_rp_);
			const uint8_t code = e.dword0 >> 24;
			if (mhi::element_type(e) == mhi::ElementType::CommandCompletionEvent)
				cmd_done_[e.ptr] = code;
			if (mhi::element_type(e) == mhi::ElementType::TransferEvent) {
				const unsigned ch = e.dword1 >> 24;
				auto it = bufs_.find(e.ptr);
				if ((ch & 1) && it != bufs_.end())
					rx_[ch].push_back(get(it->second.first, std::min(mhi::tre_length(e), it->second.second)));
			}
			ev_rp_ = next(ev_rp_, kEventRing, kEventElements);
		}
	}

private:
	struct Chan {
		uint64_t base = 0, wp = 0;
	};

	// Runs `act` on the card, then writes the patterns of the reads it
	// caused, then the command (`emit`) that does it in QEMU.
	void record(const std::function<void()> &act, const std::function<void()> &emit)
	{
		host_.reads.clear();
		const uint64_t kicks = host_.kicks.load();
		act();
		if (run_main_loop(host_, dev_, kicks) > kRoundsUsed)
			fail("a command whose work takes more of QEMU's main loop than the seeds may use");
		if (!host_.reads.empty() || patterns_) {
			w_.clear_dma_patterns();
			patterns_ = false;
		}
		for (const auto &r : host_.reads) {
			if (r.bytes.size() > gfuzz::kMaxDmaFill)
				fail("a DMA read larger than generic-fuzz fills");
			w_.dma_pattern(r.bytes);
			patterns_ = true;
		}
		emit();
	}
	static uint64_t next(uint64_t p, uint64_t base, unsigned n) { return p + 16 == base + n * 16 ? base : p + 16; }
	void set64(uint32_t lower, uint64_t v)
	{
		w32(lower + 4, static_cast<uint32_t>(v >> 32));
		w32(lower, static_cast<uint32_t>(v));
	}
	// A doorbell: high half, then low, as the host stack writes it.
	void ring(uint32_t db, uint64_t v) { set64(db, v); }
	void ring_channel(unsigned ch)
	{
		const uint64_t wp = chans_.at(ch).wp;
		put(kChanCtx + ch * sizeof(mhi::ChannelContext) + mhi::kCtxWpOffset, &wp, 8);
		ring(regs::kChdbBase + 8 * ch, wp);
	}
	void add_tre(Chan &c, uint64_t buf, uint32_t len, uint32_t flags)
	{
		const mhi::RingElement e{buf, len, (uint32_t{static_cast<uint8_t>(mhi::ElementType::Transfer)} << 16) | flags};
		put(c.wp, &e, sizeof(e));
		bufs_[c.wp] = {buf, len};
		c.wp = next(c.wp, c.base, kChanElements);
	}

	unsigned card_;
	Host host_;
	Device dev_;
	gfuzz::Writer w_;
	bool patterns_ = false;
	uint64_t ev_rp_ = 0, cmd_wp_ = 0;
	uint64_t dl_next_ = kDlBufs, scratch_ = kScratch;
	uint32_t seq_ = 1;
	std::map<unsigned, Chan> chans_;
	std::map<uint64_t, std::pair<uint64_t, uint32_t>> bufs_; // TRE -> buffer, length
	std::map<uint64_t, uint8_t> cmd_done_;
	std::map<unsigned, std::vector<std::vector<uint8_t>>> rx_;
};

// ---- DMA Bridge (docs/dma-bridge.md) ------------------------------------------
struct __attribute__((packed)) Request {
	uint16_t req_id;
	uint8_t seq_id, cmd;
	uint32_t r0;
	uint64_t src, dest;
	uint32_t len, r1;
	uint64_t db_addr;
	uint8_t db_len, r2[3];
	uint32_t db_data;
	uint32_t sem[4];
};
static_assert(sizeof(Request) == 64);
uint32_t sem(unsigned op, unsigned idx, unsigned val, bool presync)
{
	return (1u << 31) | (op << 24) | (presync ? 1u << 22 : 0) | (idx << 16) | val;
}
constexpr unsigned kSemInc = 2, kSemDec = 3, kSemWaitEq = 4, kSemWaitGt0 = 6;
constexpr uint32_t kFifoN = 16;
constexpr uint64_t kFifo = kDbcArea, kFifoBuf = (68 * kFifoN + 4095) & ~4095u;
constexpr uint64_t kData = kDbcArea + 0x10000;

// An ELF64 header with no sections: activated without a program (docs/qsm.md).
std::vector<uint8_t> tiny_elf(size_t n)
{
	std::vector<uint8_t> e(n, 0xAB);
	std::fill(e.begin() + 16, e.begin() + 64, 0);
	const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
	std::memcpy(e.data(), ident, sizeof(ident));
	e[18] = 164;
	return e;
}

struct Activated {
	unsigned dbc;
	uint64_t ddr_base;
};

// LOAD_ELF and ACTIVATE with FIFOs of kFifoN elements at kFifo.
Activated load_and_activate(Script &s, const std::vector<uint8_t> &elf)
{
	using namespace nnc::cmd;
	LoadElfReq lr{};
	lr.type = kLoadElf;
	lr.tag = kTagElf;
	lr.data_length = elf.size();
	const auto r = s.nnc({Script::passthrough(raw(lr)), s.dma(kTagElf, elf)});
	LoadElfResp lresp{};
	std::memcpy(&lresp, r.data(), std::min(r.size(), sizeof(lresp)));
	if (r.size() < sizeof(lresp) || lresp.status != kOk)
		fail("LOAD_ELF refused");
	ActivateReq a{};
	a.type = kActivate;
	a.elf_id = lresp.elf_id;
	a.resource_res_id = -1;
	a.vc_res_id = -1;
	a.initial_state = 1;
	const Script::Trans to{raw(nnc::ActivateToDev{{nnc::kActivateToDev, 40}, kFifo, kFifo + kFifoBuf - 4 * kFifoN,
						       kFifoN, kFifoN, kFifoBuf, 0})};
	const auto ar = s.nnc({Script::passthrough(raw(a)), to});
	ActivateResp aresp{};
	std::memcpy(&aresp, ar.data(), std::min(ar.size(), sizeof(aresp)));
	if (ar.size() < sizeof(aresp) || aresp.status != kOk)
		fail("ACTIVATE refused");
	return {aresp.virtual_channel_id, aresp.ddr_base};
}

void dbc_write(Script &s, const Activated &a, uint32_t reg, uint32_t v)
{
	s.write(2, regs::kDbcBase + a.dbc * regs::kDbcStride + reg, v);
}

// ---- the seeds -------------------------------------------------------------------
struct Seed {
	std::string name;
	std::string what;
	unsigned card;
	std::function<void(Script &)> script;
	std::function<bool(Device &)> reached; // after the seed ran again through the model
};

bool in_m0(Device &d)
{
	return d.mhi().state() == regs::MhiState::M0;
}

void amss_m0(Script &s)
{
	s.ready_handshake();
	s.read(0, regs::QTIMER_LO, gfuzz::kQuad);
	s.read(0, regs::kBhiBase + regs::BHI_EXECENV);
}

void amss_loopback(Script &s)
{
	s.ready_handshake();
	s.start(chan::kLoopbackUl);
	s.start(chan::kLoopbackDl);
	s.queue_dl(chan::kLoopbackDl, 64, 2);
	const std::string text = "hello, card: echo this";
	s.send(chan::kLoopbackUl, std::vector<uint8_t>(text.begin(), text.end()), 8);
	const auto back = s.pop(chan::kLoopbackDl);
	if (std::string(back.begin(), back.end()) != text)
		fail("loopback did not echo");
}

// The driver's and the UMD's first NNC requests.
void amss_nnc(Script &s)
{
	s.ready_handshake();
	s.control_up();
	using namespace nnc::cmd;
	if (word(s.nnc({Script::passthrough(raw(StatusReq{kStatus, 0, {}}))}), 0) != kStatusResp)
		fail("STATUS");
	if (word(s.nnc({Script::passthrough(raw(ResourceInfoReq{kResourceInfo, 0, -1, 0}))}), 0) != kResourceInfoResp)
		fail("RESOURCE_INFO");
	(void)s.nnc({Script::passthrough(raw(PerformanceInfoReq{kPerformanceInfo, 0}))});
	CreateResourceGroupReq g{};
	g.type = kCreateResourceGroup;
	g.source_grp = -1;
	g.nsp = 1;
	g.mcid = 1;
	g.sem = 1;
	g.vc = 1;
	g.mem = 1 << 20;
	const auto gr = s.nnc({Script::passthrough(raw(g))});
	CreateResourceGroupResp gresp{};
	std::memcpy(&gresp, gr.data(), std::min(gr.size(), sizeof(gresp)));
	(void)s.nnc({Script::passthrough(raw(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(gresp.res_grp_id)}))});
	(void)s.nnc({Script::Trans{raw(nnc::TerminateToDev{{nnc::kTerminateToDev, 16}, 5, 0})}});
}

void amss_dbc_bulk(Script &s)
{
	s.ready_handshake();
	s.control_up();
	const Activated a = load_and_activate(s, tiny_elf(256));
	std::vector<uint8_t> data(512);
	for (size_t i = 0; i < data.size(); i++)
		data[i] = static_cast<uint8_t>(i * 7);
	s.put(kData, data);
	Request in{};
	in.req_id = 1;
	in.cmd = 0x10 | 0x08 | 1; // response, bulk, to the device
	in.src = kData;
	in.dest = a.ddr_base;
	in.len = 512;
	in.sem[0] = sem(kSemInc, 0, 1, false);
	Request out{};
	out.req_id = 2;
	out.cmd = 0x80 | 0x10 | 0x08 | 2; // force MSI, response, bulk, to the host
	out.src = a.ddr_base;
	out.dest = kData + 0x1000;
	out.len = 512;
	out.sem[0] = sem(kSemWaitGt0, 0, 0, true);
	out.sem[1] = sem(kSemDec, 0, 1, false);
	out.db_addr = a.ddr_base + 0x800;
	out.db_len = 0x80; // a doorbell of 4 bytes
	out.db_data = 0xD00DFEED;
	s.put(kFifo, &in, sizeof(in));
	s.put(kFifo + 64, &out, sizeof(out));
	dbc_write(s, a, regs::DBC_REQTP, 2);
	if (s.get(kData + 0x1000, 512) != data)
		fail("bulk requests did not move the data");
	dbc_write(s, a, regs::DBC_RSPHP, 2); // responses read
	s.read(2, regs::kDbcBase + a.dbc * regs::kDbcStride + regs::DBC_RSPTP);
}

void amss_dbc_linked(Script &s)
{
	s.ready_handshake();
	s.control_up();
	const Activated a = load_and_activate(s, tiny_elf(128));
	struct __attribute__((packed)) Desc {
		uint64_t host, dev;
		uint32_t len, reserved;
		uint64_t next;
	};
	const Desc d[2] = {{kData + 0x2000, a.ddr_base, 256, 0, kData + 32}, {kData + 0x3000, a.ddr_base + 4096, 128, 0, 0}};
	s.put(kData, d, sizeof(d));
	Request r{};
	r.req_id = 9;
	r.cmd = 0x10 | 1; // response, linked list, to the device
	r.src = kData;
	r.len = 2; // descriptors at most
	s.put(kFifo, &r, sizeof(r));
	dbc_write(s, a, regs::DBC_REQTP, 1);
}

void amss_health_mailbox(Script &s)
{
	s.ready_handshake();
	s.control_up();
	for (unsigned ch : {ssr::kUl, ssr::kDl, ras::kUl, ras::kDl, telemetry::kUl, telemetry::kDl})
		s.start(ch);
	s.queue_dl(ssr::kDl, 4096, 4);
	s.queue_dl(ras::kDl, 512, 4);
	s.queue_dl(telemetry::kDl, 512, 4);
	load_and_activate(s, tiny_elf(256));
	for (const char *cmd : {"crash dbc=0 reason=seed", "ras ce source=ddr addr=0x1000", "sensor soc_temp=97000",
				"ras ue_nf source=tsens temp=99000 threshold=upper", "syserr"})
		s.mailbox(cmd);
	s.w32(regs::MHICTRL, regs::MHICTRL_RESET);
}

// What the UMD does with a network's life: constants (both ways), an
// ELF, ACTIVATE in standby, state changes, DEACTIVATE, the unloads; then
// transactions and commands the card refuses.
void amss_nnc_lifecycle(Script &s)
{
	s.ready_handshake();
	s.control_up();
	using namespace nnc::cmd;
	const std::vector<uint8_t> constants(256, 0x5C);
	LoadConstantsReq lc{};
	lc.type = kLoadConstants;
	lc.tag = kTagConstants;
	lc.data_length = constants.size();
	const auto lcr = s.nnc({Script::passthrough(raw(lc)), s.dma(kTagConstants, constants)});
	LoadConstantsResp lcresp{};
	std::memcpy(&lcresp, lcr.data(), std::min(lcr.size(), sizeof(lcresp)));
	LoadConstantsExReq lx{};
	lx.type = kLoadConstantsEx;
	lx.descriptor_len = sizeof(ConstantsDescriptor);
	auto lxreq = raw(lx);
	const auto desc = raw(ConstantsDescriptor{512, 256, 0, 0, {}});
	lxreq.insert(lxreq.end(), desc.begin(), desc.end());
	const auto lxr = s.nnc({Script::passthrough(lxreq)});
	LoadConstantsResp lxresp{};
	std::memcpy(&lxresp, lxr.data(), std::min(lxr.size(), sizeof(lxresp)));
	const LoadConstantsPayloadReq pl{kLoadConstantsPayload, 0, kTagConstants, lxresp.constants_id, 512, 0};
	(void)s.nnc({Script::passthrough(raw(pl)), s.dma(kTagConstants, std::vector<uint8_t>(512, 0xC5))});
	LoadElfReq lr{};
	lr.type = kLoadElf;
	lr.tag = kTagElf;
	lr.data_length = 256;
	const auto r = s.nnc({Script::passthrough(raw(lr)), s.dma(kTagElf, tiny_elf(256))});
	LoadElfResp lresp{};
	std::memcpy(&lresp, r.data(), std::min(r.size(), sizeof(lresp)));
	ActivateReq a{};
	a.type = kActivate;
	a.constants_id = lcresp.constants_id;
	a.elf_id = lresp.elf_id;
	a.resource_res_id = -1;
	a.vc_res_id = -1;
	a.initial_state = 0; // standby
	const Script::Trans to{raw(nnc::ActivateToDev{{nnc::kActivateToDev, 40}, kFifo, kFifo + kFifoBuf - 4 * kFifoN,
						       kFifoN, kFifoN, kFifoBuf, 0})};
	const auto ar = s.nnc({Script::passthrough(raw(a)), to});
	ActivateResp aresp{};
	std::memcpy(&aresp, ar.data(), std::min(ar.size(), sizeof(aresp)));
	if (ar.size() < sizeof(aresp) || aresp.status != kOk)
		fail("ACTIVATE in standby refused");
	for (uint32_t state : {1u, 0u, 1u}) {
		ActivateStateCmdReq sc{};
		sc.type = kActivateStateCmd;
		sc.num_cmds = 1;
		sc.cmds[0] = {aresp.activation_id, state};
		(void)s.nnc({Script::passthrough(raw(sc))});
	}
	(void)s.nnc({Script::passthrough(raw(DeactivateReq{kDeactivate, aresp.activation_id, 1, 0}))});
	(void)s.nnc({Script::passthrough(raw(IdReq{kUnloadElf, lresp.elf_id}))});
	(void)s.nnc({Script::passthrough(raw(IdReq{kUnloadConstants, lcresp.constants_id}))});
	(void)s.nnc({Script::passthrough(raw(IdReq{kUnloadConstants, lxresp.constants_id}))});
	(void)s.nnc({Script::passthrough(raw(IdReq{kReleaseVc, 0}))});
	(void)s.nnc({Script::passthrough(raw(IdReq{kDeviceConfig, 0}))});
	(void)s.nnc({Script::Trans{raw(nnc::ValidatePartitionToDev{{nnc::kValidatePartitionToDev, 16}, 0, 0})}});
	(void)s.nnc({Script::Trans{raw(nnc::DmaXferCont{{nnc::kDmaXferCont, 24}, 0, 0, 0})}});
	(void)s.nnc({Script::Trans{words({nnc::kStatusToDev, 8}, 8)}});
}

// The copy example workload (tools/workloads) activated and fed one input:
// the NSPs run its program.
void amss_workload_copy(Script &s)
{
	s.ready_handshake();
	s.control_up();
	const auto *e = workloads::find("copy");
	std::string err;
	const auto elf = e ? workloads::build(*e, err) : std::nullopt;
	if (!elf)
		fail("copy workload: " + err);
	const Activated a = load_and_activate(s, *elf);
	const auto &L = e->layout;
	s.put(kData, e->make_input(1));
	Request in{};
	in.req_id = 1;
	in.cmd = 0x08 | 1; // bulk, to the device
	in.src = kData;
	in.dest = a.ddr_base + L.input.offset;
	in.len = static_cast<uint32_t>(L.input.size);
	in.sem[0] = sem(kSemWaitEq, L.sem_in, 0, true);
	in.sem[1] = sem(kSemInc, L.sem_in, 1, false);
	Request out{};
	out.req_id = 1;
	out.cmd = 0x10 | 0x08 | 2; // response, bulk, to the host
	out.src = a.ddr_base + L.output.offset;
	out.dest = kData + 0x2000;
	out.len = static_cast<uint32_t>(L.output.size);
	out.sem[0] = sem(kSemWaitGt0, L.sem_out, 0, true);
	out.sem[1] = sem(kSemDec, L.sem_out, 1, false);
	s.put(kFifo, &in, sizeof(in));
	s.put(kFifo + 64, &out, sizeof(out));
	dbc_write(s, a, regs::DBC_REQTP, 2);
	s.mailbox("dma-stats dbc=" + std::to_string(a.dbc));
}

// Every verb of the fault-injection grammar through the mailbox, with the
// arguments each takes and some it refuses (docs/health.md).
void amss_mailbox_commands(Script &s)
{
	s.ready_handshake();
	for (unsigned ch : {ssr::kUl, ssr::kDl, ras::kUl, ras::kDl, telemetry::kUl, telemetry::kDl})
		s.start(ch);
	s.queue_dl(ssr::kDl, 4096, 2);
	s.queue_dl(ras::kDl, 512, 8);
	s.queue_dl(telemetry::kDl, 512, 2);
	for (const char *cmd : {"", "nonsense", "crash", "crash dbc=1", "crash nsp=0 hold=1 reason=seed", "crash dbc=x",
				"crash dbc=0 nsp=0", "ssr release", "ssr hold",
				"ras ue source=soc_mem addr=0x2000 nsp=1", "ras ce source=pcie", "ras ue_nf source=nsp_mem nsp=0",
				"ras ce source=sys_bus1", "ras ue source=sys_bus2", "ras ce source=tsens temp=96000 threshold=critical",
				"ras ce source=tsens temp=-5000 threshold=lower", "ras ce source=gpu", "ras ce", "ras ce source=ddr addr=q",
				"sensor board_temp=50000 ddr_temp=40000 board_power=75000000", "sensor soc_temp=auto",
				"sensor soc_temp=112000", "sensor soc_temp=hot", "sensor fan=1",
				"bootlog hold release=handover ack_delay_ms=10", "bootlog hold release=never", "bootlog normal",
				"timesync hold release=handover", "timesync hold", "timesync normal", "dma-stats dbc=0",
				"dma-stats dbc=99", "idle"})
		s.mailbox(cmd);
	s.read(4, mailbox::kMagic);
	s.read(4, mailbox::kMessage);
}

// The host's SSR client (docs/health.md, "SSR"): every event acknowledged,
// the crash dump's table and the first bytes of each region read, then
// DEBUG_TRANSFER_DONE. False once there was nothing to answer.
bool serve_ssr(Script &s, std::vector<std::pair<uint64_t, uint64_t>> &todo, bool &awaiting_table)
{
	constexpr uint64_t kRead = 0x400;
	auto msg = [](uint32_t cmd, uint32_t dbc, std::initializer_list<uint32_t> body, size_t len) {
		std::vector<uint8_t> m = words({cmd, static_cast<uint32_t>(len), dbc}, len);
		size_t at = sizeof(ssr::Header);
		for (uint32_t w : body) {
			std::memcpy(m.data() + at, &w, 4);
			at += 4;
		}
		return m;
	};
	auto read = [&](uint32_t dbc, uint64_t addr, uint64_t len) {
		auto m = msg(ssr::kMemoryRead, dbc, {0}, sizeof(ssr::Header) + 20);
		std::memcpy(m.data() + 16, &addr, 8);
		std::memcpy(m.data() + 24, &len, 8);
		s.send(ssr::kUl, m);
	};
	bool any = false;
	for (auto p = s.pop(ssr::kDl); !p.empty(); p = s.pop(ssr::kDl), any = true) {
		s.queue_dl(ssr::kDl, 4096, 1);
		const uint32_t cmd = word(p, 0), dbc = word(p, 8);
		if (cmd == ssr::kEvent) {
			s.send(ssr::kUl, msg(ssr::kEventRsp, dbc, {word(p, 12)}, sizeof(ssr::Header) + 4));
		} else if (cmd == ssr::kDebugTransferInfo) {
			s.send(ssr::kUl, msg(ssr::kDebugTransferInfoRsp, dbc, {0}, sizeof(ssr::Header) + 4));
			awaiting_table = true;
			read(dbc, test::dword(p, 16), std::min(test::dword(p, 24), kRead));
		} else if (cmd == ssr::kMemoryReadRsp) {
			const size_t data = sizeof(ssr::Header) + 4;
			if (awaiting_table) {
				awaiting_table = false;
				for (size_t at = data; at + ssr::kTableEntrySize <= p.size(); at += ssr::kTableEntrySize)
					todo.emplace_back(test::dword(p, at + 8), std::min(test::dword(p, at + 16), kRead));
			}
			if (todo.empty()) {
				s.send(ssr::kUl, msg(ssr::kDebugTransferDone, dbc, {0}, sizeof(ssr::Header) + 4));
			} else {
				read(dbc, todo.front().first, todo.front().second);
				todo.erase(todo.begin());
			}
		}
	}
	return any;
}

// A workload crashes (injected): the card's SSR over QAIC_SSR with a host
// that takes the crash dump, then the DBC comes back.
void amss_ssr_dump(Script &s)
{
	s.ready_handshake();
	s.control_up();
	s.start(ssr::kUl);
	s.start(ssr::kDl);
	s.queue_dl(ssr::kDl, 4096, 4);
	const Activated a = load_and_activate(s, tiny_elf(256));
	s.mailbox("crash dbc=" + std::to_string(a.dbc) + " reason=seed");
	std::vector<std::pair<uint64_t, uint64_t>> todo;
	bool awaiting_table = false;
	for (int round = 0; round < 64; round++) {
		if (serve_ssr(s, todo, awaiting_table))
			continue;
		if (!s.timer_armed())
			break;
		s.clock_step();
	}
	if (s.dev().boot().qsm().ssr().busy() || !s.dev().boot().qsm().ssr().host_listens())
		fail("the SSR did not end");
}

// The images the SBL fetches over Sahara: fw1 (qsm) and fw2 (nsp).
std::map<uint32_t, std::vector<uint8_t>> sbl_images()
{
	std::map<uint32_t, std::vector<uint8_t>> files;
	for (uint32_t id : {1u, 2u}) {
		std::vector<uint8_t> p(200 + 40 * id);
		for (size_t i = 0; i < p.size(); i++)
			p[i] = static_cast<uint8_t>(i * 13 + id);
		files[id] = fw::build(id, id == 1 ? "qsm" : "nsp", {1, 0, 0, 2}, p);
	}
	return files;
}

// The host's side of a RAM dump (Sahara memory debug): the table, the
// first bytes of each region it lists, then RESET.
struct DumpReader {
	std::vector<std::pair<uint64_t, uint64_t>> todo; // address, length
	bool awaiting_table = false, awaiting_data = false;

	static std::vector<uint8_t> mem_read(uint64_t addr, uint64_t len)
	{
		auto p = words({sahara::kMemRead64, sahara::kMemRead64Length}, sahara::kMemRead64Length);
		std::memcpy(p.data() + 8, &addr, 8);
		std::memcpy(p.data() + 16, &len, 8);
		return p;
	}
	// True when `p` was the dump's; then `reply` is the host's answer.
	bool take(const std::vector<uint8_t> &p, std::vector<uint8_t> &reply)
	{
		constexpr uint64_t kRead = 0x400; // one DL buffer
		constexpr size_t kEntry = 64;     // type, address, length, two names of 20
		if (word(p, 0) == sahara::kMemDebug64 && p.size() == sahara::kMemDebug64Length) {
			awaiting_table = true;
			reply = mem_read(test::dword(p, 8), std::min(test::dword(p, 16), kRead));
			return true;
		}
		if (awaiting_table) {
			awaiting_table = false;
			for (size_t at = 0; at + kEntry <= p.size(); at += kEntry)
				todo.emplace_back(test::dword(p, at + 8), std::min(test::dword(p, at + 16), kRead));
		} else if (!awaiting_data) {
			return false;
		}
		awaiting_data = !todo.empty();
		if (todo.empty()) {
			reply = words({sahara::kReset, 8}, 8);
			return true;
		}
		reply = mem_read(todo.front().first, todo.front().second);
		todo.erase(todo.begin());
		return true;
	}
};

// The host's side of Sahara and time sync during the SBL; false once
// there was nothing to answer.
bool serve_sbl(Script &s, const std::map<uint32_t, std::vector<uint8_t>> &files, DumpReader *dump = nullptr)
{
	bool any = false;
	for (auto p = s.pop(chan::kTimesyncDl); !p.empty(); p = s.pop(chan::kTimesyncDl), any = true) {
		s.queue_dl(chan::kTimesyncDl, 8, 1);
		if (p.size() != 8 || p[5] != 0)
			continue;
		std::vector<uint8_t> m(24, 0);
		std::memcpy(m.data(), p.data(), 8);
		m[5] = 1;
		const uint64_t sec = 1'700'000'000;
		std::memcpy(m.data() + 8, &sec, 8);
		s.send(chan::kTimesyncUl, m);
	}
	while (!s.pop(chan::kLoggingDl).empty())
		s.queue_dl(chan::kLoggingDl, 512, 1);
	for (auto p = s.pop(chan::kSaharaDl); !p.empty(); p = s.pop(chan::kSaharaDl), any = true) {
		s.queue_dl(chan::kSaharaDl, 0x400, 1);
		const uint32_t cmd = word(p, 0);
		std::vector<uint8_t> reply;
		if (dump && dump->take(p, reply)) {
			s.send(chan::kSaharaUl, reply);
		} else if (cmd == sahara::kHello) {
			s.send(chan::kSaharaUl, words({sahara::kHelloResp, 0x30, 2, 2, 0, word(p, 20)}, 0x30));
		} else if (cmd == sahara::kReadData) {
			const auto &f = files.at(word(p, 8));
			const uint32_t off = word(p, 12), len = word(p, 16);
			if (off + len > f.size())
				fail("Sahara read beyond an image");
			s.send(chan::kSaharaUl, std::vector<uint8_t>(f.begin() + off, f.begin() + off + len));
		} else if (cmd == sahara::kEndOfImage && word(p, 12) == 0) {
			s.send(chan::kSaharaUl, words({sahara::kDone, 8}, 8));
		}
	}
	return any;
}

// The SBL's channels up, then its requests answered until AMSS runs.
void run_sbl(Script &s, DumpReader *dump = nullptr)
{
	const auto files = sbl_images();
	s.ready_handshake();
	for (unsigned ch : {chan::kLoggingUl, chan::kLoggingDl, chan::kTimesyncUl, chan::kTimesyncDl, chan::kSaharaUl,
			    chan::kSaharaDl})
		s.start(ch);
	s.queue_dl(chan::kLoggingDl, 512, 4);
	s.queue_dl(chan::kTimesyncDl, 8, 1);
	s.queue_dl(chan::kSaharaDl, 0x400, 2);
	for (int round = 0; round < 64 && s.dev().mhi().exec_env() != regs::ExecEnv::Amss; round++) {
		// Nothing to answer: the SBL waits for its time.
		if (!serve_sbl(s, files, dump) && s.dev().mhi().exec_env() != regs::ExecEnv::Amss)
			s.clock_step();
	}
	if (s.dev().mhi().exec_env() != regs::ExecEnv::Amss)
		fail("the SBL did not start AMSS");
}

void pbl_full_boot(Script &s)
{
	const std::vector<uint8_t> manifest = words({2, 1, 2}, 12);
	s.bhi_load(fw::build(fw::kSblImageId, "sbl", {1, 0, 0, 1}, manifest));
	run_sbl(s);
}

// AMSS fails (SYS_ERR); the host's MHI reset brings the card back in the
// SBL, which offers the RAM dump of the failure; the host reads it, and
// the SBL fetches the images again.
void pbl_boot_failure_dump(Script &s)
{
	pbl_full_boot(s);
	s.mailbox("syserr");
	s.w32(regs::MHICTRL, regs::MHICTRL_RESET);
	if (!s.dev().boot().dump_pending())
		fail("no RAM dump after SYS_ERR");
	DumpReader dump;
	run_sbl(s, &dump);
	if (s.dev().boot().dump_pending())
		fail("the RAM dump was not taken");
}

std::vector<Seed> seeds()
{
	return {
		{"amss-m0", "MHI READY handshake to M0", 0, amss_m0, in_m0},
		{"amss-loopback", "QAIC_LOOPBACK echoes a message in three TREs", 0, amss_loopback,
		 [](Device &d) { return in_m0(d) && d.mhi().channel_running(chan::kLoopbackDl); }},
		{"amss-nnc", "QAIC_CONTROL up; NNC STATUS, RESOURCE_INFO, PERFORMANCE_INFO, a resource group, TERMINATE",
		 0, amss_nnc, [](Device &d) { return in_m0(d) && d.mhi().channel_running(chan::kControlDl); }},
		{"amss-dbc-bulk", "an ELF loaded and activated, then DMA Bridge bulk requests both ways", 0, amss_dbc_bulk,
		 [](Device &d) { return d.dma_bridge().stats(0).bytes_out == 512; }},
		{"amss-dbc-linked", "a linked-list DMA Bridge request of two descriptors", 0, amss_dbc_linked,
		 [](Device &d) { return d.dma_bridge().stats(0).bytes_in == 384; }},
		{"amss-health-mailbox", "SSR, RAS and telemetry up; crash, RAS, sensor and SYS_ERR through the mailbox",
		 0, amss_health_mailbox, [](Device &d) { return d.mhi().state() == regs::MhiState::Ready; }},
		{"amss-nnc-lifecycle", "constants, ELF, ACTIVATE in standby, state changes, DEACTIVATE, unloads, refusals",
		 0, amss_nnc_lifecycle, [](Device &d) { return in_m0(d) && d.mhi().channel_running(chan::kControlDl); }},
		{"amss-workload-copy", "the copy example workload activated and fed one input", 0,
		 amss_workload_copy, [](Device &d) { return d.dma_bridge().stats(0).bytes_in > 0; }},
		{"amss-ssr-dump", "a workload crash: SSR events, the crash dump read over QAIC_SSR, recovery", 0,
		 amss_ssr_dump, [](Device &d) { return d.boot().qsm().ssr().host_listens() && !d.boot().qsm().ssr().busy(); }},
		{"amss-mailbox-commands", "every fault-injection verb through the mailbox, refusals, then idle (M1)", 0,
		 amss_mailbox_commands, [](Device &d) { return d.mhi().state() == regs::MhiState::M1; }},
		{"pbl-full-boot", "card1: BHI loads sbl.bin, the SBL fetches fw1 and fw2 over Sahara, AMSS", 1,
		 pbl_full_boot, [](Device &d) { return d.mhi().exec_env() == regs::ExecEnv::Amss; }},
		{"pbl-boot-failure-dump", "card1: booted, SYS_ERR, MHI reset, the SBL's RAM dump read, AMSS again", 1,
		 pbl_boot_failure_dump,
		 [](Device &d) { return d.mhi().exec_env() == regs::ExecEnv::Amss && !d.boot().dump_pending(); }},
	};
}

// ---- the model of generic-fuzz ------------------------------------------------------
// Runs `input` on a new card as QEMU would: MMIO to the card's regions,
// DMA reads from the patterns in turn (guest RAM otherwise holds only what
// the card wrote), the clock to the card's deadline.
void replay(const std::vector<uint8_t> &input, unsigned card, Host &host, Device &dev)
{
	std::vector<gfuzz::Command> patterns;
	size_t next_pattern = 0;
	host.serve = [&](size_t len) -> std::vector<uint8_t> {
		if (patterns.empty())
			return {};
		const auto fill = gfuzz::pattern_fill(patterns[next_pattern], std::min(len, gfuzz::kMaxDmaFill));
		next_pattern = (next_pattern + 1) % patterns.size();
		return fill;
	};
	for (const auto &c : gfuzz::split(input)) {
		const uint64_t kicks = host.kicks.load();
		uint8_t size = 0, region = 0;
		uint32_t offset = 0;
		uint64_t value = 0;
		if ((c.op == gfuzz::kWrite && c.len >= 16) || (c.op == gfuzz::kRead && c.len >= 8)) {
			size = c.args[0] % 4;
			region = c.args[1];
			std::memcpy(&offset, c.args + 4, 4);
			if (c.op == gfuzz::kWrite)
				std::memcpy(&value, c.args + 8, 8);
		}
		const unsigned bar = 2 * (region - kFirstRegion[card]);
		const bool ours = region >= kFirstRegion[card] && bar <= 4;
		switch (c.op) {
		case gfuzz::kWrite:
			if (ours)
				dev.bar_write(bar, offset, size == 3 ? value : value & ((uint64_t{1} << (8u << size)) - 1), 1u << size);
			break;
		case gfuzz::kRead:
			if (ours)
				(void)dev.bar_read(bar, offset, 1u << size);
			break;
		case gfuzz::kAddDmaPattern:
			if (c.len >= 3)
				patterns.push_back(c);
			break;
		case gfuzz::kClearDmaPatterns:
			patterns.clear();
			next_pattern = 0;
			break;
		case gfuzz::kClockStep:
			if (host.deadline != HostInterface::kNoDeadline) {
				host.clock_ns = std::max(host.clock_ns, host.deadline);
				host.kicks++;
			}
			break;
		default:
			break;
		}
		run_main_loop(host, dev, kicks);
	}
}

// ---- the dictionary ------------------------------------------------------------------
// Tokens libFuzzer inserts into inputs: the separator, whole commands
// aimed at the card's doorbells and state registers, and the values and
// magic numbers the card looks for in what it reads.
std::string escape(const std::vector<uint8_t> &b)
{
	std::string s;
	char x[5];
	for (uint8_t c : b) {
		std::snprintf(x, sizeof(x), "\\x%02X", c);
		s += x;
	}
	return s;
}

std::string dictionary()
{
	std::vector<std::pair<std::string, std::vector<uint8_t>>> t;
	t.emplace_back("separator", std::vector<uint8_t>(gfuzz::kSeparator.begin(), gfuzz::kSeparator.end()));
	auto cmd = [&](const std::string &name, uint8_t region, uint32_t off, uint64_t v) {
		gfuzz::Writer w;
		w.write(region, off, v, gfuzz::kLong);
		t.emplace_back(name, w.bytes());
	};
	for (unsigned card = 0; card < kCards; card++) {
		const std::string c = "card" + std::to_string(card) + "_";
		const uint8_t mhi = region_of(card, 0), dbc = region_of(card, 2), mbox = region_of(card, 4);
		cmd(c + "m0", mhi, regs::MHICTRL, 2u << regs::kStateShift);
		cmd(c + "mhi_reset", mhi, regs::MHICTRL, regs::MHICTRL_RESET);
		cmd(c + "soc_reset", mhi, regs::MHI_SOC_RESET_REQ, 1);
		cmd(c + "crdb", mhi, regs::CRDB_LOWER, kCmdRing + 16);
		cmd(c + "erdb", mhi, regs::kErdbBase, kEventRing + (kEventElements - 1) * 16);
		for (unsigned ch : {chan::kLoopbackUl, chan::kControlUl, chan::kSaharaUl})
			cmd(c + "chdb" + std::to_string(ch), mhi, regs::kChdbBase + 8 * ch, kChanRings + ch * kChanElements * 16 + 16);
		cmd(c + "bhi_txdb", mhi, regs::kBhiBase + regs::BHI_IMGTXDB, 1);
		cmd(c + "dbc0_reqtp", dbc, regs::kDbcBase + regs::DBC_REQTP, 1);
		cmd(c + "dbc0_rsphp", dbc, regs::kDbcBase + regs::DBC_RSPHP, 1);
		cmd(c + "mailbox_run", mbox, mailbox::kLength, 6);
	}
	auto u32 = [&](const std::string &name, uint32_t v) { t.emplace_back(name, raw(v)); };
	auto u64 = [&](const std::string &name, uint64_t v) { t.emplace_back(name, raw(v)); };
	u32("nnc_magic", nnc::kMagic);
	u32("mailbox_magic", mailbox::kMagicValue);
	u64("chan_ctx", kChanCtx);
	u64("event_ring", kEventRing);
	u64("cmd_ring", kCmdRing);
	u64("dbc_fifo", kFifo);
	u32("tre", (uint32_t{static_cast<uint8_t>(mhi::ElementType::Transfer)} << 16) | mhi::kTreIeot);
	u32("start_chan", uint32_t{static_cast<uint8_t>(mhi::ElementType::StartChannel)} << 16);
	u32("reset_chan", uint32_t{static_cast<uint8_t>(mhi::ElementType::ResetChannel)} << 16);
	u32("stop_chan", uint32_t{static_cast<uint8_t>(mhi::ElementType::StopChannel)} << 16);
	t.emplace_back("elf", std::vector<uint8_t>{0x7F, 'E', 'L', 'F', 2, 1, 1});
	for (uint32_t type : {nnc::kPassthroughToDev, nnc::kDmaXferToDev, nnc::kActivateToDev, nnc::kStatusToDev,
			      nnc::kTerminateToDev, nnc::kDmaXferCont, nnc::kValidatePartitionToDev})
		u32("nnc_trans_" + std::to_string(type), type);
	for (uint32_t type = nnc::cmd::kLoadConstants; type <= nnc::cmd::kUpdateAcRes; type += 1)
		u32("nnc_cmd_" + std::to_string(type), type);
	for (uint32_t cmd : {sahara::kHelloResp, sahara::kDone})
		u32("sahara_" + std::to_string(cmd), cmd);
	std::string out = "# generic-fuzz on the aic100 card: written by make-qemu-seeds "
			  "(tests/fuzz/qemu/make_seeds.cc); do not edit.\n";
	for (const auto &[name, bytes] : t)
		out += name + "=\"" + escape(bytes) + "\"\n";
	return out;
}

std::vector<uint8_t> read_file(const std::filesystem::path &p)
{
	std::ifstream in(p, std::ios::binary);
	return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes `bytes` to `file`, or (check) counts a difference.
int put_file(bool check, const std::filesystem::path &file, const std::vector<uint8_t> &bytes)
{
	if (check) {
		if (read_file(file) == bytes)
			return 0;
		std::fprintf(stderr, "make-qemu-seeds: %s differs from what the generator makes now: "
				     "run 'make qemu-fuzz-seeds' and commit the result\n", file.c_str());
		return 1;
	}
	std::filesystem::create_directories(file.parent_path());
	std::ofstream out(file, std::ios::binary | std::ios::trunc);
	out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	namespace fs = std::filesystem;
	if (argc != 3 || (std::strcmp(argv[1], "--out") != 0 && std::strcmp(argv[1], "--check") != 0)) {
		std::fprintf(stderr, "usage: %s --out DIR | --check DIR\n", argv[0]);
		return 2;
	}
	const bool check = std::strcmp(argv[1], "--check") == 0;
	const fs::path dir(argv[2]);
	int bad = 0;
	std::set<std::string> names;
	// As generic-fuzz runs a corpus: one machine for all inputs, reset
	// (not rebuilt) before each, its RAM kept.
	struct Machine {
		Host host;
		std::unique_ptr<Device> dev;
	};
	Machine machine[kCards];
	for (unsigned card = 0; card < kCards; card++)
		machine[card].dev = std::make_unique<Device>(machine[card].host, card_config(card));
	for (const Seed &seed : seeds()) {
		names.insert(seed.name);
		Script s(seed.card);
		seed.script(s);
		const std::vector<uint8_t> input = s.bytes();
		Machine &m = machine[seed.card];
		m.dev->reset();
		replay(input, seed.card, m.host, *m.dev);
		if (!seed.reached(*m.dev)) {
			std::fprintf(stderr, "make-qemu-seeds: %s: replayed as generic-fuzz runs it, after the seeds before it, "
					     "it does not reach: %s\n", seed.name.c_str(), seed.what.c_str());
			bad++;
		}
		bad += put_file(check, dir / "seeds" / seed.name, input);
		if (!check)
			std::printf("%s: %zu bytes: %s\n", seed.name.c_str(), input.size(), seed.what.c_str());
	}
	const std::string dict = dictionary();
	bad += put_file(check, dir / "aic100.dict", std::vector<uint8_t>(dict.begin(), dict.end()));
	if (check && fs::is_directory(dir / "seeds")) {
		for (const auto &e : fs::directory_iterator(dir / "seeds")) {
			if (!names.count(e.path().filename().string())) {
				std::fprintf(stderr, "make-qemu-seeds: %s is no seed the generator makes\n", e.path().c_str());
				bad++;
			}
		}
	}
	return bad ? 1 : 0;
}
