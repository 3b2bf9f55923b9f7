// SPDX-License-Identifier: GPL-2.0-or-later
// The GEMM kernels behind MMF32 and MMI8 (nsp_kernels.cc), on every code
// path this CPU can run: results bit for bit those of docs/nsp.md's
// definitions (int8: exact int32 sums, wrapping; fp32: one fused
// multiply-add per k, k ascending), whatever the blocking. REQI8's and
// VADDQI8's paths likewise, against their definitions.
#include "aic100/nsp_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "aic100/nsp.h"
#include "gemm_reference.h"

namespace aic100::nsp::kernels {
namespace {

using aic100::test::reference_f32;
using aic100::test::reference_i8;

std::vector<float> random_f32(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::uniform_real_distribution<float> d(-1, 1);
	std::vector<float> v(n);
	for (float &x : v)
		x = d(rng);
	return v;
}

std::vector<int8_t> random_i8(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<int8_t> v(n);
	for (int8_t &x : v)
		x = int8_t(rng());
	return v;
}

const uint8_t *bytes(const void *p)
{
	return static_cast<const uint8_t *>(p);
}

// Equal bit for bit, except that any NaN equals any NaN (the payload of a
// NaN result is not defined).
::testing::AssertionResult same_f32(const std::vector<float> &got, const std::vector<float> &want)
{
	if (got.size() != want.size())
		return ::testing::AssertionFailure() << "size " << got.size() << ", expected " << want.size();
	for (size_t i = 0; i < got.size(); i++) {
		if (std::isnan(got[i]) && std::isnan(want[i]))
			continue;
		if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]))
			return ::testing::AssertionFailure() << "element " << i << " is " << got[i] << " (0x" << std::hex
							     << std::bit_cast<uint32_t>(got[i]) << "), expected "
							     << want[i] << " (0x" << std::bit_cast<uint32_t>(want[i]) << ")";
	}
	return ::testing::AssertionSuccess();
}

struct Dims {
	uint32_t m, n, k;
};
// 1×N, M×1, K of 1, odd sizes, and sizes across every block boundary of
// every path (tiles of 3..12 rows and 4..32 columns, row blocks of 96..144,
// K slices of 256..1024, column panels of 256..1024).
const Dims kDims[] = {{1, 1, 1},     {1, 300, 70},  {300, 1, 70},  {40, 40, 1},   {1, 1, 2100},
		      {7, 13, 29},   {3, 5, 600},   {97, 33, 17},  {130, 270, 530}, {5, 517, 3},
		      {121, 9, 1030}, {145, 1030, 5}, {13, 33, 1025}, {290, 65, 257},
		      // A's few rows (the narrow int8 kernel: up to 8 rows, 4 at a
		      // time, 64 columns, k in pairs): odd k, a column tail.
		      {8, 130, 4609},  {4, 64, 2},     {2, 1000, 1},  {6, 127, 333}};

std::string name(Isa isa, const Dims &d)
{
	return std::string(isa_name(isa)) + " " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" +
	       std::to_string(d.k);
}

TEST(NspGemm, PathsListedUpToTheBest)
{
	const auto isas = usable_isas();
	ASSERT_FALSE(isas.empty());
	EXPECT_EQ(isas.front(), Isa::Baseline);
	EXPECT_EQ(isas.back(), best_isa());
}

// An int8 GEMM `run(c)` writing C at an odd address, with a guard byte
// before and after: C as the definition has it, the guards untouched.
template <class Run>
void expect_i8_definition(const Run &run, const std::vector<int8_t> &a, const std::vector<int8_t> &b, const Dims &d,
			  const std::string &what)
{
	std::vector<uint8_t> c(size_t(d.m) * d.n * 4 + 2, 0xAA);
	ASSERT_TRUE(run(c.data() + 1)) << what;
	std::vector<int32_t> got(size_t(d.m) * d.n);
	std::memcpy(got.data(), c.data() + 1, got.size() * 4);
	ASSERT_EQ(got, reference_i8(a, b, d.m, d.n, d.k)) << what;
	EXPECT_EQ(c.front(), 0xAA) << what;
	EXPECT_EQ(c.back(), 0xAA) << what;
}

TEST(NspGemm, Int8EqualsTheDefinition)
{
	for (Isa isa : usable_isas())
		for (const Dims &d : kDims) {
			const auto a = random_i8(size_t(d.m) * d.k, d.m), b = random_i8(size_t(d.k) * d.n, d.n);
			Scratch s;
			expect_i8_definition([&](uint8_t *c) {
				return gemm_i8(c, bytes(a.data()), bytes(b.data()), d.m, d.n, d.k, s, nullptr, isa);
			}, a, b, d, name(isa, d));
		}
}

TEST(NspGemm, Int8Extremes)
{
	// -128·-128 summed 1030 times: 16.9M, well inside int32; -128·127 too.
	for (Isa isa : usable_isas()) {
		const uint32_t k = 1030;
		std::vector<int8_t> a(k, -128), b(k * 2, -128);
		for (uint32_t p = 0; p < k; p++)
			b[p * 2 + 1] = 127;
		std::vector<int32_t> c(2);
		Scratch s;
		gemm_i8(reinterpret_cast<uint8_t *>(c.data()), bytes(a.data()), bytes(b.data()), 1, 2, k, s, nullptr, isa);
		EXPECT_EQ(c[0], 16384 * int32_t(k)) << isa_name(isa);
		EXPECT_EQ(c[1], -16256 * int32_t(k)) << isa_name(isa);
	}
	// A sum that does not fit wraps around, also across K slices.
	for (Isa isa : usable_isas()) {
		const uint32_t k = 140000; // 140000 * 16384 > 2^31
		std::vector<int8_t> a(k, -128), b(k, -128);
		int32_t c;
		Scratch s;
		gemm_i8(reinterpret_cast<uint8_t *>(&c), bytes(a.data()), bytes(b.data()), 1, 1, k, s, nullptr, isa);
		EXPECT_EQ(c, int32_t(uint32_t(uint64_t(k) * 16384))) << isa_name(isa);
	}
}

TEST(NspGemm, F32EqualsTheFusedChainBitForBit)
{
	for (Isa isa : usable_isas())
		for (const Dims &d : kDims) {
			const auto a = random_f32(size_t(d.m) * d.k, d.m), b = random_f32(size_t(d.k) * d.n, d.n);
			std::vector<uint8_t> c(size_t(d.m) * d.n * 4 + 6, 0xAA);
			Scratch s;
			ASSERT_TRUE(gemm_f32(c.data() + 3, bytes(a.data()), bytes(b.data()), d.m, d.n, d.k, s, nullptr, isa));
			std::vector<float> got(size_t(d.m) * d.n);
			std::memcpy(got.data(), c.data() + 3, got.size() * 4);
			ASSERT_TRUE(same_f32(got, reference_f32(a, b, d.m, d.n, d.k))) << name(isa, d);
			EXPECT_EQ(c[2], 0xAA) << name(isa, d);
			EXPECT_EQ(c[c.size() - 3], 0xAA) << name(isa, d);
		}
}

// Values from every binade, subnormals, signed zeros, infinities, NaNs,
// and products that overflow: the plain path's fused multiply-add (double
// arithmetic rounded to odd) must give what an FMA instruction gives.
TEST(NspGemm, F32SpecialValuesOnEveryPath)
{
	std::mt19937 rng(11);
	auto any_float = [&rng] {
		switch (rng() % 16) {
		case 0:
			return std::numeric_limits<float>::infinity();
		case 1:
			return -std::numeric_limits<float>::infinity();
		case 2:
			return std::numeric_limits<float>::quiet_NaN();
		case 3:
			return rng() % 2 ? 0.0f : -0.0f;
		case 4:
			return std::bit_cast<float>(uint32_t(rng() % 0x800000 | (rng() % 2) << 31)); // subnormal
		case 5:
			return std::numeric_limits<float>::max() * (rng() % 2 ? 1 : -1);
		default: {
			const uint32_t bits = uint32_t(rng() & 0x807FFFFF), exp = uint32_t(1 + rng() % 254);
			return std::bit_cast<float>(uint32_t(bits | exp << 23));
		}
		}
	};
	const Dims d{37, 41, 67};
	std::vector<float> a(d.m * d.k), b(d.k * d.n);
	for (float &x : a)
		x = any_float();
	for (float &x : b)
		x = any_float();
	const auto want = reference_f32(a, b, d.m, d.n, d.k);
	for (Isa isa : usable_isas()) {
		std::vector<float> c(d.m * d.n);
		Scratch s;
		gemm_f32(reinterpret_cast<uint8_t *>(c.data()), bytes(a.data()), bytes(b.data()), d.m, d.n, d.k, s,
			 nullptr, isa);
		EXPECT_TRUE(same_f32(c, want)) << isa_name(isa);
	}
	// The last step is fused: -1, then -(1 + 2^-11), then + (1 + 2^-12)^2
	// = 2^-24 exactly, where a rounded product (1 + 2^-11, a tie to even)
	// would give 0.
	const float x = 1.0f + 0x1p-12f;
	const std::vector<float> ra = {-1.0f, -0x1p-11f, x}, rb = {1.0f, 1.0f, x};
	for (Isa isa : usable_isas()) {
		float c = 0;
		Scratch s;
		gemm_f32(reinterpret_cast<uint8_t *>(&c), bytes(ra.data()), bytes(rb.data()), 1, 1, 3, s, nullptr, isa);
		EXPECT_EQ(c, 0x1p-24f) << isa_name(isa);
	}
}

// C may overlap A or B: the result is that of the operands as they were
// before the instruction.
TEST(NspGemm, OperandsOverlappingCAreReadFirst)
{
	const uint32_t n = 45; // square: C can sit exactly on A or on B
	for (Isa isa : usable_isas()) {
		const auto a = random_f32(n * n, 1), b = random_f32(n * n, 2);
		const auto want = reference_f32(a, b, n, n, n);
		Scratch s;
		std::vector<float> ca = a; // C on A
		gemm_f32(reinterpret_cast<uint8_t *>(ca.data()), bytes(ca.data()), bytes(b.data()), n, n, n, s, nullptr,
			 isa);
		EXPECT_TRUE(same_f32(ca, want)) << isa_name(isa) << " C on A";
		std::vector<float> cb = b; // C on B
		gemm_f32(reinterpret_cast<uint8_t *>(cb.data()), bytes(a.data()), bytes(cb.data()), n, n, n, s, nullptr,
			 isa);
		EXPECT_TRUE(same_f32(cb, want)) << isa_name(isa) << " C on B";
		// C starting in the middle of A and running past its end.
		std::vector<float> buf(n * n * 2);
		std::copy(a.begin(), a.end(), buf.begin());
		gemm_f32(reinterpret_cast<uint8_t *>(buf.data() + n * n / 2), bytes(buf.data()), bytes(b.data()), n, n, n,
			 s, nullptr, isa);
		EXPECT_TRUE(same_f32(std::vector<float>(buf.begin() + n * n / 2, buf.begin() + n * n / 2 + n * n), want))
			<< isa_name(isa) << " C across A";
		// A on B, C apart: no copy needed, nothing written to them.
		std::vector<float> ab = a, c(n * n);
		gemm_f32(reinterpret_cast<uint8_t *>(c.data()), bytes(ab.data()), bytes(ab.data()), n, n, n, s, nullptr,
			 isa);
		EXPECT_TRUE(same_f32(c, reference_f32(a, a, n, n, n))) << isa_name(isa) << " A on B";
		EXPECT_EQ(ab, a);

		// int8: C (4 bytes per element) over A, and over B.
		const auto ai = random_i8(n * n, 3), bi = random_i8(n * n, 4);
		const auto wi = reference_i8(ai, bi, n, n, n);
		std::vector<int32_t> ci(n * n);
		std::memcpy(ci.data(), ai.data(), ai.size());
		gemm_i8(reinterpret_cast<uint8_t *>(ci.data()), bytes(ci.data()), bytes(bi.data()), n, n, n, s, nullptr,
			isa);
		EXPECT_EQ(ci, wi) << isa_name(isa) << " C on A";
		std::memcpy(ci.data(), bi.data(), bi.size());
		gemm_i8(reinterpret_cast<uint8_t *>(ci.data()), bytes(ai.data()), bytes(ci.data()), n, n, n, s, nullptr,
			isa);
		EXPECT_EQ(ci, wi) << isa_name(isa) << " C on B";
	}
}

// MMI8P's B packed by the ABI's packer (what the compiler ships) into a
// buffer at an odd address (strips lie anywhere in the window), its
// padding garbage rather than zeros (the layout says it is ignored).
std::vector<uint8_t> packed_at_odd_address(const std::vector<int8_t> &b, uint32_t k, uint32_t n)
{
	std::vector<uint8_t> out(packed_b_size(k, n) + 1, 0);
	pack_b(b, k, n, std::span(out).subspan(1));
	for (uint32_t row = 0; row < (k + 3) / 4 * 4; row++)
		for (uint32_t col = 0; col < (n + 31) / 32 * 32; col++)
			if (row >= k || col >= n)
				out[1 + packed_b_offset(k, row, col)] = uint8_t(row * 31 + col * 7);
	return out;
}

TEST(NspGemmPacked, LayoutPutsEachValueWhereTheAbiSays)
{
	const uint32_t k = 6, n = 35;
	const auto b = random_i8(size_t(k) * n, 3);
	std::vector<uint8_t> p(packed_b_size(k, n));
	EXPECT_EQ(p.size(), 2u * 2 * 128); // two strips of two quads
	pack_b(b, k, n, p);
	for (uint32_t row = 0; row < k; row++)
		for (uint32_t col = 0; col < n; col++)
			ASSERT_EQ(packed_b_value(p.data(), k, row, col), b[row * n + col]) << row << "," << col;
	EXPECT_EQ(packed_b_offset(k, 0, 0), 0u);
	EXPECT_EQ(packed_b_offset(k, 1, 0), 1u);
	EXPECT_EQ(packed_b_offset(k, 0, 1), 4u);
	EXPECT_EQ(packed_b_offset(k, 4, 0), 128u);
	EXPECT_EQ(packed_b_offset(k, 0, 32), 256u);
	EXPECT_EQ(p[packed_b_offset(k, 7, 0)], 0x80) << "padding is packed as zeros";
}

// Every path, on packed B: the same results as MMI8 on B as it is.
TEST(NspGemmPacked, EqualsUnpackedOnEveryPath)
{
	for (Isa isa : usable_isas())
		for (const Dims &d : kDims) {
			const auto a = random_i8(size_t(d.m) * d.k, d.m + 1), b = random_i8(size_t(d.k) * d.n, d.n + 2);
			const auto packed = packed_at_odd_address(b, d.k, d.n);
			Scratch s;
			expect_i8_definition([&](uint8_t *c) {
				return gemm_i8_packed(c, bytes(a.data()), packed.data() + 1, d.m, d.n, d.k, s, nullptr, isa);
			}, a, b, d, name(isa, d));
		}
}

TEST(NspGemmPacked, ExtremesWrapAsMmi8Does)
{
	for (Isa isa : usable_isas()) {
		const uint32_t k = 140001; // 140001 · 16384 > 2^31; an odd quad at the end
		std::vector<int8_t> a(k, -128), b(size_t(k) * 2, -128);
		for (uint32_t p = 0; p < k; p++)
			b[size_t(p) * 2 + 1] = 127;
		std::vector<uint8_t> packed(packed_b_size(k, 2));
		pack_b(b, k, 2, packed);
		int32_t c[2];
		Scratch s;
		ASSERT_TRUE(gemm_i8_packed(reinterpret_cast<uint8_t *>(c), bytes(a.data()), packed.data(), 1, 2, k, s,
					   nullptr, isa));
		EXPECT_EQ(c[0], int32_t(uint32_t(uint64_t(k) * 16384))) << isa_name(isa);
		EXPECT_EQ(c[1], int32_t(uint32_t(uint64_t(k) * uint64_t(-16256)))) << isa_name(isa);
	}
}

// Random shapes: packed and unpacked agree on every path.
TEST(NspGemmPacked, RandomShapesAgreeWithUnpacked)
{
	std::mt19937 rng(40);
	for (int round = 0; round < 40; round++) {
		const uint32_t m = 1 + rng() % 70, n = 1 + rng() % 140, k = 1 + rng() % 300;
		const auto a = random_i8(size_t(m) * k, rng()), b = random_i8(size_t(k) * n, rng());
		const auto packed = packed_at_odd_address(b, k, n);
		for (Isa isa : usable_isas()) {
			std::vector<int32_t> plain(size_t(m) * n), fast(size_t(m) * n);
			Scratch s;
			ASSERT_TRUE(gemm_i8(reinterpret_cast<uint8_t *>(plain.data()), bytes(a.data()), bytes(b.data()), m,
					    n, k, s, nullptr, isa));
			ASSERT_TRUE(gemm_i8_packed(reinterpret_cast<uint8_t *>(fast.data()), bytes(a.data()),
						   packed.data() + 1, m, n, k, s, nullptr, isa));
			ASSERT_EQ(fast, plain) << name(isa, Dims{m, n, k});
		}
	}
}

// A stop between row blocks ends the GEMM early and says so; the next one
// with the same scratch is whole again.
TEST(NspGemm, StopsBetweenBlocks)
{
	const uint32_t m = 600, n = 40, k = 40;
	const auto a = random_f32(m * k, 5), b = random_f32(k * n, 6);
	for (Isa isa : usable_isas()) {
		std::vector<float> c(m * n);
		Scratch s;
		unsigned polls = 0;
		const std::function<bool()> stop = [&polls] { return ++polls == 2; };
		EXPECT_FALSE(gemm_f32(reinterpret_cast<uint8_t *>(c.data()), bytes(a.data()), bytes(b.data()), m, n, k, s,
				      &stop, isa))
			<< isa_name(isa);
		EXPECT_TRUE(gemm_f32(reinterpret_cast<uint8_t *>(c.data()), bytes(a.data()), bytes(b.data()), m, n, k, s,
				     &stop, isa));
		EXPECT_TRUE(same_f32(c, reference_f32(a, b, m, n, k))) << isa_name(isa);
	}
}

// Asking for a path the CPU lacks runs the best one it has.
TEST(NspGemm, PathAboveTheCpusFallsBack)
{
	const auto a = random_f32(9 * 7, 7), b = random_f32(7 * 5, 8);
	std::vector<float> c(9 * 5);
	Scratch s;
	ASSERT_TRUE(gemm_f32(reinterpret_cast<uint8_t *>(c.data()), bytes(a.data()), bytes(b.data()), 9, 5, 7, s,
			     nullptr, Isa::Avx512));
	EXPECT_TRUE(same_f32(c, reference_f32(a, b, 9, 5, 7)));
}

// ---- REQI8 and VADDQI8 ---------------------------------------------------------

// REQI8's definition in 128-bit arithmetic: floor((acc + bias)·mult /
// 2^shift + ½), saturated, ReLU; a negative multiplier as 0, a shift
// outside 0..62 as the nearest end.
int8_t requant_definition(int32_t acc, int32_t bias, int32_t mult, int32_t shift, bool relu)
{
	const int s = std::clamp(shift, 0, 62);
	const __int128 p = (__int128(acc) + bias) * std::max(mult, 0);
	const __int128 q = s ? (p + (__int128(1) << (s - 1))) >> s : p;
	return int8_t(std::clamp<__int128>(q, relu ? 0 : -128, 127));
}

// The tables of `cols` channels, with the extremes among random values.
struct ReqTables {
	std::vector<int32_t> bias, mult, shift;
};
ReqTables req_tables(uint32_t cols, uint32_t seed)
{
	std::mt19937 rng(seed);
	ReqTables t;
	const int32_t biases[] = {INT32_MIN, INT32_MAX, 0, -1};
	const int32_t mults[] = {0, INT32_MAX, -5, 1, 1 << 30};
	const int32_t shifts[] = {0, 1, 31, 62, -3, 70, 63};
	for (uint32_t j = 0; j < cols; j++) {
		t.bias.push_back(j % 5 == 0 ? biases[j / 5 % 4] : int32_t(rng()));
		t.mult.push_back(j % 3 == 0 ? mults[j / 3 % 5] : int32_t(rng() >> 1));
		t.shift.push_back(j % 4 == 0 ? shifts[j / 4 % 7] : int32_t(rng() % 63));
	}
	return t;
}

TEST(NspRequant, EveryPathEqualsTheDefinition)
{
	for (uint32_t cols : {1u, 3u, 7u, 8u, 9u, 16u, 17u, 64u, 100u})
		for (bool relu : {false, true}) {
			const ReqTables t = req_tables(cols, cols);
			// Rows and a part of one; accumulators of every size.
			const uint64_t n = cols * 5 + cols / 2 + 1;
			std::mt19937 rng(cols + relu);
			std::vector<int32_t> acc(n);
			for (uint64_t i = 0; i < n; i++)
				acc[i] = i % 7 == 0 ? (i % 2 ? INT32_MIN : INT32_MAX) : int32_t(rng()) >> (rng() % 31);
			std::vector<int8_t> want(n);
			for (uint64_t i = 0; i < n; i++)
				want[i] = requant_definition(acc[i], t.bias[i % cols], t.mult[i % cols], t.shift[i % cols], relu);
			for (Isa isa : usable_isas()) {
				// Every operand at an odd address; guard bytes around dst.
				std::vector<uint8_t> src(n * 4 + 1), tab(cols * 12 + 3), dst(n + 2, 0xAA);
				std::memcpy(src.data() + 1, acc.data(), n * 4);
				std::memcpy(tab.data() + 3, t.bias.data(), cols * 4);
				std::memcpy(tab.data() + 3 + cols * 4, t.mult.data(), cols * 4);
				std::memcpy(tab.data() + 3 + cols * 8, t.shift.data(), cols * 4);
				requant_i8(dst.data() + 1, src.data() + 1, n, tab.data() + 3, tab.data() + 3 + cols * 4,
					   tab.data() + 3 + cols * 8, cols, relu, isa);
				const std::string what = std::string(isa_name(isa)) + ", " + std::to_string(cols) +
							 " columns" + (relu ? ", ReLU" : "");
				ASSERT_EQ(std::vector<int8_t>(dst.begin() + 1, dst.end() - 1), want) << what;
				EXPECT_EQ(dst.front(), 0xAA) << what;
				EXPECT_EQ(dst.back(), 0xAA) << what;
			}
		}
}

TEST(NspRequant, AddEveryPathEqualsTheDefinition)
{
	std::mt19937 rng(9);
	const uint64_t n = 16 * 9 + 5;
	const auto x = random_i8(n, 10), y = random_i8(n, 11);
	for (uint32_t shift : {0u, 1u, 14u, 31u})
		for (bool relu : {false, true}) {
			const uint32_t mx = shift % 2 ? 65535 : rng() % 65536, my = shift == 31 ? 65535 : rng() % 65536;
			std::vector<int8_t> want(n);
			for (uint64_t i = 0; i < n; i++) {
				const int64_t v = int64_t(x[i]) * mx + int64_t(y[i]) * my + (shift ? 1ll << (shift - 1) : 0);
				want[i] = int8_t(std::clamp<int64_t>(v >> shift, relu ? 0 : -128, 127));
			}
			for (Isa isa : usable_isas()) {
				std::vector<uint8_t> dst(n + 2, 0xAA);
				vaddq_i8(dst.data() + 1, bytes(x.data()), bytes(y.data()), n, mx, my, shift, relu, isa);
				const std::string what = std::string(isa_name(isa)) + ", shift " + std::to_string(shift);
				ASSERT_EQ(std::vector<int8_t>(dst.begin() + 1, dst.end() - 1), want) << what;
				EXPECT_EQ(dst.front(), 0xAA) << what;
				EXPECT_EQ(dst.back(), 0xAA) << what;
			}
		}
}

} // namespace
} // namespace aic100::nsp::kernels
