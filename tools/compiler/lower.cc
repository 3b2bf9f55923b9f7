// SPDX-License-Identifier: GPL-2.0-or-later
// Lowering of a network to one NSP program (see lower.h for the plan).
#include "lower.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <aic100/sem.h>

#include "nspasm.h"

namespace aic100::compiler {

namespace {

using nsp::Instr;
using nsp::Op;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kLine = 64; // alignment of the activations and blocks

uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

// Temporaries of the generated code; r1 = k, r2 = n, r20 the phase.
enum Reg : uint8_t { rK = 1, rA = 10, rB, rC, rD, rE, rF, rG, rPhase = 20, rT = 21 };

class Emitter {
public:
	size_t here() const { return code.size(); }
	void emit(Op op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, uint32_t imm32 = 0, uint64_t imm64 = 0)
	{
		code.push_back(Instr{uint8_t(op), a, b, c, imm32, imm64});
		layer_of.push_back(layer);
	}
	// Appends another emitter's code (no labels of its own).
	void append(const Emitter &o)
	{
		code.insert(code.end(), o.code.begin(), o.code.end());
		layer_of.insert(layer_of.end(), o.layer_of.begin(), o.layer_of.end());
	}
	void li(uint8_t r, uint64_t v) { emit(Op::Li, r, 0, 0, 0, v); }
	// A jump or branch to a label bound later.
	void jump(Op op, const std::string &label, uint8_t a = 0, uint8_t b = 0)
	{
		fixups.emplace_back(here(), label);
		emit(op, a, b);
	}
	void bind(const std::string &label) { labels[label] = uint32_t(here()); }
	bool resolve(std::string &err)
	{
		for (const auto &[at, label] : fixups) {
			const auto it = labels.find(label);
			if (it == labels.end()) {
				err = "internal: label " + label + " was never bound";
				return false;
			}
			code[at].imm32 = it->second;
		}
		return true;
	}

	std::vector<Instr> code;
	std::vector<int32_t> layer_of; // per instruction (Compiled::layer_of)
	int32_t layer = -1;            // of the instructions emitted from now on
	std::map<std::string, uint32_t> labels;
	std::vector<std::pair<size_t, std::string>> fixups;
};

// How a layer's output is divided between the NSPs.
enum class Split : uint8_t {
	Whole,    // not divided (each NSP its own copy, or one slice per NSP of an FC)
	Rows,     // NSP k writes output rows split(h, n)[k]
	Channels, // NSP k writes output channels split(c, n)[k] of every pixel
};

// Where a tensor lives and who wrote it since the last barrier.
struct Place {
	uint64_t offset = 0;
	uint64_t per_nsp = 0; // non-zero: each NSP has its own copy, this far apart
	Split split = Split::Whole;
	bool dirty = false; // written since the last barrier
};

class Lowering {
public:
	Lowering(const Network &net, const Options &opt) : n_(net), nsps_(opt.nsps) {}

	std::optional<Compiled> run(const Options &opt, std::string &err)
	{
		if (!check_limits(err))
			return std::nullopt;
		layout();
		constants();
		code(err);
		if (!err.empty())
			return std::nullopt;
		out_.meta.name = opt.name.empty() ? n_.name : opt.name;
		out_.meta.nsp_count = uint16_t(nsps_);
		out_.meta.io_size = io_size_;
		out_.meta.const_offset = uint32_t(const_offset_);
		out_.meta.entry = 0;
		if (io_size_ > nsp::kMaxIoSize || const_offset_ > UINT32_MAX) {
			err = "the window would be " + std::to_string(io_size_) + " bytes (at most 4 GiB, constants below 4 GiB)";
			return std::nullopt;
		}
		return std::move(out_);
	}

private:
	const Shape &shape(int t) const { return n_.tensors[size_t(t)]; }

	bool check_limits(std::string &err)
	{
		for (const Layer &l : n_.layers) {
			const Shape &i = shape(l.in0), &o = shape(l.out);
			const std::string at = "layer " + l.name + ": ";
			if (l.kind == LayerKind::Conv || l.kind == LayerKind::MaxPool) {
				if (i.h > nsp::kGeomMaxHwc || i.w > nsp::kGeomMaxHwc || i.c > nsp::kGeomMaxHwc ||
				    l.k > nsp::kGeomMaxK || l.stride > nsp::kGeomMaxStride || l.pad > nsp::kGeomMaxPad) {
					err = at + "its window geometry does not fit IM2COL/MAXPOOLI8's fields";
					return false;
				}
			}
			if (l.kind != LayerKind::FullyConnected &&
			    ((l.in0 >= 0 && producer_is_pool(l.in0)) || (l.in1 >= 0 && producer_is_pool(l.in1)))) {
				err = at + "only an FC layer may read a global average pool's output";
				return false;
			}
			const uint64_t kdim = l.kind == LayerKind::Conv ? uint64_t(l.k) * l.k * i.c : i.c;
			if (kdim >= nsp::kMaxDim || o.c >= nsp::kMaxDim || uint64_t(o.h) * o.w >= nsp::kMaxDim ||
			    uint64_t(i.h) * i.w >= nsp::kMaxDim) {
				err = at + "a GEMM dimension reaches 2^21";
				return false;
			}
		}
		return true;
	}

	bool producer_is_pool(int t) const
	{
		for (const Layer &l : n_.layers)
			if (l.out == t)
				return l.kind == LayerKind::GlobalAvgPool;
		return false;
	}

	uint64_t alloc(uint64_t size, uint64_t align = kLine)
	{
		at_ = align_up(at_, align);
		const uint64_t r = at_;
		at_ += size;
		return r;
	}

	// Input, output, activations, then each NSP's scratch, then the
	// constants.
	void layout()
	{
		place_.assign(n_.tensors.size(), Place{});
		const Shape &in = shape(n_.input), &out = shape(n_.output);
		out_.input_offset = place_[size_t(n_.input)].offset = alloc(in.elements(), kPage);
		out_.input_bytes = in.elements();
		out_.output_offset = place_[size_t(n_.output)].offset = alloc(out.elements(), kPage);
		out_.output_bytes = out.elements();
		at_ = align_up(at_, kPage);
		uint64_t col = 0, acc = 0;
		for (const Layer &l : n_.layers) {
			const Shape &i = shape(l.in0), &o = shape(l.out);
			uint64_t rows = 0;
			for (const Slice &s : split(o.h, nsps_))
				rows = std::max<uint64_t>(rows, s.count);
			switch (l.kind) {
			case LayerKind::Conv:
				if (by_channels(l)) { // every pixel, a slice of the channels
					if (!row_local(l))
						col = std::max(col, uint64_t(o.h) * o.w * l.k * l.k * i.c);
					acc = std::max(acc, uint64_t(o.h) * o.w * split(o.c, nsps_)[0].count * 4);
					break;
				}
				if (!row_local(l))
					col = std::max(col, rows * o.w * l.k * l.k * i.c);
				acc = std::max(acc, rows * o.w * o.c * 4);
				break;
			case LayerKind::GlobalAvgPool:
				acc = std::max<uint64_t>(acc, uint64_t(o.c) * 4);
				break;
			case LayerKind::FullyConnected:
				acc = std::max<uint64_t>(acc, uint64_t(split(o.c, nsps_)[0].count) * 4);
				break;
			default:
				break;
			}
			if (l.out == n_.output)
				continue;
			if (l.kind == LayerKind::GlobalAvgPool) { // every NSP its own copy
				const uint64_t stride = align_up(o.elements(), kLine);
				place_[size_t(l.out)].offset = alloc(stride * nsps_);
				place_[size_t(l.out)].per_nsp = stride;
			} else {
				place_[size_t(l.out)].offset = alloc(o.elements());
			}
		}
		col_size_ = align_up(col, kLine);
		acc_size_ = align_up(acc, kLine);
		scratch_ = alloc((col_size_ + acc_size_) * nsps_, kPage);
		const_offset_ = align_up(at_, kPage);
		at_ = 0; // constants are placed from here on relative to const_offset_
	}

	uint64_t col_buf(unsigned k) const { return scratch_ + k * (col_size_ + acc_size_); }
	uint64_t acc_buf(unsigned k) const { return col_buf(k) + col_size_; }

	uint64_t add_const(const void *data, uint64_t size)
	{
		const uint64_t off = align_up(out_.constants.size(), kLine);
		out_.constants.resize(off + size);
		if (size)
			std::memcpy(out_.constants.data() + off, data, size);
		return const_offset_ + off;
	}

	// A layer's constant B [kdim × cols] as MMI8P takes it (docs/nsp.md,
	// "Packed weights"): packed here, once, rather than by every MMI8 as
	// it runs, and shared read-only by the NSPs that run the layer.
	uint64_t add_packed(const int8_t *b, uint64_t kdim, uint32_t cols)
	{
		std::vector<uint8_t> packed(nsp::packed_b_size(kdim, cols));
		nsp::pack_b(std::span(b, kdim * cols), uint32_t(kdim), cols, packed);
		const uint64_t at = add_const(packed.data(), packed.size());
		out_.packed.push_back({at, packed.size(), uint32_t(kdim), cols});
		return at;
	}

	// Weights and requantization blocks of each layer, in layer order.
	void constants()
	{
		weights_.assign(n_.layers.size(), {});
		blocks_.assign(n_.layers.size(), {});
		for (size_t li = 0; li < n_.layers.size(); li++) {
			const Layer &l = n_.layers[li];
			const Shape &i = shape(l.in0), &o = shape(l.out);
			switch (l.kind) {
			case LayerKind::Conv: {
				// [k][k][cin][cout] is already B = [k·k·cin × cout].
				const uint64_t kdim = uint64_t(l.k) * l.k * i.c;
				if (!by_channels(l)) {
					weights_[li].push_back(add_packed(l.weights.data(), kdim, o.c));
					const auto b = requant_block(l.rq, 0, o.c);
					blocks_[li].push_back(add_const(b.data(), b.size()));
					break;
				}
				for (const Slice &s : split(o.c, nsps_))
					add_slice(li, l, kdim, o.c, s);
				break;
			}
			case LayerKind::GlobalAvgPool: {
				const std::vector<int8_t> ones(uint64_t(i.h) * i.w, 1);
				weights_[li].push_back(add_const(ones.data(), ones.size()));
				const auto b = requant_block(l.rq, 0, o.c);
				blocks_[li].push_back(add_const(b.data(), b.size()));
				break;
			}
			case LayerKind::FullyConnected:
				for (const Slice &s : split(o.c, nsps_))
					add_slice(li, l, i.c, o.c, s);
				break;
			default:
				break;
			}
		}
		io_size_ = align_up(const_offset_ + out_.constants.size(), kPage);
	}

	// One NSP's columns s of a layer's weights B = [kdim × cols], packed
	// on their own, and their requantization block.
	void add_slice(size_t li, const Layer &l, uint64_t kdim, uint32_t cols, const Slice &s)
	{
		if (!s.count) { // more NSPs than channels: this one idles
			weights_[li].push_back(0);
			blocks_[li].push_back(0);
			return;
		}
		std::vector<int8_t> w(kdim * s.count);
		for (uint64_t r = 0; r < kdim; r++)
			std::memcpy(&w[r * s.count], &l.weights[r * cols + s.first], s.count);
		weights_[li].push_back(add_packed(w.data(), kdim, s.count));
		const auto b = requant_block(l.rq, s.first, s.count);
		blocks_[li].push_back(add_const(b.data(), b.size()));
	}

	// Whether a convolution splits its output channels rather than its
	// rows. Split by rows, every NSP reads all of B (k·k·cin × cout) for
	// its share of the M = h·w pixels; split by channels, all of A (M ×
	// k·k·cin) for its share of B: per NSP M/n·K + K·N against M·K + K·N/n
	// bytes, so channels read less once N > M. But a layer split by
	// channels needs every pixel of its input, so every convolution in a
	// run of them waits at a barrier, where rows need one per bottleneck.
	// Channels pay only where B dwarfs A: N > kChannelSplitRatio · M, the
	// last stage of ResNet-50 (docs/compiler.md has the A/B runs).
	static constexpr uint64_t kChannelSplitRatio = 64;
	bool by_channels(const Layer &l) const
	{
		const Shape &o = shape(l.out);
		return nsps_ > 1 && l.kind == LayerKind::Conv && o.c > kChannelSplitRatio * o.h * o.w;
	}

	// An add follows the split of its first input's producer, so that it
	// reads only what the same NSP wrote.
	Split split_of(const Layer &l) const
	{
		switch (l.kind) {
		case LayerKind::Conv:
			return by_channels(l) ? Split::Channels : Split::Rows;
		case LayerKind::MaxPool:
			return Split::Rows;
		case LayerKind::Add:
			return place_[size_t(l.in0)].split == Split::Channels ? Split::Channels : Split::Rows;
		default:
			return Split::Whole;
		}
	}

	// A layer whose output rows need only the same rows of its inputs.
	static bool row_local(const Layer &l)
	{
		return l.kind == LayerKind::Add || (l.kind == LayerKind::Conv && l.k == 1 && l.stride == 1 && l.pad == 0);
	}

	bool needs_barrier(const Layer &l) const
	{
		const Split mine = split_of(l);
		for (int t : {l.in0, l.in1}) {
			if (t < 0)
				continue;
			const Place &p = place_[size_t(t)];
			if (!p.dirty || p.per_nsp)
				continue; // unchanged, or written by this NSP only
			if (mine == Split::Rows && row_local(l) && p.split == Split::Rows && shape(t).h == shape(l.out).h)
				continue; // the same rows, by the same NSP
			if (l.kind == LayerKind::Add && mine == Split::Channels && p.split == Split::Channels &&
			    shape(t).c == shape(l.out).c)
				continue; // the same channels, by the same NSP
			return true;
		}
		return false;
	}

	void barrier(std::vector<Emitter> &body)
	{
		barriers_++;
		for (Emitter &e : body) {
			e.emit(Op::SemInc, kSemBarrier, 0, 0, 1);
			e.emit(Op::SemWait, kSemBarrier, uint8_t(nsp::Cond::Ge), 0, uint32_t(barriers_ * nsps_));
		}
		for (Place &p : place_)
			p.dirty = false;
	}

	// Layer li as NSP k sees it when the layer is split by output rows:
	// its shapes and places, and its rows of the output.
	struct Share {
		const Layer &l;
		const Shape &i, &o;
		const Place &pi, &po;
		Slice rows;
		uint64_t row_pixels, out_at;
	};

	Share share_of(size_t li, unsigned k)
	{
		const Layer &l = n_.layers[li];
		const Shape &o = shape(l.out);
		const Place &po = place_[size_t(l.out)];
		const Slice rows = split(o.h, nsps_)[k];
		return {l,    shape(l.in0), o, place_[size_t(l.in0)], po, rows, uint64_t(rows.count) * o.w,
			po.offset + uint64_t(rows.first) * o.w * o.c};
	}

	static std::string rows_text(const Slice &rows)
	{
		return "rows " + std::to_string(rows.first) + "+" + std::to_string(rows.count);
	}

	// One NSP's share of one layer.
	std::string lower_layer(size_t li, unsigned k, Emitter &e)
	{
		const Layer &l = n_.layers[li];
		if (split_of(l) == Split::Channels)
			return lower_by_channels(li, k, e);
		const Share s = share_of(li, k);
		switch (l.kind) {
		case LayerKind::Conv:
			return lower_conv(li, k, s, e);
		case LayerKind::MaxPool:
			if (!s.rows.count)
				return "-";
			e.li(rA, s.out_at);
			e.li(rB, s.pi.offset);
			e.li(rC, uint64_t(s.rows.first) | uint64_t(s.rows.count) << 32);
			e.emit(Op::MaxPoolI8, rA, rB, rC, 0, nsp::pack_geom({s.i.h, s.i.w, s.i.c, l.k, l.stride, l.pad}));
			return rows_text(s.rows);
		case LayerKind::Add:
			return lower_add(s, e);
		case LayerKind::GlobalAvgPool:
			return lower_avgpool(li, k, s, e);
		case LayerKind::FullyConnected:
			return lower_fc(li, k, s, e);
		}
		return "?";
	}

	// NSP k's rows of a convolution: IM2COL unless the rows are the
	// GEMM's matrix already, MMI8 and REQI8.
	std::string lower_conv(size_t li, unsigned k, const Share &s, Emitter &e)
	{
		const Layer &l = s.l;
		if (!s.rows.count)
			return "-";
		const uint64_t kdim = uint64_t(l.k) * l.k * s.i.c;
		std::string what;
		if (row_local(l)) {
			e.li(rA, s.pi.offset + uint64_t(s.rows.first) * s.i.w * s.i.c);
			what = "mmi8p";
		} else {
			e.li(rA, col_buf(k));
			e.li(rB, s.pi.offset);
			e.li(rC, uint64_t(s.rows.first) | uint64_t(s.rows.count) << 32);
			e.emit(Op::Im2Col, rA, rB, rC, 0, nsp::pack_geom({s.i.h, s.i.w, s.i.c, l.k, l.stride, l.pad}));
			what = "im2col+mmi8p";
		}
		e.li(rD, weights_[li][0]);
		e.li(rE, acc_buf(k));
		e.emit(Op::MmI8P, rE, rA, rD, 0, nsp::pack_mnk(s.row_pixels, s.o.c, kdim));
		e.li(rF, blocks_[li][0]);
		e.li(rG, s.row_pixels * s.o.c);
		e.li(rB, s.out_at);
		e.emit(Op::ReqI8, rB, rE, rF, rG);
		return what + " " + rows_text(s.rows) + " (M=" + std::to_string(s.row_pixels) +
		       " N=" + std::to_string(s.o.c) + " K=" + std::to_string(kdim) + ")";
	}

	// NSP k's rows of a quantized add.
	std::string lower_add(const Share &s, Emitter &e)
	{
		if (!s.rows.count)
			return "-";
		const Layer &l = s.l;
		const uint64_t skip = uint64_t(s.rows.first) * s.o.w * s.o.c;
		e.li(rA, s.out_at);
		e.li(rB, s.pi.offset + skip);
		e.li(rC, place_[size_t(l.in1)].offset + skip);
		e.li(rD, s.row_pixels * s.o.c);
		e.emit(Op::VAddQI8, rA, rB, rC, rD, nsp::pack_addq({l.add.mx, l.add.my, l.add.shift, l.add.relu}));
		return rows_text(s.rows);
	}

	// Column sums as a GEMM: ones[1 × h·w] × x[h·w × c], every channel into
	// NSP k's own copy.
	std::string lower_avgpool(size_t li, unsigned k, const Share &s, Emitter &e)
	{
		e.li(rA, weights_[li][0]);
		e.li(rB, s.pi.offset);
		e.li(rE, acc_buf(k));
		e.emit(Op::MmI8, rE, rA, rB, 0, nsp::pack_mnk(1, s.o.c, uint64_t(s.i.h) * s.i.w));
		e.li(rF, blocks_[li][0]);
		e.li(rG, s.o.c);
		e.li(rC, s.po.offset + k * s.po.per_nsp);
		e.emit(Op::ReqI8, rC, rE, rF, rG);
		return "all channels into its own copy (M=1 N=" + std::to_string(s.o.c) +
		       " K=" + std::to_string(uint64_t(s.i.h) * s.i.w) + ")";
	}

	// NSP k's output channels of a fully connected layer.
	std::string lower_fc(size_t li, unsigned k, const Share &s, Emitter &e)
	{
		const Slice ch = split(s.o.c, nsps_)[k];
		if (!ch.count)
			return "-";
		e.li(rA, s.pi.offset + k * s.pi.per_nsp);
		e.li(rD, weights_[li][k]);
		e.li(rE, acc_buf(k));
		e.emit(Op::MmI8P, rE, rA, rD, 0, nsp::pack_mnk(1, ch.count, s.i.c));
		e.li(rF, blocks_[li][k]);
		e.li(rG, ch.count);
		e.li(rB, s.po.offset + ch.first);
		e.emit(Op::ReqI8, rB, rE, rF, rG);
		return "channels " + std::to_string(ch.first) + "+" + std::to_string(ch.count) + " (M=1 N=" +
		       std::to_string(ch.count) + " K=" + std::to_string(s.i.c) + ")";
	}

	// NSP k's channels of every pixel of a convolution or an add. The
	// output's pixels are c channels apart, so REQI8/VADDQI8 run once per
	// pixel on that NSP's channels.
	std::string lower_by_channels(size_t li, unsigned k, Emitter &e)
	{
		const Layer &l = n_.layers[li];
		const Shape &i = shape(l.in0), &o = shape(l.out);
		const Place &pi = place_[size_t(l.in0)], &po = place_[size_t(l.out)];
		const Slice ch = split(o.c, nsps_)[k];
		if (!ch.count)
			return "-";
		const uint64_t pixels = uint64_t(o.h) * o.w;
		const std::string what = "channels " + std::to_string(ch.first) + "+" + std::to_string(ch.count);
		if (l.kind == LayerKind::Add) {
			const uint64_t y = place_[size_t(l.in1)].offset;
			e.li(rD, ch.count);
			for (uint64_t p = 0; p < pixels; p++) {
				const uint64_t at = p * o.c + ch.first;
				e.li(rA, po.offset + at);
				e.li(rB, pi.offset + at);
				e.li(rC, y + at);
				e.emit(Op::VAddQI8, rA, rB, rC, rD,
				       nsp::pack_addq({l.add.mx, l.add.my, l.add.shift, l.add.relu}));
			}
			return what + " of " + std::to_string(pixels) + " pixels";
		}
		const uint64_t kdim = uint64_t(l.k) * l.k * i.c;
		std::string how;
		if (row_local(l)) {
			e.li(rA, pi.offset);
			how = "mmi8p";
		} else {
			e.li(rA, col_buf(k));
			e.li(rB, pi.offset);
			e.li(rC, uint64_t(o.h) << 32);
			e.emit(Op::Im2Col, rA, rB, rC, 0, nsp::pack_geom({i.h, i.w, i.c, l.k, l.stride, l.pad}));
			how = "im2col+mmi8p";
		}
		e.li(rD, weights_[li][k]);
		e.li(rE, acc_buf(k));
		e.emit(Op::MmI8P, rE, rA, rD, 0, nsp::pack_mnk(pixels, ch.count, kdim));
		e.li(rF, blocks_[li][k]);
		e.li(rG, ch.count);
		for (uint64_t p = 0; p < pixels; p++) {
			e.li(rB, po.offset + p * o.c + ch.first);
			e.li(rE, acc_buf(k) + p * ch.count * 4);
			e.emit(Op::ReqI8, rB, rE, rF, rG);
		}
		return how + " " + what + " (M=" + std::to_string(pixels) + " N=" + std::to_string(ch.count) +
		       " K=" + std::to_string(kdim) + ")";
	}

	void code(std::string &err)
	{
		std::vector<Emitter> body(nsps_);
		for (size_t li = 0; li < n_.layers.size(); li++) {
			const Layer &l = n_.layers[li];
			const bool b = needs_barrier(l);
			if (b)
				barrier(body); // the previous layer's: it waits for that layer's rows
			for (Emitter &e : body)
				e.layer = int32_t(li);
			const Split how = split_of(l); // before this layer's output is marked
			std::string line = l.name + " (" + kind_name(l.kind) + (b ? ", after a barrier" : "") + "):";
			for (unsigned k = 0; k < nsps_; k++)
				line += " nsp" + std::to_string(k) + " " + lower_layer(li, k, body[k]) + ";";
			line.pop_back();
			out_.plan.push_back(line);
			Place &po = place_[size_t(l.out)];
			po.dirty = true;
			po.split = how;
		}
		out_.barriers = barriers_;
		if (barriers_ * nsps_ > sem::kMax) {
			err = "the network needs " + std::to_string(barriers_) + " barriers; the semaphore counts to 4095";
			return;
		}

		// The loop of workloads.h around the NSPs' bodies.
		Emitter e;
		e.li(rPhase, 0);
		e.bind("loop");
		e.emit(Op::SemWait, kSemIn, uint8_t(nsp::Cond::Ge), 0, 1);
		e.emit(Op::SemWait, kSemOut, uint8_t(nsp::Cond::Eq), 0, 0);
		for (unsigned k = 1; k < nsps_; k++) {
			e.li(rT, k);
			e.jump(Op::Beq, "nsp" + std::to_string(k), rK, rT);
		}
		for (unsigned k = 0; k < nsps_; k++) {
			e.bind("nsp" + std::to_string(k));
			e.append(body[k]);
			e.jump(Op::Jmp, "tail");
		}
		e.bind("tail");
		e.emit(Op::SemInc, kSemDone, 0, 0, 1);
		e.jump(Op::Bne, "follower", rK, 0);
		e.emit(Op::SemWait, kSemDone, uint8_t(nsp::Cond::Eq), 0, nsps_);
		e.emit(Op::SemSet, kSemDone, 0, 0, 0);
		e.emit(Op::SemSet, kSemBarrier, 0, 0, 0); // every NSP is past its last barrier
		e.emit(Op::SemDec, kSemIn, 0, 0, 1);
		e.emit(Op::SemInc, kSemOut, 0, 0, 1);
		e.emit(Op::Mark);
		e.jump(Op::Beq, "phase1", rPhase, 0);
		e.emit(Op::SemSet, kSemPhase, 0, 0, 0);
		e.li(rPhase, 0);
		e.jump(Op::Jmp, "loop");
		e.bind("phase1");
		e.emit(Op::SemSet, kSemPhase, 0, 0, 1);
		e.li(rPhase, 1);
		e.jump(Op::Jmp, "loop");
		e.bind("follower");
		e.jump(Op::Beq, "wait1", rPhase, 0);
		e.emit(Op::SemWait, kSemPhase, uint8_t(nsp::Cond::Eq), 0, 0);
		e.li(rPhase, 0);
		e.jump(Op::Jmp, "loop");
		e.bind("wait1");
		e.emit(Op::SemWait, kSemPhase, uint8_t(nsp::Cond::Eq), 0, 1);
		e.li(rPhase, 1);
		e.jump(Op::Jmp, "loop");
		if (e.resolve(err)) {
			out_.code = std::move(e.code);
			out_.layer_of = std::move(e.layer_of);
		}
	}

	const Network &n_;
	unsigned nsps_;
	Compiled out_;
	std::vector<Place> place_;
	std::vector<std::vector<uint64_t>> weights_, blocks_; // per layer (FC: per NSP)
	uint64_t at_ = 0, col_size_ = 0, acc_size_ = 0, scratch_ = 0, const_offset_ = 0, io_size_ = 0;
	unsigned barriers_ = 0;
};

void put32(std::vector<uint8_t> &b, size_t at, uint32_t v)
{
	std::memcpy(&b[at], &v, 4);
}

} // namespace

std::vector<Slice> split(uint32_t total, unsigned parts)
{
	std::vector<Slice> s(parts);
	if (!parts)
		return s;
	uint32_t at = 0;
	for (unsigned k = 0; k < parts; k++) {
		s[k].first = at;
		s[k].count = total / parts + (k < total % parts ? 1 : 0);
		at += s[k].count;
	}
	return s;
}

std::vector<uint8_t> requant_block(const Requant &q, uint32_t first, uint32_t count)
{
	std::vector<uint8_t> b(nsp::req_block_size(count), 0);
	put32(b, 0, count);
	put32(b, 4, q.relu ? nsp::kReqRelu : 0);
	for (uint32_t j = 0; j < count; j++) {
		const size_t c = first + j;
		put32(b, nsp::kReqHeaderSize + 4 * j, uint32_t(q.bias.at(c)));
		put32(b, nsp::kReqHeaderSize + 4 * (count + j), uint32_t(q.mult.at(c)));
		put32(b, nsp::kReqHeaderSize + 4 * (2 * count + j), uint32_t(q.shift.at(c)));
	}
	return b;
}

nsp::Workload Compiled::workload() const
{
	nsp::Workload w;
	w.meta = meta;
	w.program = code;
	w.packed = packed;
	return w;
}

std::vector<uint8_t> Compiled::initial_window() const
{
	std::vector<uint8_t> window(meta.io_size, 0);
	std::copy(constants.begin(), constants.end(), window.begin() + long(meta.const_offset));
	return window;
}

std::optional<Compiled> compile(const Network &n, const Options &o, std::string &err)
{
	if (const std::string why = check(n); !why.empty()) {
		err = n.name + ": " + why;
		return std::nullopt;
	}
	if (o.nsps < 1 || o.nsps > nsp::kMaxNsps) {
		err = std::to_string(o.nsps) + " NSPs: a program runs on 1.." + std::to_string(nsp::kMaxNsps);
		return std::nullopt;
	}
	return Lowering(n, o).run(o, err);
}

std::optional<std::vector<uint8_t>> workload_elf(const Compiled &c, std::string &err)
{
	return nspasm::write_elf(c.meta, c.code, {}, c.packed, err);
}

} // namespace aic100::compiler
