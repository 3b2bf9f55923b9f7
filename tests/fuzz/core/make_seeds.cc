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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aic100/mhi_wire.h"
#include "aic100/sahara.h"
#include "harness.h"
#include "host_rings.h"
#include "seed_files.h"
#include "seed_steps.h"

namespace aic100::seed_steps {
void fail(const std::string &why)
{
	std::fprintf(stderr, "make-seeds: %s\n", why.c_str());
	std::exit(1);
}
} // namespace aic100::seed_steps

namespace {

using namespace aic100;
using namespace aic100::fuzz;
using namespace aic100::seed_steps;

// Host memory layout of the scripted host (kMemSize = 1 MiB at 0).
constexpr uint32_t kEventCtx = 0x3000;
constexpr uint32_t kEventRing = 0x4000;
constexpr unsigned kEventElements = 128;
constexpr uint32_t kScratch = 0x40000;
constexpr uint32_t kDbcArea = 0xC0000; // DBC FIFOs and data
constexpr RingLayout kRings{
	.chan_ctx = 0x1000, // 128 channel contexts
	.event_ctx = kEventCtx,
	.cmd_ctx = 0x3100,
	.event_ring = kEventRing,
	.cmd_ring = 0x5000,
	.chan_rings = 0x6000, // 0x200 per channel: 32 elements
	.dl_bufs = 0x20000,
	.dl_bufs_end = 0x40000,
	.scratch = kScratch, // UL data, NNC DMA
	.scratch_end = 0xC0000,
	.event_elements = kEventElements,
	.cmd_elements = 64,
	.chan_elements = 32,
	.scratch_wraps = true, // seeds are short
	.give_back_dl_bufs = true,
};

// A host driving the card through the harness and recording what it does.
class Script final : private HostRings::Bus {
public:
	static constexpr uint32_t kFifo = kDbcArea, kData = kDbcArea + 0x10000;

	explicit Script(uint8_t config) : w_(config), h_(std::make_unique<Harness>(config)), rings_(kRings, *this) {}

	const std::vector<uint8_t> &bytes() const { return w_.bytes(); }
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
	void put(uint64_t addr, const void *p, size_t n) override
	{
		op([&](Writer &w) { w.mem(static_cast<uint32_t>(addr), p, n); });
	}
	void put(uint64_t addr, const std::vector<uint8_t> &v) { put(addr, v.data(), v.size()); }
	std::vector<uint8_t> get(uint64_t addr, size_t n) override
	{
		if (addr > kMemSize || n > kMemSize - addr)
			return {};
		return std::vector<uint8_t>(h_->host().mem.begin() + long(addr), h_->host().mem.begin() + long(addr + n));
	}
	void w32(uint16_t off, uint32_t v)
	{
		op([&](Writer &w) { w.write32(off, v); });
	}
	void dbc_write(unsigned dbc, uint32_t reg, uint32_t v)
	{
		op([&](Writer &w) { w.dbc(static_cast<uint8_t>(dbc), static_cast<uint8_t>(reg / 4), v); });
	}
	void dbc_read(unsigned dbc, uint32_t reg)
	{
		op([&](Writer &w) { w.read(2, 4, regs::kDbcBase + dbc * regs::kDbcStride + reg); });
	}
	void settle()
	{
		op([](Writer &w) { w.settle(); });
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
		const auto ec = rings_.event_context();
		put(kEventCtx, &ec, sizeof(ec));
		const auto cc = rings_.command_context();
		put(kRings.cmd_ctx, &cc, sizeof(cc));
		rings_.reset();
		set64(regs::CCABAP_LOWER, kRings.chan_ctx);
		set64(regs::ECABAP_LOWER, kEventCtx);
		set64(regs::CRCBAP_LOWER, kRings.cmd_ctx);
		w32(regs::MHICFG, (1u << 16) | 128);
		// Every slot but one is the card's to fill.
		ev_wp_ = kEventRing + (kEventElements - 1) * 16;
		credit();
		w32(regs::MHICTRL, 2u << 8); // M0
		settle();
		if (dev().mhi().state() != regs::MhiState::M0)
			fail("MHI did not reach M0");
	}

	void start(unsigned ch)
	{
		rings_.init_channel(ch);
		const uint64_t at = rings_.put_command(ch, mhi::ElementType::StartChannel);
		op([&](Writer &w) { w.doorbell(Writer::kCommandRing, 0, rings_.cmd_wp()); });
		settle();
		if (rings_.completion(at) != static_cast<uint8_t>(mhi::Completion::Success))
			fail("channel " + std::to_string(ch) + " did not start");
	}
	// `n` receive buffers of `len` bytes on DL channel `ch`.
	void queue_dl(unsigned ch, uint32_t len, unsigned n = 1)
	{
		rings_.add_dl_buffers(ch, len, n);
		rings_.ring_channel(ch);
		settle();
	}
	// One TD on UL channel `ch`, in pieces of at most `piece` bytes.
	void send(unsigned ch, const std::vector<uint8_t> &msg, size_t piece = 0xFFFF)
	{
		rings_.add_td(ch, msg, piece);
		rings_.ring_channel(ch);
		settle();
	}
	std::vector<uint8_t> pop(unsigned ch) { return rings_.pop(ch); }

	// ---- NNC on QAIC_CONTROL ---------------------------------------------------
	HostRings &rings() { return rings_; }
	uint32_t next_nnc_seq() { return seq_++; }
	// One message; the reply's first passthrough payload.
	std::vector<uint8_t> nnc(const std::vector<NncTrans> &ts)
	{
		send(chan::kControlUl, test::nnc_message(ts, next_nnc_seq(), 5), 4096);
		return test::first_passthrough_payload(pop(chan::kControlDl));
	}
	void control_up() { seed_steps::control_up(*this, 4); }

private:
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
	void channel_doorbell(unsigned ch, uint64_t wp) override
	{
		op([&](Writer &w) { w.doorbell(Writer::kChannel, static_cast<uint8_t>(ch), wp); });
	}
	// Takes every event the card wrote and hands the slots back.
	void drain()
	{
		for (int round = 0; round < 16; round++) {
			uint64_t dev_rp = 0;
			const auto b = get(kEventCtx + mhi::kCtxRpOffset, 8);
			std::memcpy(&dev_rp, b.data(), b.size());
			const unsigned n = rings_.take_events(dev_rp);
			if (!n)
				return;
			for (unsigned i = 0; i < n; i++)
				ev_wp_ = HostRings::next(ev_wp_, kEventRing, kEventElements);
			credit();
			rings_.give_back_dl_bufs();
			op([](Writer &w) { w.settle(); });
		}
	}

	Writer w_;
	std::unique_ptr<Harness> h_;
	HostRings rings_;
	uint64_t ev_wp_ = 0;
	uint32_t seq_ = 1;
};

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

void amss_nnc_status(Script &s)
{
	s.ready_handshake();
	s.control_up();
	resource_info(s);
}

void amss_workload_copy(Script &s)
{
	feed_workload(s);
}

// The matmul_i8p example: MMI8P on its packed weights (docs/nsp.md).
void amss_workload_packed_gemm(Script &s)
{
	feed_workload(s, "matmul_i8p");
}

void amss_health_mailbox(Script &s)
{
	s.ready_handshake();
	s.control_up();
	health_channels_up(s, 4, 4, 4);
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

// The host's side of the SBL: time sync answered, the log read, Sahara
// served.
void serve_sbl(Script &s, const std::map<uint32_t, std::vector<uint8_t>> &files)
{
	for (auto p = s.pop(chan::kTimesyncDl); !p.empty(); p = s.pop(chan::kTimesyncDl))
		if (const auto m = timesync_answer(p); !m.empty())
			s.send(chan::kTimesyncUl, m);
	while (!s.pop(chan::kLoggingDl).empty()) {
	}
	for (auto p = s.pop(chan::kSaharaDl); !p.empty(); p = s.pop(chan::kSaharaDl))
		if (const auto m = sahara_answer(p, files); !m.empty())
			s.send(chan::kSaharaUl, m);
}

void pbl_full_boot(Script &s)
{
	s.bhi_load(sbl_image());
	const auto files = sbl_images();
	s.ready_handshake();
	for (unsigned ch : kSblChannels)
		s.start(ch);
	s.queue_dl(chan::kLoggingDl, 512, 16);
	s.queue_dl(chan::kTimesyncDl, 8);
	s.queue_dl(chan::kSaharaDl, 0x400, 2);
	for (int round = 0; round < 64 && s.dev().mhi().exec_env() != regs::ExecEnv::Amss; round++) {
		serve_sbl(s, files);
		s.settle();
	}
	if (s.dev().mhi().exec_env() != regs::ExecEnv::Amss)
		fail("the full boot did not reach AMSS");
}

std::vector<Seed> seeds()
{
	return {
		{"amss-m0", "MHI READY handshake to M0 (AMSS)", kCfgAmss, amss_m0, in_m0},
		{"amss-loopback", "QAIC_LOOPBACK echoes a message in two TREs", kCfgAmss, amss_loopback<Script>,
		 [](Harness &h) { return in_m0(h) && h.device().mhi().channel_running(chan::kLoopbackDl); }},
		{"amss-nnc-status", "QAIC_CONTROL up, NNC STATUS and RESOURCE_INFO (CRC on)", kCfgAmss | kCfgCrc,
		 amss_nnc_status,
		 [](Harness &h) { return in_m0(h) && h.device().mhi().channel_running(chan::kControlDl); }},
		{"amss-dbc-bulk", "an ELF loaded and activated, then DMA Bridge bulk requests both ways",
		 kCfgAmss | kCfgTwoNsps, amss_dbc_bulk<Script>,
		 [](Harness &h) { return h.device().dma_bridge().stats(0).bytes_out == 512; }},
		{"amss-dbc-linked", "a linked-list DMA Bridge request of two descriptors", kCfgAmss, amss_dbc_linked<Script>,
		 [](Harness &h) { return h.device().dma_bridge().stats(0).bytes_in == 384; }},
		{"amss-workload-copy", "the copy example workload activated and fed one input", kCfgAmss,
		 amss_workload_copy,
		 [](Harness &h) {
			 const auto info = h.device().boot().qsm().activation_on(0);
			 return info && info->running;
		 }},
		{"amss-workload-mmi8p", "the matmul_i8p example workload (MMI8P, packed weights) fed one input",
		 kCfgAmss | kCfgTwoNsps, amss_workload_packed_gemm,
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

} // namespace

int main(int argc, char **argv)
{
	SeedFiles files{"make-seeds", "fuzz-seeds"};
	if (!files.parse(argc, argv))
		return 2;
	int bad = 0;
	std::vector<std::string> names;
	for (const Seed &seed : seeds()) {
		names.push_back(seed.name);
		Script s(seed.config);
		seed.script(s);
		const std::vector<uint8_t> input = s.bytes();
		// The recorded input alone, on a new card, must get as far.
		Harness h(input[0]);
		Reader in(input.data() + 1, input.size() - 1);
		h.run(in);
		if (!seed.reached(h)) {
			std::fprintf(stderr, "make-seeds: %s: the recorded input does not reach: %s\n", seed.name.c_str(),
				     seed.what.c_str());
			bad++;
		}
		bad += files.put(files.dir / seed.name, input);
		if (!files.check)
			std::printf("%s: %zu bytes: %s\n", (files.dir / seed.name).c_str(), input.size(), seed.what.c_str());
	}
	bad += files.strangers(files.dir, names);
	return bad ? 1 : 0;
}
