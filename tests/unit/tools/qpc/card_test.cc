// SPDX-License-Identifier: GPL-2.0-or-later
// Every example's program container on the device core, loaded the way the
// open UMD loads one: LOAD_CONSTANTS_EX with constantsdesc.bin, the static
// constants by LOAD_CONSTANTS_PAYLOAD at offset 0, LOAD_ELF with the whole
// network.elf, ACTIVATE with both; then, per inference, one DMA Bridge
// request element per metadata DMA request (the UMD's stencil: the
// semaphore operations as they are, device address = ddr_base + devOffset,
// a response on the last outbound request only).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "../../core/nnc_host.h"
#include "examples.h"
#include "metadata.h"

namespace aic100::test {
namespace {

using namespace std::chrono_literals;
namespace qpc = aic100::qpc;

struct __attribute__((packed)) RequestElement {
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
static_assert(sizeof(RequestElement) == 64);

class QpcOnCardTest : public NncHostTest {
protected:
	static constexpr uint32_t kN = 64; // FIFO elements

	uint32_t load_constants(const qpc::Program &p)
	{
		LoadConstantsExReq r{};
		r.type = kLoadConstantsEx;
		std::strcpy(r.name, "ConstantsDescriptor");
		r.descriptor_len = qpc::kConstantsDescriptorSize;
		auto req = raw(r);
		const auto d = qpc::encode_constants_descriptor(p.constants_desc);
		req.insert(req.end(), d.begin(), d.end());
		const auto lr = as<LoadConstantsResp>(cmd(req));
		EXPECT_EQ(lr.status, kOk);
		struct Part {
			const std::vector<uint8_t> &data;
			uint64_t offset;
		};
		for (const Part &part : {Part{p.static_constants, 0}, Part{p.dynamic_constants, p.constants_desc.static_size}}) {
			if (part.data.empty())
				continue;
			const LoadConstantsPayloadReq pr{kLoadConstantsPayload, 0, kTagConstants, lr.constants_id,
							 part.data.size(), part.offset};
			EXPECT_EQ(as<LoadConstantsResp>(cmd(raw(pr), 5, {dma(kTagConstants, part.data)})).status, kOk);
		}
		return lr.constants_id;
	}

	struct Activation {
		ActivateResp resp;
		uint64_t req, rsp;
	};
	Activation activate_program(const qpc::Program &p, uint32_t constants_id)
	{
		LoadElfReq le{};
		le.type = kLoadElf;
		le.tag = kTagElf;
		std::strcpy(le.network_name, "NetworkImage");
		le.data_length = p.elf.size();
		const auto lr = as<LoadElfResp>(cmd(raw(le), 5, {dma(kTagElf, p.elf)}));
		EXPECT_EQ(lr.status, kOk);
		const uint32_t buf = (68 * kN + 256 + 4095) & ~4095u;
		const uint64_t fifo = mhi->alloc(buf, 4096);
		ActivateReq a{};
		a.type = kActivate;
		a.elf_id = lr.elf_id;
		a.constants_id = constants_id;
		a.resource_res_id = -1;
		a.vc_res_id = -1;
		a.opt_vc_setup = 1;
		a.initial_state = 1;
		const NncTrans to{kActivateToDev,
				  raw(ActivateToDev{{kActivateToDev, 40}, fifo, fifo + buf - 4 * kN, kN, kN, buf, 0})};
		return {as<ActivateResp>(cmd(raw(a), 5, {to})), fifo, fifo + buf - 4 * kN};
	}

	// Runs the inputs through the container's program on the card; returns
	// each inference's outputs, concatenated in network descriptor order.
	std::vector<std::vector<uint8_t>> infer(const qpc::Program &p, const std::vector<std::vector<uint8_t>> &inputs)
	{
		const uint32_t consts = p.constants_desc.static_size + p.constants_desc.dynamic_size ? load_constants(p) : 0;
		const Activation act = activate_program(p, consts);
		EXPECT_EQ(act.resp.status, kOk);
		const unsigned dbc = act.resp.virtual_channel_id;
		const uint64_t base = act.resp.ddr_base;
		const auto &d = p.desc;
		const auto &reqs = p.metadata->dmaRequests;
		size_t last_out = reqs.size();
		for (size_t k = 0; k < reqs.size(); k++)
			if (reqs[k]->inOut == qpc::kDmaOut)
				last_out = k;
		EXPECT_EQ(last_out + 1, reqs.size()) << "the last request must be an output";

		std::vector<std::vector<uint64_t>> bufs; // per inference, per DMA buffer: host address
		uint32_t tail = 0;
		for (size_t i = 0; i < inputs.size(); i++) {
			std::vector<uint64_t> b;
			for (int k = 0; k < d.dma_buffers_size(); k++)
				b.push_back(mhi->alloc(d.dma_buffers(k).size(), 64));
			size_t at = 0;
			for (const auto &io : d.inputs()) {
				const uint32_t num = io.transformseq(0).copy_dma_buffer().buffer_num();
				const size_t n = d.dma_buffers(int(num)).size();
				mhi->put(b[num], inputs[i].data() + at, n);
				at += n;
			}
			EXPECT_EQ(at, inputs[i].size());
			for (size_t k = 0; k < reqs.size(); k++) {
				const auto &r = *reqs[k];
				RequestElement e{};
				e.req_id = static_cast<uint16_t>(i);
				e.cmd = 0x08 | (r.inOut == qpc::kDmaIn ? 1 : 2) | (k == last_out ? 0x10 : 0);
				const uint64_t host_addr = b[r.num] + r.hostOffset, dev_addr = base + r.devOffset;
				e.src = r.inOut == qpc::kDmaIn ? host_addr : dev_addr;
				e.dest = r.inOut == qpc::kDmaIn ? dev_addr : host_addr;
				e.len = r.size;
				for (size_t s = 0; s < r.semaphoreOps.size(); s++) {
					const auto &o = *r.semaphoreOps[s];
					e.sem[s] = (1u << 31) | (o.inSyncFence ? 1u << 30 : 0) | (o.outSyncFence ? 1u << 29 : 0) |
						   uint32_t(o.semOp) << 24 | (o.preOrPost == qpc::kSemPre ? 1u << 22 : 0) |
						   uint32_t(o.semNum) << 16 | o.semValue;
				}
				mhi->put(act.req + tail * 64, &e, 64);
				tail = (tail + 1) % kN;
			}
			bufs.push_back(b);
		}
		dev->bar_write(2, regs::kDbcBase + dbc * regs::kDbcStride + regs::DBC_REQTP, tail, 4);
		const auto deadline = std::chrono::steady_clock::now() + 20s;
		while (dev->dma_bridge().dbc(dbc).rsp_tail != inputs.size() % kN &&
		       std::chrono::steady_clock::now() < deadline) {
			dev->process();
			std::this_thread::sleep_for(200us);
		}
		EXPECT_EQ(dev->dma_bridge().dbc(dbc).req_head, tail) << "requests left";
		for (size_t i = 0; i < inputs.size(); i++) {
			uint16_t r[2];
			host.dma_read(act.rsp + i * 4, r, 4);
			EXPECT_EQ(r[0], i);
			EXPECT_EQ(r[1], 0u) << "response status";
		}
		const auto info = dev->boot().qsm().activation_on(dbc);
		EXPECT_TRUE(info && info->running && !info->faulted) << (info ? info->fault : "no activation");
		std::vector<std::vector<uint8_t>> outs;
		for (const auto &b : bufs) {
			std::vector<uint8_t> o;
			for (const auto &io : d.outputs()) {
				const uint32_t num = io.transformseq(0).copy_dma_buffer().buffer_num();
				const auto part = mhi->get(b[num], d.dma_buffers(int(num)).size());
				o.insert(o.end(), part.begin(), part.end());
			}
			outs.push_back(o);
		}
		const auto dr = as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, act.resp.activation_id, 1, 0})));
		EXPECT_EQ(dr.status, kOk);
		return outs;
	}
};

TEST_F(QpcOnCardTest, EveryExampleRunsFromItsContainer)
{
	for (const workloads::Example &e : workloads::examples()) {
		SCOPED_TRACE(e.layout.name);
		std::string err;
		const auto spec = qpc::example_spec(e, err);
		ASSERT_TRUE(spec) << err;
		const auto file = qpc::build_qpc(*spec, err);
		ASSERT_TRUE(file) << err;
		const auto p = qpc::read_qpc(*file, err);
		ASSERT_TRUE(p) << err;
		std::vector<std::vector<uint8_t>> inputs;
		for (uint64_t seed = 11; seed <= 18; seed++)
			inputs.push_back(e.make_input(seed));
		const auto outs = infer(*p, inputs);
		ASSERT_EQ(outs.size(), inputs.size());
		for (size_t i = 0; i < inputs.size(); i++) {
			std::string why;
			EXPECT_TRUE(workloads::matches(e, outs[i], e.reference(inputs[i]), why))
				<< "inference " << i << ": " << why;
		}
	}
}

} // namespace
} // namespace aic100::test
