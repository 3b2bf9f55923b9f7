// SPDX-License-Identifier: GPL-2.0-or-later
// The card end to end, as the host sees it: each example workload is loaded
// and activated through NNC, then fed through its DBC with the pipelined
// request pattern (presync waits and postsync signals on the activation's
// semaphores), while the NSP threads compute; every output must match the
// host reference.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "../core/nnc_host.h"
#include "workloads.h"

namespace aic100::test {
namespace {

using namespace std::chrono_literals;

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
constexpr unsigned kInit = 1, kInc = 2, kDec = 3, kWaitEq = 4, kWaitGt0 = 6;

class DatapathTest : public NncHostTest {
protected:
	static constexpr uint32_t kN = 64; // FIFO elements

	struct Activation {
		ActivateResp resp;
		uint64_t req, rsp;
		uint32_t elf_id;
	};
	Activation activate_workload(const std::vector<uint8_t> &elf)
	{
		LoadElfReq req{};
		req.type = kLoadElf;
		req.tag = kTagElf;
		req.data_length = elf.size();
		const auto lr = as<LoadElfResp>(cmd(raw(req), 5, {dma(kTagElf, elf)}));
		EXPECT_EQ(lr.status, kOk);
		return activate_loaded(lr.elf_id);
	}
	// Activates an ELF already loaded, with fresh FIFOs.
	Activation activate_loaded(uint32_t elf_id)
	{
		const uint32_t buf = (68 * kN + 256 + 4095) & ~4095u;
		const uint64_t fifo = mhi->alloc(buf, 4096);
		ActivateReq a{};
		a.type = kActivate;
		a.elf_id = elf_id;
		a.resource_res_id = -1;
		a.vc_res_id = -1;
		a.initial_state = 1;
		const NncTrans to{kActivateToDev,
				  raw(ActivateToDev{{kActivateToDev, 40}, fifo, fifo + buf - 4 * kN, kN, kN, buf, 0})};
		return {as<ActivateResp>(cmd(raw(a), 5, {to})), fifo, fifo + buf - 4 * kN, elf_id};
	}

	// Runs `count` inferences of `e` through the card; returns the outputs.
	std::vector<std::vector<uint8_t>> infer(const workloads::Example &e, const std::vector<std::vector<uint8_t>> &inputs)
	{
		std::string err;
		auto elf = workloads::build(e, err);
		EXPECT_TRUE(elf) << err;
		const Activation act = activate_workload(*elf);
		EXPECT_EQ(act.resp.status, kOk);
		const unsigned dbc = act.resp.virtual_channel_id;
		const uint64_t base = act.resp.ddr_base;
		const auto &L = e.layout;

		// Two requests per inference: input in, output out.
		std::vector<uint64_t> outs;
		uint32_t tail = 0;
		for (size_t i = 0; i < inputs.size(); i++) {
			const uint64_t in = mhi->alloc(L.input.size, 64), out = mhi->alloc(L.output.size, 64);
			mhi->put(in, inputs[i].data(), inputs[i].size());
			outs.push_back(out);
			Request rin{};
			rin.req_id = static_cast<uint16_t>(i);
			rin.cmd = 0x08 | 1;
			rin.src = in;
			rin.dest = base + L.input.offset;
			rin.len = static_cast<uint32_t>(L.input.size);
			rin.sem[0] = sem(kWaitEq, L.sem_in, 0, true); // the workload took the last input
			rin.sem[1] = sem(kInc, L.sem_in, 1, false);
			Request rout{};
			rout.req_id = static_cast<uint16_t>(i);
			rout.cmd = 0x10 | 0x08 | 2;
			rout.src = base + L.output.offset;
			rout.dest = out;
			rout.len = static_cast<uint32_t>(L.output.size);
			rout.sem[0] = sem(kWaitGt0, L.sem_out, 0, true); // the output is there
			rout.sem[1] = sem(kDec, L.sem_out, 1, false);
			mhi->put(act.req + tail * 64, &rin, 64);
			tail = (tail + 1) % kN;
			mhi->put(act.req + tail * 64, &rout, 64);
			tail = (tail + 1) % kN;
		}
		dev->bar_write(2, regs::kDbcBase + dbc * regs::kDbcStride + regs::DBC_REQTP, tail, 4);
		const auto deadline = std::chrono::steady_clock::now() + 20s;
		while (dev->dma_bridge().dbc(dbc).rsp_tail != inputs.size() % kN &&
		       std::chrono::steady_clock::now() < deadline) {
			dev->process();
			std::this_thread::sleep_for(200us);
		}
		EXPECT_EQ(dev->dma_bridge().dbc(dbc).req_head, tail) << e.layout.name << ": requests left";
		std::vector<std::vector<uint8_t>> got;
		for (uint64_t out : outs)
			got.push_back(mhi->get(out, L.output.size));
		const auto info = dev->boot().qsm().activation_on(dbc);
		EXPECT_TRUE(info && info->running && !info->faulted) << (info ? info->fault : "no activation");
		EXPECT_GE(info ? info->iterations : 0, inputs.size()) << "MARKed iterations";
		// Responses all say success.
		for (size_t i = 0; i < inputs.size(); i++) {
			uint16_t r[2] = {0xFFFF, 0xFFFF};
			EXPECT_EQ(host.dma_read(act.rsp + i * 4, r, 4), DmaStatus::Ok);
			EXPECT_EQ(r[0], i);
			EXPECT_EQ(r[1], 0u);
		}
		last_dbc = dbc;
		last_act = act.resp.activation_id;
		return got;
	}

	unsigned last_dbc = 0;
	uint32_t last_act = 0;
};

TEST_F(DatapathTest, EveryExampleWorkloadComputesItsReference)
{
	for (const auto &e : workloads::examples()) {
		SCOPED_TRACE(e.layout.name);
		std::vector<std::vector<uint8_t>> inputs;
		for (uint64_t seed = 1; seed <= 8; seed++)
			inputs.push_back(e.make_input(seed));
		const auto outs = infer(e, inputs);
		ASSERT_EQ(outs.size(), inputs.size());
		for (size_t i = 0; i < inputs.size(); i++) {
			std::string why;
			EXPECT_TRUE(workloads::matches(e, outs[i], e.reference(inputs[i]), why))
				<< "inference " << i << ": " << why;
		}
		const auto &st = dev->dma_bridge().stats(last_dbc);
		EXPECT_EQ(st.bytes_in, inputs.size() * e.layout.input.size);
		EXPECT_EQ(st.bytes_out, inputs.size() * e.layout.output.size);
		// Deactivation stops the NSPs and frees the DBC.
		const auto d = as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, last_act, 1, 0})));
		EXPECT_EQ(d.status, kOk);
		EXPECT_FALSE(dev->dma_bridge().active(last_dbc));
	}
}

// Runs the device's event loop until `done` or 10 s.
template <typename F> bool spin(Device &dev, F done)
{
	const auto deadline = std::chrono::steady_clock::now() + 10s;
	while (!done()) {
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		dev.process();
		std::this_thread::sleep_for(200us);
	}
	return true;
}

TEST_F(DatapathTest, AFaultingWorkloadIsRecoveredWithADumpThatNamesTheFault)
{
	ASSERT_TRUE(mhi->start(ssr::kUl));
	ASSERT_TRUE(mhi->start(ssr::kDl));
	mhi->queue_dl(ssr::kDl, 65000, 2);
	// A program that stores outside its window.
	workloads::Example e = *workloads::find("copy");
	e.source = ".io_size 4096\n.name oob\n LI r3, 0x10000000000\n NOP\n ST r3, r3, 0\n HALT\n";
	std::string err;
	auto elf = workloads::build(e, err);
	ASSERT_TRUE(elf) << err;
	const Activation act = activate_workload(*elf);
	ASSERT_EQ(act.resp.status, kOk);
	const unsigned dbc = act.resp.virtual_channel_id;
	ASSERT_TRUE(spin(*dev, [&] {
		mhi->drain_events();
		return !mhi->rx[ssr::kDl].empty();
	})) << "the card never announced the crash";
	EXPECT_FALSE(dev->boot().qsm().activation_on(dbc)) << "the crashed activation is gone";
	EXPECT_FALSE(dev->dma_bridge().active(dbc));
	auto answer = [&](uint32_t cmd, std::vector<uint8_t> body) {
		std::vector<uint8_t> m = raw(ssr::Header{cmd, static_cast<uint32_t>(12 + body.size()), dbc});
		m.insert(m.end(), body.begin(), body.end());
		mhi->send(ssr::kUl, m);
	};
	for (uint32_t ev : {ssr::kBeforeShutdown, ssr::kAfterShutdown, ssr::kBeforePowerUp}) {
		const auto m = mhi->pop(ssr::kDl);
		ASSERT_EQ(as<uint32_t>(m, 12), ev);
		answer(ssr::kEventRsp, raw(ev));
	}
	const auto info = mhi->pop(ssr::kDl);
	ASSERT_EQ(as<uint32_t>(info, 0), ssr::kDebugTransferInfo);
	answer(ssr::kDebugTransferInfoRsp, raw(uint32_t{0}));
	auto read = [&](uint64_t addr, uint64_t len) {
		std::vector<uint8_t> b(20, 0);
		std::memcpy(b.data() + 4, &addr, 8);
		std::memcpy(b.data() + 12, &len, 8);
		answer(ssr::kMemoryRead, b);
		const auto r = mhi->pop(ssr::kDl);
		return std::vector<uint8_t>(r.begin() + 16, r.end());
	};
	const auto table = read(as<uint64_t>(info, 16), as<uint64_t>(info, 24));
	std::string summary;
	std::vector<uint8_t> nsp_bin;
	for (size_t off = 0; off + 64 <= table.size(); off += 64) {
		const std::string name(reinterpret_cast<const char *>(table.data() + off + 44));
		const auto data = read(as<uint64_t>(table, off + 8), as<uint64_t>(table, off + 16));
		if (name == "summary.txt")
			summary.assign(data.begin(), data.end());
		if (name == "nsp.bin")
			nsp_bin = data;
	}
	EXPECT_NE(summary.find("cause: nsp fault"), std::string::npos) << summary;
	EXPECT_NE(summary.find("workload: oob"), std::string::npos) << summary;
	EXPECT_NE(summary.find("instruction: ST r3, r3, 0"), std::string::npos) << summary;
	EXPECT_NE(summary.find("address: 0x10000000000"), std::string::npos) << summary;
	EXPECT_NE(summary.find("pc: 2"), std::string::npos) << summary;
	ASSERT_EQ(nsp_bin.size(), 304u);
	EXPECT_EQ(as<uint32_t>(nsp_bin, 4), 2u) << "fault";
	EXPECT_EQ(as<uint64_t>(nsp_bin, 8), 2u) << "pc";
	EXPECT_EQ(as<uint64_t>(nsp_bin, 48 + 3 * 8), 0x10000000000u) << "r3";
	answer(ssr::kDebugTransferDone, raw(uint32_t{0}));
	EXPECT_EQ(as<uint32_t>(mhi->pop(ssr::kDl), 0), ssr::kDebugTransferDoneRsp);
	const auto up = mhi->pop(ssr::kDl);
	ASSERT_EQ(as<uint32_t>(up, 12), ssr::kAfterPowerUp);
	answer(ssr::kEventRsp, raw(uint32_t{ssr::kAfterPowerUp}));
	EXPECT_FALSE(dev->boot().qsm().ssr().busy());
	telemetry::Status st;
	EXPECT_EQ(dev->boot().qsm().telemetry().read(telemetry::kNspFaults, st), 1);
}

TEST_F(DatapathTest, ACrashedWorkloadLeavesTheOtherOneComputing)
{
	const workloads::Example &e = *workloads::find("vadd_f32");
	std::string err;
	auto elf = workloads::build(e, err);
	ASSERT_TRUE(elf) << err;
	// A is idle, waiting for input on its semaphore, when it is crashed.
	Activation a = activate_workload(*elf);
	ASSERT_EQ(a.resp.status, kOk);
	for (unsigned round = 1; round <= 3; round++) {
		const unsigned dbc_a = a.resp.virtual_channel_id;
		ASSERT_EQ(dev->inject("crash dbc=" + std::to_string(dbc_a) + " reason=round " + std::to_string(round)), "");
		// Without an SSR client the crashed activation stops and waits for
		// its owner's DEACTIVATE.
		ASSERT_TRUE(spin(*dev, [&] { return !dev->dma_bridge().active(dbc_a); }));
		EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, a.resp.activation_id, 1, 0}))).status,
			  kOk);
		// B, activated next, runs every inference correctly.
		std::vector<std::vector<uint8_t>> inputs;
		for (uint64_t seed = 1; seed <= 4; seed++)
			inputs.push_back(e.make_input(seed + round));
		const auto outs = infer(e, inputs);
		for (size_t i = 0; i < inputs.size(); i++) {
			std::string why;
			EXPECT_TRUE(workloads::matches(e, outs[i], e.reference(inputs[i]), why)) << why;
		}
		EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, last_act, 1, 0}))).status, kOk);
		// A's ELF is still loaded: it activates again for the next round.
		a = activate_loaded(a.elf_id);
		ASSERT_EQ(a.resp.status, kOk) << "the crashed workload's ELF activates again";
		const auto info = dev->boot().qsm().activation_on(a.resp.virtual_channel_id);
		ASSERT_TRUE(info && info->running);
	}
	telemetry::Status st;
	EXPECT_EQ(dev->boot().qsm().telemetry().read(telemetry::kNspFaults, st), 3);
}

} // namespace
} // namespace aic100::test
