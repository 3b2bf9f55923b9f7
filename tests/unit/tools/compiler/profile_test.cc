// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-compile --profile's report: the compiler's map of instructions to
// layers, and a profiled run of ResNet-50 at 32×32 summed by layer and
// kind of work.
#include "profile.h"

#include <gtest/gtest.h>

#include <optional>

#include "interp.h"

namespace aic100::compiler::profile {
namespace {

using nsp::Op;

// `n` compiled for `nsps` NSPs; a failure to compile fails the test.
std::optional<Compiled> compiled(const Network &n, unsigned nsps)
{
	std::string err;
	Options o;
	o.nsps = nsps;
	auto c = compile(n, o, err);
	EXPECT_TRUE(c) << err;
	return c;
}

TEST(CompilerProfile, EveryInstructionHasItsLayer)
{
	const Network n = resnet50(32);
	const auto c = compiled(n, 3);
	ASSERT_TRUE(c);
	ASSERT_EQ(c->layer_of.size(), c->code.size());
	std::vector<unsigned> gemms(n.layers.size());
	for (size_t i = 0; i < c->code.size(); i++) {
		const int32_t li = c->layer_of[i];
		ASSERT_GE(li, -1);
		ASSERT_LT(li, int32_t(n.layers.size()));
		// Only the loop's and the barriers' semaphores; every GEMM in a layer.
		if (Op(c->code[i].op) == Op::MmI8 || Op(c->code[i].op) == Op::MmI8P)
			gemms.at(size_t(li))++;
		if (li < 0)
			continue;
		if (Op(c->code[i].op) == Op::SemWait || Op(c->code[i].op) == Op::SemInc) {
			EXPECT_EQ(c->code[i].a, kSemBarrier) << "instruction " << i;
		}
	}
	for (size_t li = 0; li < n.layers.size(); li++) {
		const LayerKind k = n.layers[li].kind;
		const bool gemm = k == LayerKind::Conv || k == LayerKind::FullyConnected || k == LayerKind::GlobalAvgPool;
		EXPECT_EQ(gemms[li] > 0, gemm) << n.layers[li].name;
	}
}

TEST(CompilerProfile, ARunSumsByLayerAndKind)
{
	const Network n = resnet50(32);
	const auto c = compiled(n, 2);
	ASSERT_TRUE(c);
	const std::vector<std::vector<int8_t>> inputs = {random_input(n, 1), random_input(n, 2)};
	nsp_run::Profile p;
	const auto run = testing::run_on_interpreter(*c, inputs, 2, &p);
	ASSERT_EQ(run.problem, "");
	const Report r = make_report(n, *c, p, 32, inputs.size(), 1.0);
	ASSERT_EQ(r.layers.size(), n.layers.size() + 2); // and the loop, the switching
	ASSERT_EQ(r.cores.size(), 2u);
	// Convolutions and the FC do their MACs as GEMMs, once per inference.
	for (size_t li = 0; li < n.layers.size(); li++) {
		if (n.layer_macs(li)) {
			EXPECT_EQ(r.layers[li].gemm_macs, n.layer_macs(li)) << n.layers[li].name;
		}
		EXPECT_GT(r.layers[li].t.total(), 0) << n.layers[li].name;
	}
	EXPECT_GT(r.layers[0].t.s[Gemm], 0);
	EXPECT_GT(r.layers[0].t.s[Move], 0); // conv1's IM2COL
	EXPECT_GT(r.layers[0].t.s[Elementwise], 0);
	EXPECT_GE(r.gemm_macs, r.macs);
	// The threads' wall time, all of it, is in the totals.
	Times threads;
	double wall = 0;
	for (const Report::Thread &t : r.threads) {
		threads += t.t;
		wall += t.wall;
		EXPECT_NEAR(t.t.total(), t.wall, 1e-6);
	}
	for (unsigned w = 0; w < kWorks; w++)
		EXPECT_DOUBLE_EQ(threads.s[w], r.total.s[w]) << work_name(w);
	Times layers;
	for (const Report::Layer &l : r.layers)
		layers += l.t;
	EXPECT_NEAR(layers.total(), wall, 1e-6);
	const std::string json = to_json(r);
	EXPECT_NE(json.find("\"name\": \"layer4.2.conv3\""), std::string::npos);
	EXPECT_NE(json.find("\"MMI8\": {\"seconds\": "), std::string::npos);
	// stdout's table: the stages, each once.
	const std::string t = table(r);
	EXPECT_NE(t.find("\nlayer4 "), std::string::npos);
	EXPECT_EQ(t.find("layer4.2.conv3"), std::string::npos);
	EXPECT_EQ(t.find("\nlayer4 "), t.rfind("\nlayer4 "));
}

TEST(CompilerProfile, KindsOfWork)
{
	EXPECT_EQ(work_of(uint8_t(Op::MmI8)), Gemm);
	EXPECT_EQ(work_of(uint8_t(Op::Im2Col)), Move);
	EXPECT_EQ(work_of(uint8_t(Op::ReqI8)), Elementwise);
	EXPECT_EQ(work_of(uint8_t(Op::VAddQI8)), Elementwise);
	EXPECT_EQ(work_of(uint8_t(Op::SemWait)), Wait);
	EXPECT_EQ(work_of(uint8_t(Op::SemInc)), Other);
	EXPECT_EQ(work_of(uint8_t(Op::Li)), Other);
}

} // namespace
} // namespace aic100::compiler::profile
