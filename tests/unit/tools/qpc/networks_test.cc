// SPDX-License-Identifier: GPL-2.0-or-later
// Compiled networks as program containers: what they declare, and the
// 64×64 ResNet-50 run from its container on the interpreter the way the
// UMD drives it (the metadata's DMA requests with their semaphore
// operations), against its reference pairs.
#include "networks.h"

#include <gtest/gtest.h>

#include <aic100/nsp.h>
#include <aic100/nsp_interpreter.h>
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

// The two copies of a network (docs/umd-compat.md, section 5): the one in
// the open UMD's test directory takes a float input, quantized before the
// copy, which the UMD refuses to run (its API test
// AdversarialInvalidPPPTransform needs that); the runnable one takes the
// int8 tensor with one plain copy. The card's side is the same program.
TEST(QpcNetworks, TheUmdTestCopyTakesAFloatInputTheRunnableOneDoesNot)
{
	const NetworkProgram *np = find_network("4nsp-quant-resnet50-r64");
	ASSERT_TRUE(np);
	std::string err, why;
	const auto test_file = build_network_qpc(*np, err, InputForm::FloatQuantized);
	ASSERT_TRUE(test_file) << err;
	const auto test_copy = read_qpc(*test_file, err);
	ASSERT_TRUE(test_copy) << err;
	const Program runnable = pack(*np);

	const netdesc::IoBinding &in = test_copy->desc.inputs(0);
	EXPECT_EQ(in.io_initial().type(), netdesc::FloatTy);
	EXPECT_EQ(in.io_transformed().type(), netdesc::Int8QTy);
	ASSERT_EQ(in.transformseq_size(), 2);
	EXPECT_EQ(in.transformseq(0).kind(), netdesc::QuantizeTransform);
	EXPECT_EQ(in.transformseq(1).kind(), netdesc::CopyDMABufferTransform);
	EXPECT_EQ(test_copy->desc.outputs(0).transformseq_size(), 1);
	EXPECT_FALSE(umd_runs(test_copy->desc, why));
	EXPECT_EQ(why, "input image has 2 transforms");

	ASSERT_EQ(runnable.desc.inputs(0).transformseq_size(), 1);
	EXPECT_EQ(runnable.desc.inputs(0).transformseq(0).kind(), netdesc::CopyDMABufferTransform);
	EXPECT_EQ(runnable.desc.inputs(0).io_initial().type(), netdesc::Int8QTy);
	EXPECT_TRUE(umd_runs(runnable.desc, why)) << why;

	EXPECT_EQ(test_copy->elf, runnable.elf);
	EXPECT_EQ(test_copy->static_constants, runnable.static_constants);
	EXPECT_EQ(test_copy->desc.dma_buffers(0).size(), runnable.desc.dma_buffers(0).size());
	EXPECT_EQ(test_copy->desc.dma_buffers(0).size(), 64u * 64 * 3);
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
				if (s->preOrPost == kSemPre) {
					ASSERT_TRUE(sems.wait(s->semNum, Semaphores::Op(s->semOp), s->semValue, late))
						<< "inference " << it << ": " << wk.fault();
				}
			uint8_t *host = buffers[r->num].data() + r->hostOffset;
			ASSERT_LE(r->hostOffset + r->size, buffers[r->num].size());
			if (r->inOut == kDmaIn)
				std::memcpy(&win[r->devOffset], host, r->size);
			else
				std::memcpy(host, &win[r->devOffset], r->size);
			for (const auto &s : r->semaphoreOps)
				if (s->preOrPost == kSemPost) {
					ASSERT_TRUE(sems.apply(s->semNum, Semaphores::Op(s->semOp), s->semValue));
				}
		}
		ASSERT_EQ(buffers[1], ref.output) << "inference " << it;
	}
	wk.stop();
	EXPECT_FALSE(wk.faulted()) << wk.fault();
	EXPECT_EQ(ctr.iterations.load(), 4u);
}

} // namespace
} // namespace aic100::qpc
