// SPDX-License-Identifier: GPL-2.0-or-later
// Writes the device-core fuzzer's seed corpus (tests/fuzz/core/seeds/):
// inputs that take the card somewhere worth mutating from. Each seed is
// made by driving a live Device through the fuzz harness as a host would,
// reading the card's answers back from the fake host memory, and recording
// every operation in the input format; the generator then replays the
// recorded input on a new Device and checks that it gets as far. A change
// of the input format or of the card is caught here (ctest fuzz-seeds)
// rather than leaving a corpus that no longer reaches anything.
//
//   make-seeds --out DIR      write the seeds
//   make-seeds --check DIR    fail unless DIR holds exactly these seeds
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aic100/firmware.h"
#include "aic100/mhi_wire.h"
#include "aic100/nnc.h"
#include "aic100/ras_wire.h"
#include "aic100/sahara.h"
#include "aic100/sbl.h"
#include "aic100/ssr_wire.h"
#include "aic100/telemetry_wire.h"
#include "harness.h"
#include "packet_bytes.h"
#include "workloads.h"

namespace {

using namespace aic100;
using namespace aic100::fuzz;

template <typename T> std::vector<uint8_t> raw(const T &v)
{
	std::vector<uint8_t> b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}
using aic100::test::word;
using aic100::test::words;

[[noreturn]] void fail(const std::string &why)
{
	std::fprintf(stderr, "make-seeds: %s\n", why.c_str());
	std::exit(1);
}

// Host memory layout of the scripted host (kMemSize = 1 MiB at 0).
constexpr uint32_t kChanCtx = 0x1000;   // 128 channel contexts
constexpr uint32_t kEventCtx = 0x3000;
constexpr uint32_t kCmdCtx = 0x3100;
constexpr uint32_t kEventRing = 0x4000; // kEventElements
constexpr uint32_t kCmdRing = 0x5000;   // kCmdElements
constexpr uint32_t kChanRings = 0x6000; // 0x200 per channel: 32 elements
constexpr uint32_t kDlBufs = 0x20000, kDlBufsEnd = 0x40000;
constexpr uint32_t kScratch = 0x40000, kScratchEnd = 0xC0000; // UL data, NNC DMA
constexpr uint32_t kDbcArea = 0xC0000;  // DBC FIFOs and data
constexpr unsigned kEventElements = 128, kCmdElements = 64, kChanElements = 32;

// A host driving the card through the harness and recording what it does.
class Script {
public:
	explicit Script(uint8_t config) : w_(config), h_(std::make_unique<Harness>(config)) {}

	const std::vector<uint8_t> &bytes() const { return w_.bytes(); }
	Writer &w() { return w_; }
	Harness &h() { return *h_; }
	Device &dev() { return h_->device(); }

	// Records one or more operations through `f` and runs them.
	void op(const std::function<void(Writer &)> &f)
	{
		const size_t before = w_.bytes().size();
		f(w_);
		Reader r(w_.bytes().data() + before, w_.bytes().size() - before);
		while (h_->step(r)) {
		}
	}
	void put(uint32_t addr, const void *p, size_t n)
	{
		op([&](Writer &w) { w.mem(addr, p, n); });
	}
	void put(uint32_t addr, const std::vector<uint8_t> &v) { put(addr, v.data(), v.size()); }
	template <typename T> T get(uint64_t addr)
	{
		T t{};
		if (addr + sizeof(T) <= kMemSize)
			std::memcpy(&t, h_->host().mem.data() + addr, sizeof(T));
		return t;
	}
	std::vector<uint8_t> get(uint64_t addr, size_t n)
	{
		if (addr > kMemSize || n > kMemSize - addr)
			return {};
		return std::vector<uint8_t>(h_->host().mem.begin() + long(addr), h_->host().mem.begin() + long(addr + n));
	}
	void w32(uint16_t off, uint32_t v)
	{
		op([&](Writer &w) { w.write32(off, v); });
	}
	void settle()
	{
		op([](Writer &w) { w.settle(); });
		drain();
	}
	void clock_us(uint32_t us)
	{
		op([&](Writer &w) { w.clock_us(us); });
		drain();
	}

	// ---- MHI, as the Linux host stack drives it ---------------------------
	void bhi_load(const std::vector<uint8_t> &image)
	{
		const uint32_t at = kScratch;
		put(at, image);
		w32(regs::kBhiBase + regs::BHI_STATUS, 0);
		w32(regs::kBhiBase + regs::BHI_IMGADDR_HIGH, 0);
		w32(regs::kBhiBase + regs::BHI_IMGADDR_LOW, at);
		w32(regs::kBhiBase + regs::BHI_IMGSIZE, static_cast<uint32_t>(image.size()));
		w32(regs::kBhiBase + regs::BHI_IMGTXDB, 1);
		settle();
		if ((dev().bar_read(0, regs::kBhiBase + regs::BHI_STATUS, 4) >> 30) != 2)
			fail("BHI refused the SBL image");
	}

	void ready_handshake()
	{
		// The channel contexts are zero (host memory starts so), and
		// start() fills in each one before it starts the channel.
		mhi::EventContext ec{};
		ec.ertype = 1;
		ec.rbase = kEventRing;
		ec.rlen = kEventElements * 16;
		ec.rp = ec.wp = kEventRing;
		put(kEventCtx, &ec, sizeof(ec));
		mhi::CommandContext cc{};
		cc.rbase = kCmdRing;
		cc.rlen = kCmdElements * 16;
		cc.rp = cc.wp = kCmdRing;
		put(kCmdCtx, &cc, sizeof(cc));
		ev_rp_ = kEventRing;
		cmd_wp_ = kCmdRing;
		chans_.clear();
		set64(regs::CCABAP_LOWER, kChanCtx);
		set64(regs::ECABAP_LOWER, kEventCtx);
		set64(regs::CRCBAP_LOWER, kCmdCtx);
		w32(regs::MHICFG, (1u << 16) | 128);
		// Every slot but one is the card's to fill.
		ev_wp_ = kEventRing + (kEventElements - 1) * 16;
		credit();
		w32(regs::MHICTRL, 2u << 8); // M0
		settle();
		if (dev().mhi().state() != regs::MhiState::M0)
			fail("MHI did not reach M0");
	}

	bool start(unsigned ch)
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
		const mhi::RingElement e{0, 0, (uint32_t{ch} << 24) | (uint32_t{0x12} << 16)};
		put(static_cast<uint32_t>(at), &e, sizeof(e));
		cmd_wp_ = cmd_wp_ + 16 == kCmdRing + kCmdElements * 16 ? kCmdRing : cmd_wp_ + 16;
		op([&](Writer &w) { w.doorbell(Writer::kCommandRing, 0, cmd_wp_); });
		settle();
		return cmd_done_.count(at) && cmd_done_[at] == 1;
	}

	// `n` receive buffers of `len` bytes on DL channel `ch`.
	void queue_dl(unsigned ch, uint32_t len, unsigned n = 1)
	{
		Chan &c = chans_.at(ch);
		for (unsigned i = 0; i < n; i++) {
			const uint32_t buf = dl_next_;
			dl_next_ += (len + 63) & ~63u;
			if (dl_next_ > kDlBufsEnd)
				fail("out of DL buffer space");
			add_tre(c, buf, len, mhi::kTreIeot);
		}
		ring_channel(ch, c.wp);
		settle();
	}

	// One TD on UL channel `ch`, in pieces of at most 0xFFFF bytes.
	void send(unsigned ch, const std::vector<uint8_t> &msg, size_t piece = 0xFFFF)
	{
		Chan &c = chans_.at(ch);
		for (size_t off = 0; off < msg.size() || off == 0; off += piece) {
			const size_t n = std::min(piece, msg.size() - off);
			const uint32_t buf = scratch(n);
			put(buf, msg.data() + off, n);
			const bool last = off + n >= msg.size();
			add_tre(c, buf, static_cast<uint32_t>(n), last ? mhi::kTreIeot : mhi::kTreChain);
			if (last)
				break;
		}
		ring_channel(ch, c.wp);
		settle();
	}

	std::vector<uint8_t> pop(unsigned ch)
	{
		auto &q = rx_[ch];
		if (q.empty())
			return {};
		auto v = std::move(q.front());
		q.pop_front();
		return v;
	}

	// Space for data the card reads (wraps; seeds are short).
	uint32_t scratch(size_t n)
	{
		const uint32_t len = static_cast<uint32_t>((n + 63) & ~size_t{63});
		if (scratch_ + len > kScratchEnd)
			scratch_ = kScratch;
		const uint32_t a = scratch_;
		scratch_ += len;
		return a;
	}

	// ---- NNC on QAIC_CONTROL ---------------------------------------------------
	struct Trans {
		std::vector<uint8_t> data; // whole transaction, header included
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
		const uint32_t addr = scratch(data.size());
		put(addr, data);
		Trans t{raw(nnc::DmaXferToDev{{nnc::kDmaXferToDev, 24 + 16}, tag, 1, 0, 0})};
		auto p = raw(nnc::DmaPair{addr, data.size()});
		t.data.insert(t.data.end(), p.begin(), p.end());
		return t;
	}
	// One message on channel 10; the reply's first passthrough payload.
	std::vector<uint8_t> nnc(const std::vector<Trans> &ts, uint32_t handle = 5)
	{
		std::vector<uint8_t> body;
		for (const auto &t : ts)
			body.insert(body.end(), t.data.begin(), t.data.end());
		nnc::Header hd{0, nnc::kMagic, seq_++, static_cast<uint32_t>(32 + body.size()),
			       static_cast<uint32_t>(ts.size()), handle, 0xFFFFFFFF, 0};
		std::vector<uint8_t> m = raw(hd);
		m.insert(m.end(), body.begin(), body.end());
		send(chan::kControlUl, m, 4096);
		const auto reply = pop(chan::kControlDl);
		if (reply.size() < 32 + 8)
			return {};
		const uint32_t len = word(reply, 36);
		if (word(reply, 32) != nnc::kPassthroughFromDev || len < 8 || 32 + len > reply.size())
			return {};
		return std::vector<uint8_t>(reply.begin() + 40, reply.begin() + 32 + len);
	}
	void control_up()
	{
		if (!start(chan::kControlUl) || !start(chan::kControlDl))
			fail("QAIC_CONTROL did not start");
		queue_dl(chan::kControlDl, 4096, 4);
		// The driver's STATUS exchange when the channel comes up.
		nnc::Header hd{0, nnc::kMagic, seq_++, 40, 1, 0, 0xFFFFFFFF, 0};
		auto m = raw(hd);
		const auto st = words({nnc::kStatusToDev, 8}, 8);
		m.insert(m.end(), st.begin(), st.end());
		send(chan::kControlUl, m);
		if (pop(chan::kControlDl).size() != 32 + sizeof(nnc::StatusFromDev))
			fail("no STATUS answer");
	}

private:
	struct Chan {
		uint64_t base = 0, wp = 0;
		std::map<uint64_t, std::pair<uint32_t, uint32_t>> bufs; // TRE -> buffer, length
	};
	void set64(uint32_t lower, uint64_t v)
	{
		w32(static_cast<uint16_t>(lower + 4), static_cast<uint32_t>(v >> 32));
		w32(static_cast<uint16_t>(lower), static_cast<uint32_t>(v));
	}
	void credit()
	{
		put(kEventCtx + mhi::kCtxWpOffset, &ev_wp_, 8);
		op([&](Writer &w) { w.doorbell(Writer::kEventRing, 0, ev_wp_); });
	}
	static uint64_t next(uint64_t p, uint64_t base, unsigned n) { return p + 16 == base + n * 16 ? base : p + 16; }
	// As Linux's mhi_ring_chan_db(): the context's wp, then the doorbell.
	void ring_channel(unsigned ch, uint64_t wp)
	{
		put(kChanCtx + ch * sizeof(mhi::ChannelContext) + mhi::kCtxWpOffset, &wp, sizeof(wp));
		op([&](Writer &w) { w.doorbell(Writer::kChannel, static_cast<uint8_t>(ch), wp); });
	}
	void add_tre(Chan &c, uint32_t buf, uint32_t len, uint32_t flags)
	{
		const mhi::RingElement e{buf, len, (uint32_t{0x02} << 16) | flags};
		put(static_cast<uint32_t>(c.wp), &e, sizeof(e));
		c.bufs[c.wp] = {buf, len};
		c.wp = next(c.wp, c.base, kChanElements);
	}
	// Takes every event the card wrote and hands the slots back.
	void drain()
	{
		for (int round = 0; round < 16; round++) {
			const uint64_t dev_rp = get<uint64_t>(kEventCtx + mhi::kCtxRpOffset);
			if (dev_rp == ev_rp_ || dev_rp < kEventRing || dev_rp >= kEventRing + kEventElements * 16)
				return;
			unsigned n = 0;
			std::vector<std::pair<unsigned, uint64_t>> requeue;
			while (ev_rp_ != dev_rp) {
				const auto e = get<mhi::RingElement>(ev_rp_);
				handle(e, requeue);
				ev_rp_ = next(ev_rp_, kEventRing, kEventElements);
				n++;
			}
			for (unsigned i = 0; i < n; i++)
				ev_wp_ = next(ev_wp_, kEventRing, kEventElements);
			credit();
			// DL buffers go back to the card, as the driver requeues them.
			for (const auto &[ch, tre] : requeue) {
				Chan &c = chans_[ch];
				const auto [buf, len] = c.bufs[tre];
				c.bufs.erase(tre);
				add_tre(c, buf, len, mhi::kTreIeot);
				ring_channel(ch, c.wp);
			}
			op([](Writer &w) { w.settle(); });
		}
	}
	void handle(const mhi::RingElement &e, std::vector<std::pair<unsigned, uint64_t>> &requeue)
	{
		const auto type = mhi::element_type(e);
		const uint8_t code = e.dword0 >> 24;
		if (type == mhi::ElementType::CommandCompletionEvent) {
			cmd_done_[e.ptr] = code;
			return;
		}
		if (type != mhi::ElementType::TransferEvent)
			return;
		const unsigned ch = e.dword1 >> 24;
		if (!(ch & 1) || !chans_.count(ch))
			return;
		Chan &c = chans_[ch];
		auto it = c.bufs.find(e.ptr);
		if (it == c.bufs.end())
			return;
		const uint32_t n = std::min<uint32_t>(e.dword0 & 0xFFFF, it->second.second);
		rx_[ch].push_back(get(it->second.first, n));
		requeue.emplace_back(ch, e.ptr);
	}

	Writer w_;
	std::unique_ptr<Harness> h_;
	uint64_t ev_rp_ = 0, ev_wp_ = 0, cmd_wp_ = 0;
	uint32_t dl_next_ = kDlBufs, scratch_ = kScratch, seq_ = 1;
	std::map<unsigned, Chan> chans_;
	std::map<uint64_t, uint8_t> cmd_done_;
	std::map<unsigned, std::deque<std::vector<uint8_t>>> rx_;
};

// ---- DMA Bridge requests (docs/dma-bridge.md) -----------------------------------
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
constexpr unsigned kInc = 2, kDec = 3, kWaitEq = 4, kWaitGt0 = 6;
constexpr uint32_t kFifoN = 16;
constexpr uint32_t kFifo = kDbcArea, kFifoBuf = (68 * kFifoN + 4095) & ~4095u;
constexpr uint32_t kData = kDbcArea + 0x10000;

// An ELF64 header with no sections: an image the card activates without a
// program (docs/qsm.md).
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
	uint32_t act_id;
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
	return {aresp.virtual_channel_id, aresp.ddr_base, aresp.activation_id};
}

void put_request(Script &s, unsigned slot, const Request &r)
{
	s.put(kFifo + slot * 64, &r, sizeof(r));
}

// ---- the seeds -----------------------------------------------------------------
struct Seed {
	std::string name;
	std::string what;
	uint8_t config;
	std::function<void(Script &)> script;
	// Checked after the recorded input ran again on a new Device.
	std::function<bool(Harness &)> reached;
};

bool in_m0(Harness &h)
{
	return h.device().mhi().state() == regs::MhiState::M0;
}

void amss_m0(Script &s)
{
	s.ready_handshake();
	s.op([](Writer &w) {
		w.read(0, 4, regs::MHISTATUS);
		w.read(0, 8, regs::QTIMER_LO);
		w.read(0, 4, regs::kBhiBase + regs::BHI_EXECENV);
	});
}

void amss_loopback(Script &s)
{
	s.ready_handshake();
	if (!s.start(chan::kLoopbackUl) || !s.start(chan::kLoopbackDl))
		fail("loopback channels");
	s.queue_dl(chan::kLoopbackDl, 64, 2);
	const std::string text = "hello, card: echo this";
	s.send(chan::kLoopbackUl, std::vector<uint8_t>(text.begin(), text.end()), 8);
	const auto back = s.pop(chan::kLoopbackDl);
	if (std::string(back.begin(), back.end()) != text)
		fail("loopback did not echo");
}

void amss_nnc_status(Script &s)
{
	s.ready_handshake();
	s.control_up();
	using namespace nnc::cmd;
	const auto r = s.nnc({Script::passthrough(raw(ResourceInfoReq{kResourceInfo, 0, -1, 0}))});
	if (r.size() < 8 || word(r, 0) != kResourceInfoResp)
		fail("RESOURCE_INFO");
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
	in.sem[0] = sem(kInc, 0, 1, false);
	Request out{};
	out.req_id = 2;
	out.cmd = 0x80 | 0x10 | 0x08 | 2; // force MSI, response, bulk, to the host
	out.src = a.ddr_base;
	out.dest = kData + 0x1000;
	out.len = 512;
	out.sem[0] = sem(kWaitGt0, 0, 0, true);
	out.sem[1] = sem(kDec, 0, 1, false);
	out.db_addr = a.ddr_base + 0x800;
	out.db_len = 0x80; // doorbell, 4 bytes
	out.db_data = 0xD00DFEED;
	put_request(s, 0, in);
	put_request(s, 1, out);
	s.op([&](Writer &w) { w.dbc(static_cast<uint8_t>(a.dbc), 1, 2); });
	s.settle();
	if (s.get(kData + 0x1000, 512) != data)
		fail("bulk requests did not move the data");
	s.op([&](Writer &w) {
		w.dbc(static_cast<uint8_t>(a.dbc), 2, 2); // responses read
		w.read(2, 4, regs::kDbcBase + a.dbc * regs::kDbcStride + regs::DBC_RSPTP);
	});
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
	const Desc d[2] = {{kData + 0x2000, a.ddr_base, 256, 0, kData + 32},
				{kData + 0x3000, a.ddr_base + 4096, 128, 0, 0}};
	s.put(kData, d, sizeof(d));
	Request r{};
	r.req_id = 9;
	r.cmd = 0x10 | 1; // response, linked list, to the device
	r.src = kData;
	r.len = 2; // descriptors at most
	put_request(s, 0, r);
	s.op([&](Writer &w) { w.dbc(static_cast<uint8_t>(a.dbc), 1, 1); });
	s.settle();
}

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
	in.cmd = 0x08 | 1;
	in.src = kData;
	in.dest = a.ddr_base + L.input.offset;
	in.len = static_cast<uint32_t>(L.input.size);
	in.sem[0] = sem(kWaitEq, L.sem_in, 0, true);
	in.sem[1] = sem(kInc, L.sem_in, 1, false);
	Request out{};
	out.req_id = 1;
	out.cmd = 0x10 | 0x08 | 2;
	out.src = a.ddr_base + L.output.offset;
	out.dest = kData + 0x2000;
	out.len = static_cast<uint32_t>(L.output.size);
	out.sem[0] = sem(kWaitGt0, L.sem_out, 0, true);
	out.sem[1] = sem(kDec, L.sem_out, 1, false);
	put_request(s, 0, in);
	put_request(s, 1, out);
	s.op([&](Writer &w) { w.dbc(static_cast<uint8_t>(a.dbc), 1, 2); });
	s.settle();
}

void amss_health_mailbox(Script &s)
{
	s.ready_handshake();
	s.control_up();
	for (unsigned ch : {ssr::kUl, ssr::kDl, ras::kUl, ras::kDl, telemetry::kUl, telemetry::kDl})
		if (!s.start(ch))
			fail("health channel " + std::to_string(ch));
	s.queue_dl(ssr::kDl, 4096, 4);
	s.queue_dl(ras::kDl, 512, 4);
	s.queue_dl(telemetry::kDl, 512, 4);
	load_and_activate(s, tiny_elf(256));
	s.op([](Writer &w) {
		w.mailbox("crash dbc=0 reason=seed");
		w.settle();
		w.mailbox("ras ce source=ddr addr=0x1000");
		w.settle();
		w.mailbox("sensor soc_temp=97000");
		w.settle();
		w.read(4, 4, 0x104);
		w.inject("ras ue_nf source=tsens temp=99000 threshold=upper");
		w.clock_us(1000000);
	});
	s.settle();
	s.op([](Writer &w) {
		w.mailbox("syserr");
		w.settle();
		w.write32(regs::MHICTRL, regs::MHICTRL_RESET);
		w.settle();
	});
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

// The host's side of time sync: every request answered with a time.
void answer_timesync(Script &s)
{
	for (auto p = s.pop(chan::kTimesyncDl); !p.empty(); p = s.pop(chan::kTimesyncDl)) {
		if (p.size() != 8 || p[5] != 0)
			continue;
		std::vector<uint8_t> m(24, 0);
		std::memcpy(m.data(), p.data(), 8);
		m[5] = 1;
		const uint64_t sec = 1'700'000'000;
		std::memcpy(m.data() + 8, &sec, 8);
		s.send(chan::kTimesyncUl, m);
	}
}

// The host's side of Sahara: hello, the images' bytes, done.
void serve_sahara(Script &s, const std::map<uint32_t, std::vector<uint8_t>> &files)
{
	for (auto p = s.pop(chan::kSaharaDl); !p.empty(); p = s.pop(chan::kSaharaDl)) {
		const uint32_t cmd = word(p, 0);
		if (cmd == sahara::kHello) {
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
}

void pbl_full_boot(Script &s)
{
	const std::vector<uint8_t> manifest = words({2, 1, 2}, 12);
	s.bhi_load(fw::build(fw::kSblImageId, "sbl", {1, 0, 0, 1}, manifest));
	const auto files = sbl_images();
	s.ready_handshake();
	for (unsigned ch : {chan::kLoggingUl, chan::kLoggingDl, chan::kTimesyncUl, chan::kTimesyncDl, chan::kSaharaUl,
			    chan::kSaharaDl})
		if (!s.start(ch))
			fail("SBL channel " + std::to_string(ch));
	s.queue_dl(chan::kLoggingDl, 512, 16);
	s.queue_dl(chan::kTimesyncDl, 8);
	s.queue_dl(chan::kSaharaDl, 0x400, 2);
	for (int round = 0; round < 64 && s.dev().mhi().exec_env() != regs::ExecEnv::Amss; round++) {
		answer_timesync(s);
		while (!s.pop(chan::kLoggingDl).empty()) {
		}
		serve_sahara(s, files);
		s.settle();
	}
	if (s.dev().mhi().exec_env() != regs::ExecEnv::Amss)
		fail("the full boot did not reach AMSS");
}

std::vector<Seed> seeds()
{
	return {
		{"amss-m0", "MHI READY handshake to M0 (AMSS)", kCfgAmss, amss_m0, in_m0},
		{"amss-loopback", "QAIC_LOOPBACK echoes a message in two TREs", kCfgAmss, amss_loopback,
		 [](Harness &h) { return in_m0(h) && h.device().mhi().channel_running(chan::kLoopbackDl); }},
		{"amss-nnc-status", "QAIC_CONTROL up, NNC STATUS and RESOURCE_INFO (CRC on)", kCfgAmss | kCfgCrc,
		 amss_nnc_status,
		 [](Harness &h) { return in_m0(h) && h.device().mhi().channel_running(chan::kControlDl); }},
		{"amss-dbc-bulk", "an ELF loaded and activated, then DMA Bridge bulk requests both ways",
		 kCfgAmss | kCfgTwoNsps, amss_dbc_bulk,
		 [](Harness &h) { return h.device().dma_bridge().stats(0).bytes_out == 512; }},
		{"amss-dbc-linked", "a linked-list DMA Bridge request of two descriptors", kCfgAmss, amss_dbc_linked,
		 [](Harness &h) { return h.device().dma_bridge().stats(0).bytes_in == 384; }},
		{"amss-workload-copy", "the copy example workload activated and fed one input", kCfgAmss,
		 amss_workload_copy,
		 [](Harness &h) {
			 const auto info = h.device().boot().qsm().activation_on(0);
			 return info && info->running;
		 }},
		{"amss-health-mailbox",
		 "SSR, RAS and telemetry channels up; crash, RAS, sensor and SYS_ERR through the test mailbox", kCfgAmss,
		 amss_health_mailbox, [](Harness &h) { return h.device().mhi().state() == regs::MhiState::Ready; }},
		{"pbl-full-boot", "PBL takes sbl.bin over BHI, the SBL fetches fw1 and fw2 over Sahara, AMSS", 0,
		 pbl_full_boot, [](Harness &h) { return h.device().mhi().exec_env() == regs::ExecEnv::Amss; }},
	};
}

std::vector<uint8_t> read_file(const std::filesystem::path &p)
{
	std::ifstream in(p, std::ios::binary);
	return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
	std::vector<std::string> names;
	for (const Seed &seed : seeds()) {
		names.push_back(seed.name);
		Script s(seed.config);
		seed.script(s);
		const std::vector<uint8_t> input = s.bytes();
		// The recorded input alone, on a new card, must get as far.
		{
			Harness h(input[0]);
			Reader in(input.data() + 1, input.size() - 1);
			h.run(in);
			if (!seed.reached(h)) {
				std::fprintf(stderr, "make-seeds: %s: the recorded input does not reach: %s\n",
					     seed.name.c_str(), seed.what.c_str());
				bad++;
			}
		}
		const fs::path file = dir / seed.name;
		if (check) {
			if (read_file(file) != input) {
				std::fprintf(stderr, "make-seeds: %s differs from what the generator makes now: "
						     "run 'make fuzz-seeds' and commit the result\n",
					     file.c_str());
				bad++;
			}
			continue;
		}
		fs::create_directories(dir);
		std::ofstream out(file, std::ios::binary | std::ios::trunc);
		out.write(reinterpret_cast<const char *>(input.data()), static_cast<std::streamsize>(input.size()));
		std::printf("%s: %zu bytes: %s\n", file.c_str(), input.size(), seed.what.c_str());
	}
	if (check) {
		for (const auto &e : fs::directory_iterator(dir)) {
			if (std::find(names.begin(), names.end(), e.path().filename().string()) == names.end()) {
				std::fprintf(stderr, "make-seeds: %s is no seed the generator makes\n", e.path().c_str());
				bad++;
			}
		}
	}
	return bad ? 1 : 0;
}
