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
#include <functional>
#include <map>
#include <memory>
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
#include "host_rings.h"
#include "seed_files.h"
#include "seed_steps.h"

namespace aic100::seed_steps {
void fail(const std::string &why)
{
	std::fprintf(stderr, "make-qemu-seeds: %s\n", why.c_str());
	std::exit(1);
}
} // namespace aic100::seed_steps

namespace {

using namespace aic100;
using namespace aic100::seed_steps;

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
constexpr RingLayout kRings{
	.chan_ctx = kChanCtx,
	.event_ctx = kEventCtx,
	.cmd_ctx = kCmdCtx,
	.event_ring = kEventRing,
	.cmd_ring = kCmdRing,
	.chan_rings = kChanRings,
	.dl_bufs = kDlBufs,
	.dl_bufs_end = kScratch,
	.scratch = kScratch,
	.scratch_end = kDbcArea,
	.event_elements = kEventElements,
	.cmd_elements = kCmdElements,
	.chan_elements = kChanElements,
	.scratch_wraps = false,
	.give_back_dl_bufs = false, // the seeds post a buffer before each answer they wait for
};

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
class Script final : private HostRings::Bus {
public:
	static constexpr uint64_t kFifo = kDbcArea, kData = kDbcArea + 0x10000;

	explicit Script(unsigned card) : card_(card), dev_(host_, card_config(card)), rings_(kRings, *this) {}

	const std::vector<uint8_t> &bytes() const { return w_.bytes(); }
	Device &dev() { return dev_; }

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
	void put(uint64_t addr, const void *p, size_t n) override { host_.put(addr, p, n); }
	void put(uint64_t addr, const std::vector<uint8_t> &v) { put(addr, v.data(), v.size()); }
	std::vector<uint8_t> get(uint64_t addr, size_t n) override { return host_.get(addr, n); }
	void dbc_write(unsigned dbc, uint32_t reg, uint32_t v) { write(2, regs::kDbcBase + dbc * regs::kDbcStride + reg, v); }
	void dbc_read(unsigned dbc, uint32_t reg) { read(2, regs::kDbcBase + dbc * regs::kDbcStride + reg); }
	// QEMU's main loop runs after every command.
	void settle() {}

	// ---- MHI, as Linux's MHI host stack drives it ------------------------
	void bhi_load(const std::vector<uint8_t> &image)
	{
		const uint64_t at = rings_.scratch(image.size());
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
		auto ec = rings_.event_context();
		// Every slot but one is the card's: the seeds never hand any back.
		ec.wp = kEventRing + (kEventElements - 1) * 16;
		put(kEventCtx, &ec, sizeof(ec));
		const auto cc = rings_.command_context();
		put(kCmdCtx, &cc, sizeof(cc));
		rings_.reset();
		read(0, regs::MHISTATUS);
		set64(regs::CCABAP_LOWER, kChanCtx);
		set64(regs::ECABAP_LOWER, kEventCtx);
		set64(regs::CRCBAP_LOWER, kCmdCtx);
		w32(regs::MHICFG, (1u << 16) | regs::kNumChannels);
		set64(regs::kErdbBase, ec.wp);
		w32(regs::MHICTRL, uint32_t{static_cast<uint8_t>(regs::MhiState::M0)} << regs::kStateShift);
		events();
		if (dev_.mhi().state() != regs::MhiState::M0)
			fail("MHI did not reach M0");
	}

	// START_CHAN after the channel's context and ring, as mhi_prepare_channel.
	void start(unsigned ch)
	{
		rings_.init_channel(ch);
		const uint64_t at = rings_.put_command(ch, mhi::ElementType::StartChannel);
		const uint64_t wp = rings_.cmd_wp();
		put(kCmdCtx + mhi::kCtxWpOffset, &wp, 8);
		set64(regs::CRDB_LOWER, wp);
		events();
		if (rings_.completion(at) != static_cast<uint8_t>(mhi::Completion::Success))
			fail("channel " + std::to_string(ch) + " did not start");
	}
	// `n` receive buffers of `len` bytes on DL channel `ch`.
	void queue_dl(unsigned ch, uint32_t len, unsigned n)
	{
		rings_.add_dl_buffers(ch, len, n);
		rings_.ring_channel(ch);
	}
	// One TD on UL channel `ch`, in pieces of at most `piece` bytes.
	void send(unsigned ch, const std::vector<uint8_t> &msg, size_t piece = 0xFFFF)
	{
		rings_.add_td(ch, msg, piece);
		rings_.ring_channel(ch);
	}
	// What the card sent on DL channel `ch`, oldest first.
	std::vector<uint8_t> pop(unsigned ch)
	{
		events();
		return rings_.pop(ch);
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
	HostRings &rings() { return rings_; }
	uint32_t next_nnc_seq() { return seq_++; }
	// One message; the reply's first passthrough payload.
	std::vector<uint8_t> nnc(const std::vector<NncTrans> &ts)
	{
		const auto m = test::nnc_message(ts, next_nnc_seq(), 5);
		queue_dl(chan::kControlDl, 4096, 1);
		send(chan::kControlUl, m, 4096);
		return test::first_passthrough_payload(pop(chan::kControlDl));
	}
	void control_up() { seed_steps::control_up(*this, 1); }

private:
	// Every new event: command completions and what DL channels received.
	void events() { rings_.take_events(host_.get<uint64_t>(kEventCtx + mhi::kCtxRpOffset)); }

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
	// A 64-bit register or doorbell: high half, then low, as the host stack
	// writes it.
	void set64(uint32_t lower, uint64_t v)
	{
		w32(lower + 4, static_cast<uint32_t>(v >> 32));
		w32(lower, static_cast<uint32_t>(v));
	}
	void channel_doorbell(unsigned ch, uint64_t wp) override { set64(regs::kChdbBase + 8 * ch, wp); }

	unsigned card_;
	Host host_;
	Device dev_;
	HostRings rings_;
	gfuzz::Writer w_;
	bool patterns_ = false;
	uint32_t seq_ = 1;
};

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

// The driver's and the UMD's first NNC requests.
void amss_nnc(Script &s)
{
	s.ready_handshake();
	s.control_up();
	using namespace nnc::cmd;
	if (word(s.nnc({passthrough(raw(StatusReq{kStatus, 0, {}}))}), 0) != kStatusResp)
		fail("STATUS");
	resource_info(s);
	(void)s.nnc({passthrough(raw(PerformanceInfoReq{kPerformanceInfo, 0}))});
	CreateResourceGroupReq g{};
	g.type = kCreateResourceGroup;
	g.source_grp = -1;
	g.nsp = 1;
	g.mcid = 1;
	g.sem = 1;
	g.vc = 1;
	g.mem = 1 << 20;
	const auto group = as<CreateResourceGroupResp>(s.nnc({passthrough(raw(g))}));
	(void)s.nnc({passthrough(raw(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(group.res_grp_id)}))});
	(void)s.nnc({NncTrans{nnc::kTerminateToDev, raw(nnc::TerminateToDev{{nnc::kTerminateToDev, 16}, 5, 0})}});
}

void amss_health_mailbox(Script &s)
{
	s.ready_handshake();
	s.control_up();
	health_channels_up(s, 4, 4, 4);
	load_and_activate(s, tiny_elf(256));
	for (const char *cmd : {"crash dbc=0 reason=seed", "ras ce source=ddr addr=0x1000", "sensor soc_temp=97000",
				"ras ue_nf source=tsens temp=99000 threshold=upper", "syserr"})
		s.mailbox(cmd);
	s.w32(regs::MHICTRL, regs::MHICTRL_RESET);
}

// Constants both ways: LOAD_CONSTANTS with its data, then
// LOAD_CONSTANTS_EX and its payload; the two ids.
std::pair<uint32_t, uint32_t> load_constants(Script &s)
{
	using namespace nnc::cmd;
	const std::vector<uint8_t> constants(256, 0x5C);
	LoadConstantsReq lc{};
	lc.type = kLoadConstants;
	lc.tag = kTagConstants;
	lc.data_length = constants.size();
	const auto lcresp = as<LoadConstantsResp>(s.nnc({passthrough(raw(lc)), dma(s, kTagConstants, constants)}));
	LoadConstantsExReq lx{};
	lx.type = kLoadConstantsEx;
	lx.descriptor_len = sizeof(ConstantsDescriptor);
	auto lxreq = raw(lx);
	const auto desc = raw(ConstantsDescriptor{512, 256, 0, 0, {}});
	lxreq.insert(lxreq.end(), desc.begin(), desc.end());
	const auto lxresp = as<LoadConstantsResp>(s.nnc({passthrough(lxreq)}));
	const LoadConstantsPayloadReq pl{kLoadConstantsPayload, 0, kTagConstants, lxresp.constants_id, 512, 0};
	(void)s.nnc({passthrough(raw(pl)), dma(s, kTagConstants, std::vector<uint8_t>(512, 0xC5))});
	return {lcresp.constants_id, lxresp.constants_id};
}

// What the UMD does with a network's life: constants (both ways), an
// ELF, ACTIVATE in standby, state changes, DEACTIVATE, the unloads; then
// transactions and commands the card refuses.
void amss_nnc_lifecycle(Script &s)
{
	s.ready_handshake();
	s.control_up();
	using namespace nnc::cmd;
	const auto [constants, constants_ex] = load_constants(s);
	const auto elf = as<LoadElfResp>(load_elf(s, tiny_elf(256)));
	const auto act = accepted<ActivateResp>(activate(s, elf.elf_id, constants, 0), "ACTIVATE in standby");
	for (uint32_t state : {1u, 0u, 1u}) {
		ActivateStateCmdReq sc{};
		sc.type = kActivateStateCmd;
		sc.num_cmds = 1;
		sc.cmds[0] = {act.activation_id, state};
		(void)s.nnc({passthrough(raw(sc))});
	}
	(void)s.nnc({passthrough(raw(DeactivateReq{kDeactivate, act.activation_id, 1, 0}))});
	for (const IdReq r : {IdReq{kUnloadElf, elf.elf_id}, IdReq{kUnloadConstants, constants},
			      IdReq{kUnloadConstants, constants_ex}, IdReq{kReleaseVc, 0}, IdReq{kDeviceConfig, 0}})
		(void)s.nnc({passthrough(raw(r))});
	using nnc::kValidatePartitionToDev, nnc::kDmaXferCont;
	(void)s.nnc({{kValidatePartitionToDev,
		      raw(nnc::ValidatePartitionToDev{{kValidatePartitionToDev, 16}, 0, 0})}});
	(void)s.nnc({{kDmaXferCont, raw(nnc::DmaXferCont{{kDmaXferCont, 24}, 0, 0, 0})}});
	(void)s.nnc({test::status_to_dev()});
}

// The copy example workload fed one input, then the DMA Bridge's counts.
void amss_workload_copy(Script &s)
{
	const Activated a = feed_workload(s);
	s.mailbox("dma-stats dbc=" + std::to_string(a.dbc));
}

// Every verb of the fault-injection grammar through the mailbox, with the
// arguments each takes and some it refuses (docs/health.md).
void amss_mailbox_commands(Script &s)
{
	s.ready_handshake();
	health_channels_up(s, 2, 8, 2);
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

// The host's side of Sahara and time sync during the SBL, each buffer
// the card filled posted again; false once there was nothing to answer.
bool serve_sbl(Script &s, const std::map<uint32_t, std::vector<uint8_t>> &files, DumpReader *dump = nullptr)
{
	bool any = false;
	for (auto p = s.pop(chan::kTimesyncDl); !p.empty(); p = s.pop(chan::kTimesyncDl), any = true) {
		s.queue_dl(chan::kTimesyncDl, 8, 1);
		if (const auto m = timesync_answer(p); !m.empty())
			s.send(chan::kTimesyncUl, m);
	}
	while (!s.pop(chan::kLoggingDl).empty())
		s.queue_dl(chan::kLoggingDl, 512, 1);
	for (auto p = s.pop(chan::kSaharaDl); !p.empty(); p = s.pop(chan::kSaharaDl), any = true) {
		s.queue_dl(chan::kSaharaDl, 0x400, 1);
		std::vector<uint8_t> reply;
		if (!dump || !dump->take(p, reply))
			reply = sahara_answer(p, files);
		if (!reply.empty())
			s.send(chan::kSaharaUl, reply);
	}
	return any;
}

// The SBL's channels up, then its requests answered until AMSS runs.
void run_sbl(Script &s, DumpReader *dump = nullptr)
{
	const auto files = sbl_images();
	s.ready_handshake();
	for (unsigned ch : kSblChannels)
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
	s.bhi_load(sbl_image());
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
		{"amss-loopback", "QAIC_LOOPBACK echoes a message in three TREs", 0, amss_loopback<Script>,
		 [](Device &d) { return in_m0(d) && d.mhi().channel_running(chan::kLoopbackDl); }},
		{"amss-nnc", "QAIC_CONTROL up; NNC STATUS, RESOURCE_INFO, PERFORMANCE_INFO, a resource group, TERMINATE",
		 0, amss_nnc, [](Device &d) { return in_m0(d) && d.mhi().channel_running(chan::kControlDl); }},
		{"amss-dbc-bulk", "an ELF loaded and activated, then DMA Bridge bulk requests both ways", 0, amss_dbc_bulk<Script>,
		 [](Device &d) { return d.dma_bridge().stats(0).bytes_out == 512; }},
		{"amss-dbc-linked", "a linked-list DMA Bridge request of two descriptors", 0, amss_dbc_linked<Script>,
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
	u64("dbc_fifo", Script::kFifo);
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

} // namespace

int main(int argc, char **argv)
{
	SeedFiles files{"make-qemu-seeds", "qemu-fuzz-seeds"};
	if (!files.parse(argc, argv))
		return 2;
	int bad = 0;
	std::vector<std::string> names;
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
		names.push_back(seed.name);
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
		bad += files.put(files.dir / "seeds" / seed.name, input);
		if (!files.check)
			std::printf("%s: %zu bytes: %s\n", seed.name.c_str(), input.size(), seed.what.c_str());
	}
	const std::string dict = dictionary();
	bad += files.put(files.dir / "aic100.dict", std::vector<uint8_t>(dict.begin(), dict.end()));
	bad += files.strangers(files.dir / "seeds", names);
	return bad ? 1 : 0;
}
