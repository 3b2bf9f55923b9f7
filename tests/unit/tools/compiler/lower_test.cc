// SPDX-License-Identifier: GPL-2.0-or-later
// The lowering: its pieces (the row and channel split, REQI8's parameter
// blocks, where barriers go), small networks that isolate one layer kind,
// and ResNet-50 at small resolutions, each run on the interpreter and
// compared with the reference byte for byte.
#include "lower.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "interp.h"
#include "reference.h"

namespace aic100::compiler {
namespace {

using testing::run_on_interpreter;

// Seeded int8 values (splitmix64's finaliser over an index).
int8_t noise(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return int8_t((z ^ (z >> 31)) >> 56);
}

Requant requant(uint32_t c, int32_t mult, int32_t shift, bool relu, int32_t bias_step = 0)
{
	Requant q;
	q.relu = relu;
	for (uint32_t j = 0; j < c; j++) {
		q.bias.push_back(bias_step * int32_t(j) - bias_step * int32_t(c) / 2);
		q.mult.push_back(mult + int32_t(j) * 1000);
		q.shift.push_back(shift);
	}
	return q;
}

// Appends layer `l` writing a new tensor of shape `out`, which becomes the
// network's output.
void append(Network &n, Layer l, Shape out)
{
	n.tensors.push_back(out);
	l.out = int(n.tensors.size()) - 1;
	n.layers.push_back(std::move(l));
	n.output = n.layers.back().out;
}

// A convolution of tensor `in0` with seeded weights.
Layer conv_layer(const std::string &name, int in0, uint32_t cin, uint32_t cout, uint32_t k, uint32_t stride,
		 uint32_t pad, uint64_t seed, Requant rq)
{
	Layer l;
	l.kind = LayerKind::Conv;
	l.name = name;
	l.in0 = in0;
	l.k = k, l.stride = stride, l.pad = pad;
	l.weights.resize(size_t(k) * k * cin * cout);
	for (size_t i = 0; i < l.weights.size(); i++)
		l.weights[i] = noise(seed, i);
	l.rq = std::move(rq);
	return l;
}

Layer add_layer(int in0, int in1, AddParams p)
{
	Layer a;
	a.kind = LayerKind::Add;
	a.name = "add";
	a.in0 = in0, a.in1 = in1;
	a.add = p;
	return a;
}

// A network of one convolution (optionally followed by more layers by the
// caller).
Network one_conv(Shape in, uint32_t cout, uint32_t k, uint32_t stride, uint32_t pad, bool relu)
{
	Network n;
	n.name = "one-conv";
	n.tensors.push_back(in);
	n.input = 0;
	append(n, conv_layer("conv", 0, in.c, cout, k, stride, pad, 7, requant(cout, 1 << 30, 38, relu, 300)),
	       {window_out(in.h, k, stride, pad), window_out(in.w, k, stride, pad), cout});
	return n;
}

std::vector<int8_t> input_for(const Network &n, uint64_t seed)
{
	std::vector<int8_t> v(n.tensors[size_t(n.input)].elements());
	for (size_t i = 0; i < v.size(); i++)
		v[i] = noise(seed, i);
	return v;
}

// Compiles `n` for `nsps` NSPs, runs `count` inputs and compares every
// output with the reference's.
void expect_matches_reference(const Network &n, unsigned nsps, unsigned count = 2)
{
	std::string err;
	Options o;
	o.nsps = nsps;
	const auto c = compile(n, o, err);
	ASSERT_TRUE(c) << err;
	std::vector<std::vector<int8_t>> inputs;
	for (unsigned i = 0; i < count; i++)
		inputs.push_back(input_for(n, 100 + i));
	const auto r = run_on_interpreter(*c, inputs);
	ASSERT_EQ(r.problem, "");
	ASSERT_EQ(r.outputs.size(), inputs.size());
	EXPECT_EQ(r.iterations, count);
	for (unsigned i = 0; i < count; i++) {
		const auto want = reference::run(n, inputs[i]);
		ASSERT_EQ(r.outputs[i].size(), want.size());
		for (size_t j = 0; j < want.size(); j++)
			ASSERT_EQ(int(r.outputs[i][j]), int(want[j])) << "inference " << i << ", output byte " << j;
	}
}

TEST(CompilerSplit, RowsGoToTheFirstNspsFirst)
{
	const auto s = split(7, 4);
	ASSERT_EQ(s.size(), 4u);
	const uint32_t first[] = {0, 2, 4, 6}, count[] = {2, 2, 2, 1};
	for (int k = 0; k < 4; k++) {
		EXPECT_EQ(s[k].first, first[k]);
		EXPECT_EQ(s[k].count, count[k]);
	}
	const auto t = split(1, 4); // one row: NSPs 1..3 idle
	EXPECT_EQ(t[0].count, 1u);
	EXPECT_EQ(t[3].count, 0u);
	EXPECT_EQ(t[3].first, 1u);
}

TEST(CompilerRequantBlock, HeaderThenBiasMultShiftOfTheChannels)
{
	Requant q = requant(6, 1000, 20, true, 5);
	const auto b = requant_block(q, 2, 3);
	ASSERT_EQ(b.size(), nsp::req_block_size(3));
	uint32_t w[4 + 9];
	std::memcpy(w, b.data(), sizeof(w));
	EXPECT_EQ(w[0], 3u);
	EXPECT_EQ(w[1], nsp::kReqRelu);
	EXPECT_EQ(w[2], 0u);
	EXPECT_EQ(w[3], 0u);
	for (int j = 0; j < 3; j++) {
		EXPECT_EQ(int32_t(w[4 + j]), q.bias[2 + j]);
		EXPECT_EQ(int32_t(w[7 + j]), q.mult[2 + j]);
		EXPECT_EQ(int32_t(w[10 + j]), q.shift[2 + j]);
	}
}

// im2col lowering: padding on every side, strides that skip columns, a
// 1×1 stride-2 conv (IM2COL as a subsampler), and a 1×1/1 conv that reads
// the activation as it is.
TEST(CompilerConv, Im2colLoweringsMatchTheReference)
{
	expect_matches_reference(one_conv({9, 7, 3}, 8, 3, 2, 1, true), 4);
	expect_matches_reference(one_conv({8, 8, 5}, 16, 7, 2, 3, false), 3);
	expect_matches_reference(one_conv({6, 6, 20}, 12, 1, 2, 0, false), 4);
	expect_matches_reference(one_conv({5, 6, 33}, 17, 1, 1, 0, true), 2);
	expect_matches_reference(one_conv({4, 4, 8}, 8, 3, 1, 1, true), 1);
}

// The weights are packed at compile time into MMI8P's layout and declared:
// one region per layer (per NSP for a layer split by channels), in the
// constants, carried by the workload ELF as .aic.packed.
TEST(CompilerPacked, TheElfDeclaresEveryPackedWeightMatrix)
{
	const Network n = one_conv({9, 7, 3}, 8, 3, 2, 1, true);
	std::string err;
	Options o;
	o.nsps = 2;
	const auto c = compile(n, o, err);
	ASSERT_TRUE(c) << err;
	ASSERT_EQ(c->packed.size(), 1u);
	const nsp::PackedRegion &r = c->packed[0];
	EXPECT_EQ(r.k, 3u * 3 * 3);
	EXPECT_EQ(r.n, 8u);
	EXPECT_EQ(r.size, nsp::packed_b_size(27, 8));
	EXPECT_GE(r.offset, c->meta.const_offset);
	EXPECT_LE(r.offset + r.size, c->meta.const_offset + c->constants.size());
	const auto elf = workload_elf(*c, err);
	ASSERT_TRUE(elf) << err;
	const auto w = nsp::parse(*elf, err);
	ASSERT_TRUE(w) << err;
	EXPECT_EQ(w->packed, c->packed);
}

TEST(CompilerPool, MaxPoolAndGlobalAveragePoolMatchTheReference)
{
	Network n = one_conv({10, 10, 4}, 16, 3, 1, 1, false); // negative values reach the pool
	Layer p;
	p.kind = LayerKind::MaxPool;
	p.name = "pool";
	p.in0 = 1;
	p.k = 3, p.stride = 2, p.pad = 1;
	n.tensors.push_back({5, 5, 16});
	p.out = 2;
	n.layers.push_back(p);
	Layer g;
	g.kind = LayerKind::GlobalAvgPool;
	g.name = "gap";
	g.in0 = 2;
	g.rq = requant(16, 1 << 30, 34, false);
	n.tensors.push_back({1, 1, 16});
	g.out = 3;
	n.layers.push_back(g);
	Layer fc;
	fc.kind = LayerKind::FullyConnected;
	fc.name = "fc";
	fc.in0 = 3;
	fc.weights.resize(16 * 10);
	for (size_t i = 0; i < fc.weights.size(); i++)
		fc.weights[i] = noise(9, i);
	fc.rq = requant(10, 1 << 30, 36, false, 50);
	n.tensors.push_back({1, 1, 10});
	fc.out = 4;
	n.layers.push_back(fc);
	n.output = 4;
	ASSERT_EQ(check(n), "");
	expect_matches_reference(n, 4, 3);
	expect_matches_reference(n, 3);
}

// A residual block in miniature: a 3×3 conv, and an add of its result to
// the block's input, with ReLU.
TEST(CompilerAdd, ResidualAddMatchesTheReference)
{
	Network n = one_conv({6, 5, 8}, 8, 3, 1, 1, false);
	append(n, add_layer(1, 0, {11000, 13000, 14, true}), {6, 5, 8});
	expect_matches_reference(n, 4);
}

TEST(CompilerBarriers, OnlyWhereALayerReadsAnotherNspsRows)
{
	const Network n = resnet50(64);
	std::string err;
	const auto c = compile(n, {}, err);
	ASSERT_TRUE(c) << err;
	// conv1 → maxpool; per bottleneck one before its 3×3 conv; one before
	// each stride-2 projection (stages 2-4); one before the pool. Stage 4
	// (2×2) splits channels from its 3×3 convs on: one more before each
	// of its three 1×1 expansions and before its last two blocks' first
	// conv, which read every channel of the block before.
	EXPECT_EQ(c->barriers, 1u + 16u + 3u + 1u + 3u + 2u);
	ASSERT_EQ(c->plan.size(), n.layers.size());
	EXPECT_NE(c->plan[1].find("after a barrier"), std::string::npos) << c->plan[1];
	EXPECT_EQ(c->plan[2].find("after a barrier"), std::string::npos) << c->plan[2];
}

// Output channels > 64 × pixels: each NSP computes its slice of the
// channels for every pixel (slices of uneven size too), and an add that
// follows reads only its own channels, with no barrier between them.
TEST(CompilerSplit, WideConvolutionsSplitTheirChannels)
{
	// 2×2 output, 300 channels: 300 > 64·4.
	Network n = one_conv({4, 4, 16}, 300, 3, 2, 1, false);
	for (unsigned nsps : {2u, 3u, 4u, 7u})
		expect_matches_reference(n, nsps);
	// One pixel, 65 channels on 16 NSPs: slices of 5 and 4 channels.
	expect_matches_reference(one_conv({1, 1, 8}, 65, 1, 1, 0, true), 16);

	// conv (channels) → conv 1×1 (channels) → add of the two.
	append(n, conv_layer("conv2", 1, 300, 300, 1, 1, 0, 11, requant(300, 1 << 30, 40, false, 100)), {2, 2, 300});
	append(n, add_layer(2, 1, {12000, 9000, 14, true}), {2, 2, 300});
	ASSERT_EQ(check(n), "");
	std::string err;
	Options o;
	o.nsps = 4;
	const auto c = compile(n, o, err);
	ASSERT_TRUE(c) << err;
	ASSERT_EQ(c->plan.size(), 3u);
	EXPECT_NE(c->plan[0].find("nsp1 im2col+mmi8p channels 75+75 (M=4 N=75 K=144)"), std::string::npos)
		<< c->plan[0];
	EXPECT_NE(c->plan[1].find("after a barrier"), std::string::npos) << c->plan[1];
	EXPECT_NE(c->plan[2].find("nsp3 channels 225+75 of 4 pixels"), std::string::npos) << c->plan[2];
	EXPECT_EQ(c->plan[2].find("after a barrier"), std::string::npos) << c->plan[2];
	EXPECT_EQ(c->barriers, 1u);
	for (unsigned nsps : {1u, 3u, 4u})
		expect_matches_reference(n, nsps, 3);
	// On one NSP nothing is split.
	o.nsps = 1;
	const auto one = compile(n, o, err);
	ASSERT_TRUE(one) << err;
	EXPECT_EQ(one->plan[0].find("channels"), std::string::npos) << one->plan[0];
}

// Where ResNet-50's late, wide layers go by channels and the rest by rows.
TEST(CompilerSplit, ResNet50AtSixtyFourSplitsOnlyStageFourByChannels)
{
	const Network n = resnet50(64);
	std::string err;
	Options o;
	o.nsps = 2;
	const auto c = compile(n, o, err);
	ASSERT_TRUE(c) << err;
	for (size_t i = 0; i < n.layers.size(); i++) {
		const bool channels = c->plan[i].find(" channels ") != std::string::npos &&
				      c->plan[i].find("all channels") == std::string::npos;
		const std::string &name = n.layers[i].name;
		const bool stage4_wide = name.starts_with("layer4.") && name != "layer4.0.conv1";
		EXPECT_EQ(channels, stage4_wide || name == "fc") << c->plan[i];
	}
}

TEST(CompilerErrors, RefusesWhatItCannotLower)
{
	std::string err;
	Network bad = resnet50(48); // not a multiple of 32
	EXPECT_FALSE(compile(bad, {}, err));
	EXPECT_NE(err.find("resnet50-48: the input or output is not a tensor"), std::string::npos) << err;
	Options o;
	o.nsps = 17;
	EXPECT_FALSE(compile(one_conv({4, 4, 3}, 4, 3, 1, 1, true), o, err));
	EXPECT_NE(err.find("17 NSPs"), std::string::npos) << err;
	EXPECT_FALSE(compile(one_conv({4, 4, 3}, 4, 3, 9, 1, true), {}, err)); // stride 9 > 7
	EXPECT_NE(err.find("geometry"), std::string::npos) << err;
}

// The network of 4nsp-quant-resnet50 at 32×32 (stage 4 is 1×1: three NSPs
// idle there) and 64×64, bit for bit.
TEST(CompilerResNet50, MatchesTheReferenceAt32On4Nsps)
{
	expect_matches_reference(resnet50(32), 4, 2);
}

TEST(CompilerResNet50, MatchesTheReferenceAt64On4Nsps)
{
	expect_matches_reference(resnet50(64), 4, 1);
}

TEST(CompilerResNet50, MatchesTheReferenceAt32On3Nsps)
{
	expect_matches_reference(resnet50(32), 3, 1);
}

} // namespace
} // namespace aic100::compiler
