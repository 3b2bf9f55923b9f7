// SPDX-License-Identifier: GPL-2.0-or-later
// Networks as data, and ResNet-50 with generated weights.
#include "network.h"

#include <cmath>
#include <string_view>

namespace aic100::compiler {

namespace {

// splitmix64: the same stream on every host and compiler.
class Rng {
public:
	explicit Rng(uint64_t seed) : s_(seed) {}
	uint64_t next()
	{
		uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		return z ^ (z >> 31);
	}
	int8_t i8() { return int8_t(next() >> 56); }
	double unit() { return double(next() >> 11) * 0x1p-53; } // [0, 1)

private:
	uint64_t s_;
};

uint64_t fnv1a(std::string_view s)
{
	uint64_t h = 0xCBF29CE484222325ull;
	for (char c : s)
		h = (h ^ uint8_t(c)) * 0x100000001B3ull;
	return h;
}

// Root mean square of an int8 uniform on [-128, 127] (the generator's
// weights and the test inputs).
constexpr double kRmsUniformI8 = 73.9;
// The spread the requantization aims at before ReLU: about 4 sigma to the
// int8 limit.
constexpr double kTargetSigma = 32.0;
// Shift of the residual adds' 16-bit multipliers.
constexpr uint32_t kAddShift = 14;

// Builds the layers while tracking each tensor's estimated root mean
// square, from which the scales follow.
class Builder {
public:
	Builder(Network &n, uint64_t seed) : n_(n), seed_(seed) {}

	int tensor(Shape s, double rms)
	{
		n_.tensors.push_back(s);
		rms_.push_back(rms);
		return int(n_.tensors.size()) - 1;
	}

	int conv(const std::string &name, int in, uint32_t cout, uint32_t k, uint32_t stride, bool relu)
	{
		const Shape s = n_.tensors[size_t(in)];
		const uint32_t pad = k / 2;
		Layer l;
		l.kind = LayerKind::Conv;
		l.name = name;
		l.in0 = in;
		l.k = k, l.stride = stride, l.pad = pad;
		Rng r(seed_ ^ fnv1a(name));
		l.weights.resize(size_t(k) * k * s.c * cout);
		for (int8_t &w : l.weights)
			w = r.i8();
		const double sigma_acc = std::sqrt(double(k) * k * s.c) * kRmsUniformI8 * rms_[size_t(in)];
		l.rq = requant(r, cout, kTargetSigma / sigma_acc, sigma_acc / 4, relu);
		l.out = tensor({window_out(s.h, k, stride, pad), window_out(s.w, k, stride, pad), cout},
			       relu ? kTargetSigma / std::sqrt(2.0) : kTargetSigma);
		n_.layers.push_back(std::move(l));
		return n_.layers.back().out;
	}

	int maxpool(const std::string &name, int in, uint32_t k, uint32_t stride, uint32_t pad)
	{
		const Shape s = n_.tensors[size_t(in)];
		Layer l;
		l.kind = LayerKind::MaxPool;
		l.name = name;
		l.in0 = in;
		l.k = k, l.stride = stride, l.pad = pad;
		// The maximum of k² values is larger than their spread; 1.5 is
		// a rough figure, used only for the next scale.
		l.out = tensor({window_out(s.h, k, stride, pad), window_out(s.w, k, stride, pad), s.c},
			       rms_[size_t(in)] * 1.5);
		n_.layers.push_back(std::move(l));
		return n_.layers.back().out;
	}

	int add(const std::string &name, int x, int y)
	{
		Layer l;
		l.kind = LayerKind::Add;
		l.name = name;
		l.in0 = x, l.in1 = y;
		const double rx = rms_[size_t(x)], ry = rms_[size_t(y)];
		const double m = kTargetSigma / std::sqrt(rx * rx + ry * ry) * double(1u << kAddShift);
		const uint32_t mq = uint32_t(std::min(65535.0, std::round(m)));
		l.add = {mq, mq, kAddShift, true};
		l.out = tensor(n_.tensors[size_t(x)], kTargetSigma / std::sqrt(2.0));
		n_.layers.push_back(std::move(l));
		return n_.layers.back().out;
	}

	int global_avg_pool(const std::string &name, int in)
	{
		const Shape s = n_.tensors[size_t(in)];
		Layer l;
		l.kind = LayerKind::GlobalAvgPool;
		l.name = name;
		l.in0 = in;
		l.k = s.h;
		Rng r(seed_ ^ fnv1a(name));
		// Twice the mean: post-ReLU means are small.
		l.rq = requant(r, s.c, 2.0 / double(uint64_t(s.h) * s.w), 0, false);
		l.out = tensor({1, 1, s.c}, rms_[size_t(in)]);
		n_.layers.push_back(std::move(l));
		return n_.layers.back().out;
	}

	int fully_connected(const std::string &name, int in, uint32_t cout)
	{
		const Shape s = n_.tensors[size_t(in)];
		Layer l;
		l.kind = LayerKind::FullyConnected;
		l.name = name;
		l.in0 = in;
		Rng r(seed_ ^ fnv1a(name));
		l.weights.resize(size_t(s.c) * cout);
		for (int8_t &w : l.weights)
			w = r.i8();
		const double sigma_acc = std::sqrt(double(s.c)) * kRmsUniformI8 * rms_[size_t(in)];
		l.rq = requant(r, cout, kTargetSigma / sigma_acc, sigma_acc / 4, false);
		l.out = tensor({1, 1, cout}, kTargetSigma);
		n_.layers.push_back(std::move(l));
		return n_.layers.back().out;
	}

private:
	// Per channel: the scale times a factor in [0.75, 1.25), a bias
	// uniform in ±bias_range (none for 0).
	static Requant requant(Rng &r, uint32_t cout, double scale, double bias_range, bool relu)
	{
		Requant q;
		q.relu = relu;
		for (uint32_t j = 0; j < cout; j++) {
			const MultShift ms = quantize_scale(scale * (0.75 + 0.5 * r.unit()));
			q.mult.push_back(ms.mult);
			q.shift.push_back(ms.shift);
			q.bias.push_back(bias_range > 0 ? int32_t(std::lround((2 * r.unit() - 1) * bias_range)) : 0);
		}
		return q;
	}

	Network &n_;
	uint64_t seed_;
	std::vector<double> rms_;
};

} // namespace

const char *kind_name(LayerKind k)
{
	switch (k) {
	case LayerKind::Conv:
		return "conv";
	case LayerKind::MaxPool:
		return "maxpool";
	case LayerKind::Add:
		return "add";
	case LayerKind::GlobalAvgPool:
		return "avgpool";
	case LayerKind::FullyConnected:
		return "fc";
	}
	return "?";
}

uint32_t window_out(uint32_t n, uint32_t k, uint32_t stride, uint32_t pad)
{
	if (!k || !stride || k > n + 2 * pad)
		return 0;
	return (n + 2 * pad - k) / stride + 1;
}

MultShift quantize_scale(double scale)
{
	if (!(scale > 0))
		return {0, 0};
	int e;
	const double m = std::frexp(scale, &e); // scale = m · 2^e, m in [0.5, 1)
	int64_t mult = std::llround(m * 0x1p31);
	if (mult == (int64_t(1) << 31)) {
		mult >>= 1;
		e++;
	}
	int shift = 31 - e;
	if (shift > 62) { // tiny: the smallest shift that holds it
		mult = std::llround(scale * 0x1p62);
		shift = 62;
	} else if (shift < 0) {
		mult = std::min<int64_t>(std::llround(scale), INT32_MAX);
		shift = 0;
	}
	return {int32_t(mult), shift};
}

uint64_t Network::layer_macs(size_t li) const
{
	const Layer &l = layers[li];
	const Shape &o = tensors[size_t(l.out)];
	const Shape &i = tensors[size_t(l.in0)];
	if (l.kind == LayerKind::Conv)
		return o.elements() * l.k * l.k * i.c;
	if (l.kind == LayerKind::FullyConnected)
		return uint64_t(i.c) * o.c;
	return 0;
}

uint64_t Network::macs() const
{
	uint64_t total = 0;
	for (size_t i = 0; i < layers.size(); i++)
		total += layer_macs(i);
	return total;
}

std::string check(const Network &n)
{
	const int nt = int(n.tensors.size());
	auto ok_tensor = [nt](int t) { return t >= 0 && t < nt; };
	if (!ok_tensor(n.input) || !ok_tensor(n.output))
		return "the input or output is not a tensor";
	std::vector<bool> written(size_t(nt), false);
	written[size_t(n.input)] = true;
	for (const Layer &l : n.layers) {
		const std::string at = "layer " + l.name + ": ";
		if (!ok_tensor(l.in0) || !ok_tensor(l.out) || (l.kind == LayerKind::Add && !ok_tensor(l.in1)))
			return at + "a tensor index is out of range";
		if (!written[size_t(l.in0)] || (l.kind == LayerKind::Add && !written[size_t(l.in1)]))
			return at + "reads a tensor no earlier layer wrote";
		if (written[size_t(l.out)])
			return at + "writes a tensor that was already written";
		written[size_t(l.out)] = true;
		const Shape &i = n.tensors[size_t(l.in0)], &o = n.tensors[size_t(l.out)];
		const Requant &q = l.rq;
		const bool has_rq = l.kind == LayerKind::Conv || l.kind == LayerKind::GlobalAvgPool ||
				    l.kind == LayerKind::FullyConnected;
		if (has_rq) {
			if (q.bias.size() != o.c || q.mult.size() != o.c || q.shift.size() != o.c)
				return at + "requantization tables are not one entry per output channel";
			for (uint32_t j = 0; j < o.c; j++)
				if (q.mult[j] < 0 || q.shift[j] < 0 || q.shift[j] > 62)
					return at + "channel " + std::to_string(j) + " has a multiplier or shift out of range";
		}
		switch (l.kind) {
		case LayerKind::Conv:
		case LayerKind::MaxPool:
			if (o.h != window_out(i.h, l.k, l.stride, l.pad) || o.w != window_out(i.w, l.k, l.stride, l.pad) ||
			    !o.h || !o.w || l.pad >= l.k)
				return at + "output shape does not follow from the window";
			if (l.kind == LayerKind::MaxPool && o.c != i.c)
				return at + "pooling changes the channel count";
			if (l.kind == LayerKind::Conv && l.weights.size() != uint64_t(l.k) * l.k * i.c * o.c)
				return at + "weights are not k·k·cin·cout";
			break;
		case LayerKind::Add:
			if (!(n.tensors[size_t(l.in1)] == i) || !(o == i))
				return at + "operands and result differ in shape";
			if (l.add.mx > 65535 || l.add.my > 65535 || l.add.shift > 31)
				return at + "add parameters out of range";
			break;
		case LayerKind::GlobalAvgPool:
			if (o.h != 1 || o.w != 1 || o.c != i.c)
				return at + "output is not 1×1×cin";
			break;
		case LayerKind::FullyConnected:
			if (i.h != 1 || i.w != 1 || o.h != 1 || o.w != 1 || l.weights.size() != uint64_t(i.c) * o.c)
				return at + "not a 1×1×cin → 1×1×cout layer with cin·cout weights";
			break;
		}
	}
	if (!written[size_t(n.output)])
		return "no layer writes the output";
	return "";
}

Network resnet50(uint32_t resolution, uint64_t seed)
{
	Network n;
	n.name = "resnet50-" + std::to_string(resolution);
	if (resolution < 32 || resolution % 32)
		return n; // check() refuses it: no layers write the output
	Builder b(n, seed);
	n.input = b.tensor({resolution, resolution, 3}, kRmsUniformI8);
	int x = b.conv("conv1", n.input, 64, 7, 2, true);
	x = b.maxpool("maxpool", x, 3, 2, 1);
	const uint32_t blocks[4] = {3, 4, 6, 3};
	uint32_t width = 64;
	for (unsigned stage = 0; stage < 4; stage++, width *= 2) {
		for (uint32_t i = 0; i < blocks[stage]; i++) {
			const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
			const uint32_t stride = (i == 0 && stage > 0) ? 2 : 1;
			int shortcut = x;
			if (i == 0)
				shortcut = b.conv(p + "downsample", x, width * 4, 1, stride, false);
			int y = b.conv(p + "conv1", x, width, 1, 1, true);
			y = b.conv(p + "conv2", y, width, 3, stride, true);
			y = b.conv(p + "conv3", y, width * 4, 1, 1, false);
			x = b.add(p + "add", y, shortcut);
		}
	}
	x = b.global_avg_pool("avgpool", x);
	n.output = b.fully_connected("fc", x, 1000);
	return n;
}

std::vector<int8_t> random_input(const Network &n, uint64_t seed)
{
	Rng r(seed ^ fnv1a(n.name + ".input"));
	std::vector<int8_t> v(n.tensors.at(size_t(n.input)).elements());
	for (int8_t &x : v)
		x = r.i8();
	return v;
}

} // namespace aic100::compiler
