// SPDX-License-Identifier: GPL-2.0-or-later
// Compiled networks as program containers: what they declare, and the
// 64×64 ResNet-50 run from its container on the interpreter the way the
// UMD drives it (the metadata's DMA requests with their semaphore
// operations), against its reference pairs.
#include "networks.h"

#include <gtest/gtest.h>

#include <aic100/nsp.h>
#include <aic100/semaphores.h>

#include <chrono>
#include <cstring>

#include "metadata.h"

namespace aic100::qpc {
namespace {

using Clock = std::chrono::steady_clock;

Program pack(const NetworkProgram &np)
{
	std::string err;
	const auto file = build_network_qpc(np, err);
	EXPECT_TRUE(file) << err;
	auto p = file ? read_qpc(*file, err) : std::nullopt;
	EXPECT_TRUE(p) << err;
	return p ? std::move(*p) : Program{};
}

TEST(QpcNetworks, TheFullSizeOneIsWhereTheUmdLooks)
{
	const NetworkProgram *p = find_network("4nsp-quant-resnet50");
	ASSERT_TRUE(p);
	EXPECT_EQ(p->resolution, 224u);
	EXPECT_EQ(p->nsps, 4u);
	EXPECT_EQ(p->umd_dir, "aic100/v2/4nsp/4nsp-quant-resnet50");
	EXPECT_FALSE(find_network("resnet18"));
	const Program q = pack(*p);
	ASSERT_TRUE(q.metadata);
	EXPECT_EQ(q.workload.meta.name, "4nsp-quant-resnet50");
	EXPECT_EQ(q.metadata->numNSPs, 4u);
	ASSERT_EQ(q.desc.inputs_size(), 1);
	ASSERT_EQ(q.desc.outputs_size(), 1);
	EXPECT_EQ(q.desc.inputs(0).name(), "image");
	EXPECT_EQ(q.desc.inputs(0).io_initial().type(), netdesc::Int8QTy);
	EXPECT_EQ(q.desc.dma_buffers(0).size(), 224u * 224 * 3);
	EXPECT_EQ(q.desc.outputs(0).name(), "logits");
	EXPECT_EQ(q.desc.dma_buffers(1).size(), 1000u);
	// The weights (25.5 M) and requantization blocks travel as constants.
	EXPECT_GT(q.static_constants.size(), 25502912u);
	EXPECT_TRUE(q.metadata->threadDescriptors[0]->typeMask & 1); // uses the matrix unit
}

// Inference by inference as the UMD would: presync, copy, postsync per
// request, on the DMA buffers of the network descriptor.
TEST(QpcNetworks, ResNet50At64RunsFromItsContainerBitExact)
{
	const NetworkProgram *np = find_network("4nsp-quant-resnet50-r64");
	ASSERT_TRUE(np);
	const Program p = pack(*np);
	ASSERT_TRUE(p.metadata);
	const auto pairs = reference_files(network_of(*np), 2);
	ASSERT_EQ(pairs.size(), 2u);
	EXPECT_EQ(pairs[1].input_file, "input.1.bin");
	EXPECT_EQ(pairs[1].output_file, "output.1.bin");

	std::vector<uint8_t> win(p.workload.meta.io_size, 0xCD);
	ASSERT_TRUE(nsp::load_segments(p.workload, win));
	std::copy(p.static_constants.begin(), p.static_constants.end(),
		  win.begin() + long(p.workload.meta.const_offset));
	Semaphores sems;
	nsp::Counters ctr;
	nsp::Workers wk;
	ASSERT_TRUE(wk.start(p.workload, win, sems, ctr));
	const auto deadline = Clock::now() + std::chrono::seconds(60);
	const auto late = [&] { return Clock::now() > deadline || wk.faulted(); };
	for (int it = 0; it < 4; it++) {
		const ReferencePair &ref = pairs[size_t(it) % pairs.size()];
		std::vector<std::vector<uint8_t>> buffers = {ref.input, std::vector<uint8_t>(ref.output.size(), 0)};
		for (const auto &r : p.metadata->dmaRequests) {
			ASSERT_LT(r->num, buffers.size());
			for (const auto &s : r->semaphoreOps)
				if (s->preOrPost == kSemPre)
					ASSERT_TRUE(sems.wait(s->semNum, Semaphores::Op(s->semOp), s->semValue, late))
						<< "inference " << it << ": " << wk.fault();
			uint8_t *host = buffers[r->num].data() + r->hostOffset;
			ASSERT_LE(r->hostOffset + r->size, buffers[r->num].size());
			if (r->inOut == kDmaIn)
				std::memcpy(&win[r->devOffset], host, r->size);
			else
				std::memcpy(host, &win[r->devOffset], r->size);
			for (const auto &s : r->semaphoreOps)
				if (s->preOrPost == kSemPost)
					ASSERT_TRUE(sems.apply(s->semNum, Semaphores::Op(s->semOp), s->semValue));
		}
		ASSERT_EQ(buffers[1], ref.output) << "inference " << it;
	}
	wk.stop();
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	EXPECT_EQ(ctr.iterations.load(), 4u);
}

} // namespace
} // namespace aic100::qpc
