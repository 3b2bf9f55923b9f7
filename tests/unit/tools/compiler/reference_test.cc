// SPDX-License-Identifier: GPL-2.0-or-later
// The reference's arithmetic on cases worked out by hand, and that ResNet-50
// at 224 keeps its activations spread (neither saturated nor dead) with
// the generated parameters.
#include "reference.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace aic100::compiler {
namespace {

TEST(ReferenceRequantize, RoundsHalfUpSaturatesAndClamps)
{
	using reference::requantize;
	// (acc + bias) · mult / 2^shift
	EXPECT_EQ(requantize(10, 0, 1, 2, false), 3);   // 2.5 → 3
	EXPECT_EQ(requantize(-10, 0, 1, 2, false), -2); // -2.5 → -2 (half up)
	EXPECT_EQ(requantize(-11, 0, 1, 2, false), -3); // -2.75 → -3
	EXPECT_EQ(requantize(9, 0, 1, 2, false), 2);    // 2.25 → 2
	EXPECT_EQ(requantize(5, 5, 3, 1, false), 15);   // 30 / 2
	EXPECT_EQ(requantize(1000, 0, 1, 0, false), 127);
	EXPECT_EQ(requantize(-1000, 0, 1, 0, false), -128);
	EXPECT_EQ(requantize(-1000, 0, 1, 0, true), 0);
	EXPECT_EQ(requantize(-3, 0, 1, 0, true), 0);
	EXPECT_EQ(requantize(3, 0, 1, 0, true), 3);
	// The widest operands: no overflow.
	EXPECT_EQ(requantize(INT32_MIN, INT32_MIN, INT32_MAX, 62, false), -2); // -2^32·(2^31-1)/2^62 ≈ -1.99999
	EXPECT_EQ(requantize(INT32_MAX, INT32_MAX, INT32_MAX, 56, false), 127);
	EXPECT_EQ(requantize(INT32_MAX, INT32_MAX, INT32_MAX, 62, false), 2);
}

TEST(ReferenceAdd, ScalesBothSides)
{
	EXPECT_EQ(reference::add(10, 20, {1 << 14, 1 << 14, 14, false}), 30);
	EXPECT_EQ(reference::add(100, 100, {1 << 14, 1 << 14, 14, false}), 127);
	EXPECT_EQ(reference::add(-100, -100, {1 << 14, 1 << 14, 14, false}), -128);
	EXPECT_EQ(reference::add(-100, 50, {1 << 14, 1 << 14, 14, true}), 0);
	EXPECT_EQ(reference::add(3, 0, {1, 0, 1, false}), 2);  // 1.5 → 2
	EXPECT_EQ(reference::add(-3, 0, {1, 0, 1, false}), -1); // -1.5 → -1
	EXPECT_EQ(reference::add(7, 9, {3, 5, 0, false}), 66);
}

TEST(ReferenceConv, ThreeByThreeWithPaddingByHand)
{
	// 3×3×1 input 1..9, one 3×3 filter of ones, pad 1, stride 2: the
	// corners' sums of their 2×2 neighbourhoods.
	Network n;
	n.name = "hand";
	n.tensors = {{3, 3, 1}, {2, 2, 1}};
	Layer l;
	l.kind = LayerKind::Conv;
	l.name = "c";
	l.in0 = 0, l.out = 1;
	l.k = 3, l.stride = 2, l.pad = 1;
	l.weights.assign(9, 1);
	l.rq = {{1}, {1}, {0}, false};
	n.layers.push_back(l);
	n.output = 1;
	ASSERT_EQ(check(n), "");
	const std::vector<int8_t> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	const auto out = reference::run(n, in);
	const std::vector<int8_t> want = {1 + 2 + 4 + 5 + 1, 2 + 3 + 5 + 6 + 1, 4 + 5 + 7 + 8 + 1, 5 + 6 + 8 + 9 + 1};
	EXPECT_EQ(out, want);
}

TEST(ReferenceMaxPool, PaddingNeverWins)
{
	Network n;
	n.name = "pool";
	n.tensors = {{2, 2, 1}, {1, 1, 1}};
	Layer l;
	l.kind = LayerKind::MaxPool;
	l.name = "p";
	l.in0 = 0, l.out = 1;
	l.k = 3, l.stride = 2, l.pad = 1;
	n.layers.push_back(l);
	n.output = 1;
	ASSERT_EQ(check(n), "");
	EXPECT_EQ(reference::run(n, std::vector<int8_t>{-100, -50, -128, -7}), std::vector<int8_t>{-7});
}

// With the generated scales, each layer's output is spread: not mostly
// saturated, not mostly zero (after ReLU at most about half is zero).
TEST(ReferenceResNet50, ActivationsStaySpreadAt64)
{
	const Network n = resnet50(64);
	const auto t = reference::run_all(n, random_input(n, 1));
	for (const Layer &l : n.layers) {
		const auto &v = t[size_t(l.out)];
		size_t sat = 0, zero = 0;
		for (int8_t x : v) {
			sat += x == 127 || x == -128;
			zero += x == 0;
		}
		EXPECT_LT(double(sat) / double(v.size()), 0.1) << l.name;
		EXPECT_LT(double(zero) / double(v.size()), 0.8) << l.name;
	}
	// The logits differ from each other.
	const auto &logits = t[size_t(n.output)];
	EXPECT_GT(*std::max_element(logits.begin(), logits.end()) - *std::min_element(logits.begin(), logits.end()), 40);
}

} // namespace
} // namespace aic100::compiler
