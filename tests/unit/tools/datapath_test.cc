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
	};
	Activation activate_workload(const std::vector<uint8_t> &elf)
	{
		LoadElfReq req{};
		req.type = kLoadElf;
		req.tag = kTagElf;
		req.data_length = elf.size();
		const auto lr = as<LoadElfResp>(cmd(raw(req), 5, {dma(kTagElf, elf)}));
		EXPECT_EQ(lr.status, kOk);
		const uint32_t buf = (68 * kN + 256 + 4095) & ~4095u;
		const uint64_t fifo = mhi->alloc(buf, 4096);
		ActivateReq a{};
		a.type = kActivate;
		a.elf_id = lr.elf_id;
		a.resource_res_id = -1;
		a.vc_res_id = -1;
		a.initial_state = 1;
		const NncTrans to{kActivateToDev,
				  raw(ActivateToDev{{kActivateToDev, 40}, fifo, fifo + buf - 4 * kN, kN, kN, buf, 0})};
		return {as<ActivateResp>(cmd(raw(a), 5, {to})), fifo, fifo + buf - 4 * kN};
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
			uint16_t r[2];
			host.dma_read(act.rsp + i * 4, r, 4);
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

TEST_F(DatapathTest, AFaultingWorkloadStopsWithARecordedError)
{
	// A program that stores outside its window.
	workloads::Example e = *workloads::find("copy");
	e.source = ".io_size 4096\n.name oob\n LI r3, 0x10000000000\n ST r3, r3, 0\n HALT\n";
	std::string err;
	auto elf = workloads::build(e, err);
	ASSERT_TRUE(elf) << err;
	const Activation act = activate_workload(*elf);
	ASSERT_EQ(act.resp.status, kOk);
	const auto deadline = std::chrono::steady_clock::now() + 5s;
	std::optional<Qsm::ActivationInfo> info;
	while (std::chrono::steady_clock::now() < deadline) {
		auto i = dev->boot().qsm().activation_on(act.resp.virtual_channel_id);
		if (i && i->faulted) {
			info = i;
			break;
		}
		std::this_thread::sleep_for(1ms);
	}
	ASSERT_TRUE(info) << "the fault was not recorded";
	EXPECT_NE(info->fault.find("ST"), std::string::npos) << info->fault;
	EXPECT_FALSE(info->running);
}

} // namespace
} // namespace aic100::test
