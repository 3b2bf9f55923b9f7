// SPDX-License-Identifier: GPL-2.0-or-later
// Every example workload packed as a program container, read back, and run
// on the interpreter the way the UMD would drive it: the window set up as
// ACTIVATE does (data segments, then the constants at const_offset), and
// per inference the metadata's DMA requests in order, each with its
// presync, transfer and postsync, on the user buffers the network
// descriptor names.
#include "examples.h"

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

Program pack(const workloads::Example &e)
{
	std::string err;
	const auto spec = example_spec(e, err);
	EXPECT_TRUE(spec) << err;
	const auto file = spec ? build_qpc(*spec, err) : std::nullopt;
	EXPECT_TRUE(file) << err;
	auto p = file ? read_qpc(*file, err) : std::nullopt;
	EXPECT_TRUE(p) << err;
	return p ? std::move(*p) : Program{};
}

TEST(QpcExamples, PackedAsTheLayoutsSay)
{
	ASSERT_EQ(workloads::examples().size(), 7u);
	for (const workloads::Example &e : workloads::examples()) {
		const workloads::Layout &l = e.layout;
		SCOPED_TRACE(l.name);
		const Program p = pack(e);
		ASSERT_TRUE(p.metadata);
		EXPECT_EQ(p.workload.meta.name, l.name);
		EXPECT_EQ(p.workload.meta.nsp_count, l.nsps);
		EXPECT_EQ(p.workload.meta.io_size, l.io_size);
		EXPECT_EQ(p.metadata->numNSPs, l.nsps);
		EXPECT_EQ(p.desc.num_cores(), l.nsps);
		// The inputs tile the input buffer, the outputs the output buffer.
		uint64_t in = 0, out = 0;
		for (const netdesc::IoBinding &b : p.desc.inputs())
			in += p.desc.dma_buffers(int(b.transformseq(0).copy_dma_buffer().buffer_num())).size();
		for (const netdesc::IoBinding &b : p.desc.outputs())
			out += p.desc.dma_buffers(int(b.transformseq(0).copy_dma_buffer().buffer_num())).size();
		EXPECT_EQ(in, l.input.size);
		EXPECT_EQ(out, l.output.size);
		for (const auto &r : p.metadata->dmaRequests) {
			const workloads::Buffer &b = r->inOut == kDmaIn ? l.input : l.output;
			EXPECT_GE(r->devOffset, b.offset);
			EXPECT_LE(r->devOffset + r->size, b.offset + b.size);
		}
		// The weights are the constants, no longer data segments.
		std::string err;
		const auto plain = nsp::parse(*workloads::build(e, err), err);
		ASSERT_TRUE(plain) << err;
		std::vector<uint8_t> window(l.io_size, 0), from_qpc(l.io_size, 0);
		ASSERT_TRUE(nsp::load_segments(*plain, window));
		ASSERT_TRUE(nsp::load_segments(p.workload, from_qpc));
		const auto &k = p.static_constants;
		if (!k.empty())
			std::copy(k.begin(), k.end(), from_qpc.begin() + long(p.workload.meta.const_offset));
		EXPECT_EQ(window, from_qpc);
		EXPECT_EQ(p.workload.program, plain->program);
		size_t weights = 0;
		for (const workloads::Buffer &b : l.buffers)
			weights += b.role == "weights";
		EXPECT_EQ(p.workload.segments.size() + weights, plain->segments.size());
		EXPECT_EQ(k.empty(), weights == 0);
		EXPECT_TRUE(p.dynamic_constants.empty());
	}
	EXPECT_EQ(umd_test_dir("add_4nsp"), "aic100/v2/4nsp/4nsp-add");
	EXPECT_EQ(umd_test_dir("copy"), "");
}

// Runs `p` for `iterations` inferences and checks each output.
void run_from_qpc(const workloads::Example &e, const Program &p, int iterations)
{
	const meta::MetadataT &m = *p.metadata;
	std::vector<uint8_t> win(p.workload.meta.io_size, 0xCD);
	ASSERT_TRUE(nsp::load_segments(p.workload, win));
	std::vector<uint8_t> consts = p.static_constants;
	consts.insert(consts.end(), p.dynamic_constants.begin(), p.dynamic_constants.end());
	ASSERT_LE(p.workload.meta.const_offset + consts.size(), win.size());
	std::copy(consts.begin(), consts.end(), win.begin() + long(p.workload.meta.const_offset));
	Semaphores sems;
	for (size_t i = 0; i < m.semaphoreInitState.size(); i++)
		sems.apply(unsigned(i), Semaphores::Op::Init, uint16_t(m.semaphoreInitState[i]));
	nsp::Counters ctr;
	nsp::Workers wk;
	ASSERT_TRUE(wk.start(p.workload, win, sems, ctr));
	const auto deadline = Clock::now() + std::chrono::seconds(60);
	const auto late = [&deadline] { return Clock::now() > deadline; };

	for (int it = 0; it < iterations; it++) {
		// The user buffers: inputs cut from the example's input in order.
		const auto input = e.make_input(uint64_t(it) + 7);
		std::vector<std::vector<uint8_t>> buffers(size_t(p.desc.dma_buffers_size()));
		size_t at = 0;
		for (const netdesc::IoBinding &b : p.desc.inputs()) {
			const auto &copy = b.transformseq(0).copy_dma_buffer();
			auto &buf = buffers[copy.buffer_num()];
			buf.assign(p.desc.dma_buffers(int(copy.buffer_num())).size(), 0);
			const size_t n = buf.size() - copy.offset();
			ASSERT_LE(at + n, input.size());
			std::memcpy(&buf[copy.offset()], &input[at], n);
			at += n;
		}
		ASSERT_EQ(at, input.size());
		for (int i = 0; i < p.desc.dma_buffers_size(); i++)
			if (p.desc.dma_buffers(i).dir() == netdesc::Out)
				buffers[size_t(i)].assign(p.desc.dma_buffers(i).size(), 0);
		for (const auto &r : m.dmaRequests) {
			for (const auto &s : r->semaphoreOps)
				if (s->preOrPost == kSemPre) {
					const auto op = Semaphores::Op(s->semOp);
					if (op >= Semaphores::Op::WaitEq) {
						ASSERT_TRUE(sems.wait(s->semNum, op, s->semValue, late))
							<< "iteration " << it << ": stuck on semaphore " << s->semNum;
					} else {
						sems.apply(s->semNum, op, s->semValue);
					}
				}
			uint8_t *host = buffers[r->num].data() + r->hostOffset;
			if (r->inOut == kDmaIn)
				std::memcpy(&win[r->devOffset], host, r->size);
			else
				std::memcpy(host, &win[r->devOffset], r->size);
			for (const auto &s : r->semaphoreOps)
				if (s->preOrPost == kSemPost) {
					ASSERT_TRUE(sems.apply(s->semNum, Semaphores::Op(s->semOp), s->semValue));
				}
		}
		std::vector<uint8_t> got;
		for (const netdesc::IoBinding &b : p.desc.outputs()) {
			const auto &copy = b.transformseq(0).copy_dma_buffer();
			const auto &buf = buffers[copy.buffer_num()];
			got.insert(got.end(), buf.begin() + copy.offset(), buf.end());
		}
		std::string why;
		ASSERT_TRUE(workloads::matches(e, got, e.reference(input), why))
			<< e.layout.name << " iteration " << it << ": " << why;
	}
	wk.stop();
	EXPECT_FALSE(wk.faulted()) << wk.fault();
}

class QpcExampleRun : public testing::TestWithParam<std::string> {};

TEST_P(QpcExampleRun, ComputesFromItsContainer)
{
	const workloads::Example &e = *workloads::find(GetParam());
	const Program p = pack(e);
	ASSERT_TRUE(p.metadata);
	run_from_qpc(e, p, 50);
}

INSTANTIATE_TEST_SUITE_P(Examples, QpcExampleRun,
			 testing::Values("copy", "vadd_f32", "matmul_i8", "matmul_i8p", "matmul_f32", "mlp_f32", "add_4nsp"));

} // namespace
} // namespace aic100::qpc
