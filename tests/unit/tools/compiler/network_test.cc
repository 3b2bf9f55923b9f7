// SPDX-License-Identifier: GPL-2.0-or-later
// Networks as data: ResNet-50's topology and generated parameters, the
// scale quantizer, and check()'s refusals.
#include "network.h"

#include <gtest/gtest.h>

#include <cmath>

namespace aic100::compiler {
namespace {

TEST(NetworkResNet50, TopologyOf224)
{
	const Network n = resnet50(224);
	ASSERT_EQ(check(n), "");
	// conv1, maxpool, 16 bottlenecks of 3 convs and an add, 4
	// projections, avgpool, fc.
	EXPECT_EQ(n.layers.size(), 2u + 16 * 4 + 4 + 2);
	EXPECT_EQ(n.tensors[size_t(n.input)], (Shape{224, 224, 3}));
	EXPECT_EQ(n.tensors[size_t(n.layers[0].out)], (Shape{112, 112, 64}));
	EXPECT_EQ(n.tensors[size_t(n.layers[1].out)], (Shape{56, 56, 64}));
	EXPECT_EQ(n.tensors[size_t(n.output)], (Shape{1, 1, 1000}));
	const Layer &pool = n.layers[n.layers.size() - 2];
	EXPECT_EQ(pool.kind, LayerKind::GlobalAvgPool);
	EXPECT_EQ(n.tensors[size_t(pool.in0)], (Shape{7, 7, 2048}));
	uint64_t params = 0, convs = 0;
	for (const Layer &l : n.layers) {
		params += l.weights.size() + l.rq.bias.size() * (l.kind == LayerKind::GlobalAvgPool ? 0 : 1);
		convs += l.kind == LayerKind::Conv;
	}
	EXPECT_EQ(convs, 53u);
	// torchvision's resnet50 has 25,557,032 parameters; without batch
	// norm (folded into the requantization) and with conv biases:
	// 25,502,912 weights, 26,560 conv biases and 1,000 FC biases.
	EXPECT_EQ(params, 25502912u + 26560u + 1000u);
	// About 4.1 G multiply-accumulates per 224×224 image.
	EXPECT_NEAR(double(n.macs()), 4.09e9, 0.02e9);
	// The stride is on the 3×3 conv (v1.5), and on the projection.
	EXPECT_EQ(n.layers[2 + 13 + 2].name, "layer2.0.conv2");
	EXPECT_EQ(n.layers[2 + 13 + 2].stride, 2u);
	EXPECT_EQ(n.layers[2 + 13].name, "layer2.0.downsample");
	EXPECT_EQ(n.layers[2 + 13].stride, 2u);
}

TEST(NetworkResNet50, SameSeedSameNetworkOtherSeedOther)
{
	const Network a = resnet50(32), b = resnet50(32), c = resnet50(32, 1);
	ASSERT_EQ(a.layers.size(), b.layers.size());
	for (size_t i = 0; i < a.layers.size(); i++) {
		EXPECT_EQ(a.layers[i].weights, b.layers[i].weights);
		EXPECT_EQ(a.layers[i].rq.mult, b.layers[i].rq.mult);
	}
	EXPECT_NE(a.layers[0].weights, c.layers[0].weights);
	// The weights do not depend on the resolution.
	EXPECT_EQ(resnet50(64).layers[5].weights, a.layers[5].weights);
}

TEST(NetworkResNet50, RefusesResolutionsThatAreNotMultiplesOf32)
{
	EXPECT_NE(check(resnet50(100)), "");
	EXPECT_NE(check(resnet50(0)), "");
}

TEST(NetworkQuantizeScale, MultiplierInTheTopHalfAndTheShiftThatGoesWithIt)
{
	for (double s : {0.5, 0.75, 1e-3, 3.1e-5, 0.999999999, 1.0 / 49}) {
		const MultShift m = quantize_scale(s);
		EXPECT_GE(m.mult, 1 << 30) << s;
		EXPECT_NEAR(std::ldexp(double(m.mult), -m.shift), s, s * 1e-9) << s;
	}
	// 1 - 2^-40 rounds up to 2^31: the next power of two instead.
	const MultShift one = quantize_scale(1 - 0x1p-40);
	EXPECT_EQ(one.mult, 1 << 30);
	EXPECT_EQ(one.shift, 30);
	const MultShift tiny = quantize_scale(0x1p-70); // below what 62 holds
	EXPECT_EQ(tiny.shift, 62);
	EXPECT_EQ(tiny.mult, 0);
	const MultShift huge = quantize_scale(1e12);
	EXPECT_EQ(huge.shift, 0);
	EXPECT_EQ(huge.mult, INT32_MAX);
	EXPECT_EQ(quantize_scale(0).mult, 0);
	EXPECT_EQ(quantize_scale(-1).mult, 0);
}

TEST(NetworkCheck, RefusesInconsistentNetworks)
{
	Network n = resnet50(32);
	ASSERT_EQ(check(n), "");
	Network a = n;
	a.layers[0].weights.pop_back();
	EXPECT_NE(check(a).find("weights"), std::string::npos);
	Network b = n;
	b.layers[3].rq.shift[0] = 63;
	EXPECT_NE(check(b).find("out of range"), std::string::npos);
	Network c = n;
	c.layers[1].in0 = c.layers[5].out; // reads what is written later
	EXPECT_NE(check(c).find("no earlier layer"), std::string::npos);
	Network d = n;
	d.tensors[size_t(d.layers[0].out)].h++;
	EXPECT_NE(check(d).find("shape"), std::string::npos);
}

} // namespace
} // namespace aic100::compiler
