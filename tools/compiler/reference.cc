// SPDX-License-Identifier: GPL-2.0-or-later
// The reference: each layer as the textbook writes it.
#include "reference.h"

#include <algorithm>
#include <stdexcept>

namespace aic100::compiler::reference {

namespace {

int8_t saturate(__int128 v, bool relu)
{
	const __int128 lo = relu ? 0 : -128;
	return int8_t(v > 127 ? 127 : v < lo ? lo : v);
}

// floor(v / 2^s + 1/2), for any sign of v.
__int128 round_half_up(__int128 v, int s)
{
	if (s == 0)
		return v;
	const __int128 d = __int128(1) << s;
	const __int128 t = v + d / 2;
	// Floor division: C++ truncates towards zero.
	return t >= 0 ? t / d : -((-t + d - 1) / d);
}

void conv(const Layer &l, const Shape &is, const std::vector<int8_t> &in, const Shape &os,
	  std::vector<int8_t> &out)
{
	// int32 as the matrix unit accumulates (no overflow for our layers:
	// |acc| < 2^31 needs k·k·cin < 2^17).
	std::vector<int32_t> acc(os.c);
	for (uint32_t oy = 0; oy < os.h; oy++)
		for (uint32_t ox = 0; ox < os.w; ox++) {
			std::fill(acc.begin(), acc.end(), 0);
			for (uint32_t ky = 0; ky < l.k; ky++) {
				const int64_t y = int64_t(oy) * l.stride + ky - l.pad;
				if (y < 0 || y >= int64_t(is.h))
					continue;
				for (uint32_t kx = 0; kx < l.k; kx++) {
					const int64_t x = int64_t(ox) * l.stride + kx - l.pad;
					if (x < 0 || x >= int64_t(is.w))
						continue;
					const int8_t *px = &in[(uint64_t(y) * is.w + uint64_t(x)) * is.c];
					const int8_t *w = &l.weights[(uint64_t(ky) * l.k + kx) * is.c * os.c];
					for (uint32_t ci = 0; ci < is.c; ci++) {
						const int32_t v = px[ci];
						const int8_t *wr = w + uint64_t(ci) * os.c;
						for (uint32_t co = 0; co < os.c; co++)
							acc[co] += v * wr[co];
					}
				}
			}
			int8_t *o = &out[(uint64_t(oy) * os.w + ox) * os.c];
			for (uint32_t co = 0; co < os.c; co++)
				o[co] = requantize(acc[co], l.rq.bias[co], l.rq.mult[co], l.rq.shift[co], l.rq.relu);
		}
}

void maxpool(const Layer &l, const Shape &is, const std::vector<int8_t> &in, const Shape &os,
	     std::vector<int8_t> &out)
{
	for (uint32_t oy = 0; oy < os.h; oy++)
		for (uint32_t ox = 0; ox < os.w; ox++)
			for (uint32_t c = 0; c < os.c; c++) {
				int best = -129; // below every int8: padding never wins
				for (uint32_t ky = 0; ky < l.k; ky++)
					for (uint32_t kx = 0; kx < l.k; kx++) {
						const int64_t y = int64_t(oy) * l.stride + ky - l.pad;
						const int64_t x = int64_t(ox) * l.stride + kx - l.pad;
						if (y >= 0 && y < int64_t(is.h) && x >= 0 && x < int64_t(is.w))
							best = std::max<int>(best, in[(uint64_t(y) * is.w + x) * is.c + c]);
					}
				out[(uint64_t(oy) * os.w + ox) * os.c + c] = int8_t(std::max(best, -128));
			}
}

} // namespace

int8_t requantize(int64_t acc, int32_t bias, int32_t mult, int32_t shift, bool relu)
{
	const __int128 v = (__int128(acc) + bias) * mult;
	return saturate(round_half_up(v, shift), relu);
}

int8_t add(int8_t x, int8_t y, const AddParams &p)
{
	const __int128 v = __int128(x) * p.mx + __int128(y) * p.my;
	return saturate(round_half_up(v, int(p.shift)), p.relu);
}

std::vector<std::vector<int8_t>> run_all(const Network &n, std::span<const int8_t> input)
{
	std::vector<std::vector<int8_t>> t(n.tensors.size());
	if (input.size() != n.tensors.at(size_t(n.input)).elements())
		throw std::invalid_argument("reference: the input has the wrong number of elements");
	t[size_t(n.input)].assign(input.begin(), input.end());
	for (const Layer &l : n.layers) {
		const Shape &is = n.tensors[size_t(l.in0)], &os = n.tensors[size_t(l.out)];
		const std::vector<int8_t> &in = t[size_t(l.in0)];
		std::vector<int8_t> &out = t[size_t(l.out)];
		out.assign(os.elements(), 0);
		switch (l.kind) {
		case LayerKind::Conv:
			conv(l, is, in, os, out);
			break;
		case LayerKind::MaxPool:
			maxpool(l, is, in, os, out);
			break;
		case LayerKind::Add: {
			const std::vector<int8_t> &y = t[size_t(l.in1)];
			for (uint64_t i = 0; i < out.size(); i++)
				out[i] = add(in[i], y[i], l.add);
			break;
		}
		case LayerKind::GlobalAvgPool:
			for (uint32_t c = 0; c < os.c; c++) {
				int64_t sum = 0;
				for (uint64_t p = 0; p < uint64_t(is.h) * is.w; p++)
					sum += in[p * is.c + c];
				out[c] = requantize(sum, l.rq.bias[c], l.rq.mult[c], l.rq.shift[c], l.rq.relu);
			}
			break;
		case LayerKind::FullyConnected:
			for (uint32_t co = 0; co < os.c; co++) {
				int64_t sum = 0;
				for (uint32_t ci = 0; ci < is.c; ci++)
					sum += int64_t(in[ci]) * l.weights[uint64_t(ci) * os.c + co];
				out[co] = requantize(sum, l.rq.bias[co], l.rq.mult[co], l.rq.shift[co], l.rq.relu);
			}
			break;
		}
	}
	return t;
}

std::vector<int8_t> run(const Network &n, std::span<const int8_t> input)
{
	return std::move(run_all(n, input)[size_t(n.output)]);
}

} // namespace aic100::compiler::reference
