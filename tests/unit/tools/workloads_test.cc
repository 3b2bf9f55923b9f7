// SPDX-License-Identifier: GPL-2.0-or-later
// Every example workload on the interpreter, driven as the DMA Bridge would
// drive it, against its host reference.
#include "workloads.h"

#include <gtest/gtest.h>

#include <aic100/nsp.h>
#include <aic100/nsp_interpreter.h>

#include <cmath>
#include <cstring>
#include <thread>

namespace aic100::workloads {
namespace {

TEST(NspWorkloads, LayoutsAreConsistent)
{
	ASSERT_EQ(examples().size(), 7u);
	for (const Example &e : examples()) {
		const Layout &l = e.layout;
		SCOPED_TRACE(l.name);
		std::string err;
		const auto elf = build(e, err);
		ASSERT_TRUE(elf) << err;
		const auto w = nsp::parse(*elf, err);
		ASSERT_TRUE(w) << err;
		EXPECT_EQ(w->meta.name, l.name);
		EXPECT_EQ(w->meta.nsp_count, l.nsps);
		EXPECT_EQ(w->meta.io_size, l.io_size);
		EXPECT_EQ(l.input.role, "input");
		EXPECT_EQ(l.output.role, "output");
		EXPECT_EQ(e.make_input(1).size(), l.input.size);
		EXPECT_EQ(e.reference(e.make_input(1)).size(), l.output.size);
		// Buffers are disjoint, inside the window, 4 KiB aligned.
		for (size_t i = 0; i < l.buffers.size(); i++) {
			EXPECT_EQ(l.buffers[i].offset % 4096, 0u);
			EXPECT_LE(l.buffers[i].offset + l.buffers[i].size, l.io_size);
			if (i) {
				EXPECT_GE(l.buffers[i].offset, l.buffers[i - 1].offset + l.buffers[i - 1].size);
			}
		}
		// The ELF's segments are exactly the weights.
		size_t weights = 0;
		for (const Buffer &b : l.buffers) {
			if (b.role != "weights")
				continue;
			ASSERT_LT(weights, w->segments.size());
			EXPECT_EQ(w->segments[weights].offset, b.offset);
			EXPECT_EQ(w->segments[weights].memsz, b.size);
			weights++;
		}
		EXPECT_EQ(weights, w->segments.size());
		EXPECT_NE(layouts_json().find("\"name\": \"" + l.name + "\""), std::string::npos);
		EXPECT_NE(layouts_markdown().find("| " + l.name + " |"), std::string::npos);
	}
	EXPECT_TRUE(find("mlp_f32"));
	EXPECT_FALSE(find("nope"));
}

TEST(NspWorkloads, MatchesDetectsMismatches)
{
	const Example &exact = *find("matmul_i8");
	const Example &f32 = *find("mlp_f32");
	const auto in = exact.make_input(3);
	auto want = exact.reference(in), got = want;
	std::string why;
	EXPECT_TRUE(matches(exact, got, want, why));
	got[77] ^= 1;
	EXPECT_FALSE(matches(exact, got, want, why));
	EXPECT_EQ(why.rfind("byte 77 is", 0), 0u) << why;
	auto fw = f32.reference(f32.make_input(3)), fg = fw;
	float v;
	std::memcpy(&v, &fg[8], 4);
	v += 1e-7f * (1 + std::fabs(v)); // within tolerance
	std::memcpy(&fg[8], &v, 4);
	EXPECT_TRUE(matches(f32, fg, fw, why)) << why;
	v += 1e-3f;
	std::memcpy(&fg[8], &v, 4);
	EXPECT_FALSE(matches(f32, fg, fw, why));
	EXPECT_EQ(why.rfind("element 2 is", 0), 0u) << why;
	EXPECT_FALSE(matches(f32, std::span(fg).first(4), fw, why));
}

// Plays the host for `iterations` inputs, keeping the next input queued
// while the previous output is still unread, as a DMA Bridge with many
// requests would.
// bit_exact: the output must also equal the reference bit for bit (the
// fp32 examples, whose references follow docs/nsp.md's definitions).
void run_example(const Example &e, int iterations, bool bit_exact = false)
{
	const Layout &l = e.layout;
	std::string err;
	const auto elf = build(e, err);
	ASSERT_TRUE(elf) << err;
	const auto w = nsp::parse(*elf, err);
	ASSERT_TRUE(w) << err;
	std::vector<uint8_t> win(l.io_size, 0xCD);
	ASSERT_TRUE(nsp::load_segments(*w, win));
	Semaphores sems;
	nsp::Counters ctr;
	nsp::Workers wk;
	ASSERT_TRUE(wk.start(*w, win, sems, ctr));
	const auto never = [] { return false; };
	auto put_input = [&](int i) {
		ASSERT_TRUE(sems.wait(l.sem_in, Semaphores::Op::WaitEq, 0, never));
		const auto in = e.make_input(uint64_t(i) + 1);
		std::memcpy(&win[l.input.offset], in.data(), in.size());
		sems.apply(l.sem_in, Semaphores::Op::Inc, 1);
	};
	put_input(0);
	for (int i = 0; i < iterations; i++) {
		if (i + 1 < iterations)
			put_input(i + 1);
		ASSERT_TRUE(sems.wait(l.sem_out, Semaphores::Op::WaitGt0, 0, never));
		const std::vector<uint8_t> out(win.begin() + long(l.output.offset),
					       win.begin() + long(l.output.offset + l.output.size));
		const auto want = e.reference(e.make_input(uint64_t(i) + 1));
		std::string why;
		ASSERT_TRUE(matches(e, out, want, why)) << l.name << " iteration " << i << ": " << why;
		if (bit_exact) {
			ASSERT_EQ(out, want) << l.name << " iteration " << i;
		}
		sems.apply(l.sem_out, Semaphores::Op::Dec, 1);
	}
	for (int i = 0; i < 1000 && ctr.iterations.load() < uint64_t(iterations); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	EXPECT_EQ(ctr.iterations.load(), uint64_t(iterations));
	EXPECT_TRUE(wk.running());
	wk.stop();
	EXPECT_FALSE(wk.faulted()) << wk.fault();
}

TEST(NspWorkloads, Copy)
{
	run_example(*find("copy"), 200);
}

TEST(NspWorkloads, VaddF32)
{
	run_example(*find("vadd_f32"), 200);
}

TEST(NspWorkloads, MatmulI8)
{
	run_example(*find("matmul_i8"), 100);
}

// The same weights packed for MMI8P: the same outputs as matmul_i8's.
TEST(NspWorkloads, MatmulI8Packed)
{
	run_example(*find("matmul_i8p"), 100);
	const Example &plain = *find("matmul_i8"), &packed = *find("matmul_i8p");
	const auto in = plain.make_input(7);
	EXPECT_EQ(packed.make_input(7), in);
	EXPECT_EQ(packed.reference(in), plain.reference(in));
}

TEST(NspWorkloads, MatmulF32)
{
	run_example(*find("matmul_f32"), 100, true);
}

TEST(NspWorkloads, Mlp)
{
	run_example(*find("mlp_f32"), 100, true);
}

TEST(NspWorkloads, Add4Nsp)
{
	run_example(*find("add_4nsp"), 200);
}

} // namespace
} // namespace aic100::workloads
