// SPDX-License-Identifier: GPL-2.0-or-later
// A quantized network as data: tensors (int8, NHWC, batch 1), layers with
// their int8 weights and integer requantization parameters. The compiler
// (lower.h) and the plain reference (reference.h) both read it; nothing
// else is shared between them. resnet50() builds the network of the
// 4nsp-quant-resnet50 program with weights from a seeded generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aic100::compiler {

// An int8 activation, NHWC with N = 1: h × w pixels of c channels. A
// vector (the FC layer's input and output) is 1 × 1 × c.
struct Shape {
	uint32_t h = 1, w = 1, c = 1;
	uint64_t elements() const { return uint64_t(h) * w * c; }
	friend bool operator==(const Shape &, const Shape &) = default;
};

// Per output channel j: r = round_half_up((acc + bias[j]) · mult[j] /
// 2^shift[j]), saturated to [-128, 127], then max(r, 0) with ReLU.
// mult is in 0 .. 2^31-1, shift in 0..62.
struct Requant {
	std::vector<int32_t> bias, mult, shift;
	bool relu = false;
};

// A residual add: r = round_half_up((x · mx + y · my) / 2^shift),
// saturated, then ReLU if asked. mx, my in 0..65535, shift in 0..31.
struct AddParams {
	uint32_t mx = 0, my = 0, shift = 0;
	bool relu = false;
};

enum class LayerKind {
	Conv,          // k×k, stride, pad; weights [k][k][cin][cout]; Requant
	MaxPool,       // k×k, stride, pad (padding never wins)
	Add,           // in0 + in1, same shapes; AddParams
	GlobalAvgPool, // per channel Σ over h·w, then Requant (no bias)
	FullyConnected // 1×1×cin → 1×1×cout; weights [cin][cout]; Requant
};
const char *kind_name(LayerKind k);

struct Layer {
	LayerKind kind = LayerKind::Conv;
	std::string name;
	int in0 = -1, in1 = -1, out = -1; // tensor indices
	uint32_t k = 1, stride = 1, pad = 0;
	std::vector<int8_t> weights;
	Requant rq;
	AddParams add;
};

struct Network {
	std::string name;
	std::vector<Shape> tensors;
	std::vector<Layer> layers; // in execution order
	int input = 0, output = -1;
	uint64_t macs() const; // multiply-accumulates of one inference
	uint64_t layer_macs(size_t i) const; // those of layers[i] (convolutions and FC)
};

// Output size of a k×k window moved by `stride` over n padded by `pad`
// on each side; 0 when the window does not fit.
uint32_t window_out(uint32_t n, uint32_t k, uint32_t stride, uint32_t pad);

// The (mult, shift) nearest to a positive real scale: mult in
// [2^30, 2^31), scale ≈ mult / 2^shift. Scales outside what 0..62 can
// express are clamped to it.
struct MultShift {
	int32_t mult;
	int32_t shift;
};
MultShift quantize_scale(double scale);

// Checks the network's shapes, weights and parameters; empty if it is
// sound, else what is wrong.
std::string check(const Network &n);

// ResNet-50 (torchvision's v1.5 topology: 7×7/2 conv, 3×3/2 max pool,
// bottlenecks [3, 4, 6, 3] with the stride on the 3×3 conv and 1×1
// projection shortcuts, global average pool, FC 1000) for a
// `resolution`² × 3 input, int8 throughout. Weights, biases and the
// per-channel requantization come from splitmix64 seeded by `seed` and
// each layer's name; the scales keep activations spread over the int8
// range (docs/compiler.md). resolution must be a multiple of 32.
inline constexpr uint64_t kDefaultSeed = 0x52455335304E4554ull; // "RES50NET"
Network resnet50(uint32_t resolution, uint64_t seed = kDefaultSeed);

// A deterministic int8 input for a network (splitmix64 from `seed`).
std::vector<int8_t> random_input(const Network &n, uint64_t seed);

} // namespace aic100::compiler
