// SPDX-License-Identifier: GPL-2.0-or-later
// Compute kernels of the NSP interpreter. Written as plain loops over
// fixed-size blocks so that GCC vectorises them at -O2 (its "very cheap"
// cost model only takes loops whose trip count is a known multiple of the
// vector width), with no -march flag: the GEMMs are compiled twice, for
// baseline x86-64 and for AVX2+FMA, and picked at run time.
#include "aic100/nsp_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AIC100_X86_DISPATCH 1
#define AIC100_AVX2 __attribute__((target("avx2,fma")))
#endif

#define AIC100_INLINE inline __attribute__((always_inline))

namespace aic100::nsp::kernels {

namespace {

// Elements per step of the vector kernels: the window is read into local
// arrays (memcpy: any alignment), worked on with a constant trip count and
// written back.
constexpr unsigned kChunk = 64;

template <class T, class F>
AIC100_INLINE void map2(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n, F f)
{
	T a[kChunk], b[kChunk], r[kChunk];
	for (uint64_t i = 0; i < n; i += kChunk) {
		const uint64_t cnt = std::min<uint64_t>(kChunk, n - i);
		const size_t bytes = size_t(cnt) * sizeof(T);
		if (cnt < kChunk) {
			std::memset(a, 0, sizeof(a));
			std::memset(b, 0, sizeof(b));
		}
		std::memcpy(a, x + i * sizeof(T), bytes);
		std::memcpy(b, y + i * sizeof(T), bytes);
		for (unsigned j = 0; j < kChunk; j++)
			r[j] = f(a[j], b[j]);
		std::memcpy(dst + i * sizeof(T), r, bytes);
	}
}

template <class Out, class In, class F>
AIC100_INLINE void map1(uint8_t *dst, const uint8_t *src, uint64_t n, F f)
{
	In a[kChunk];
	Out r[kChunk];
	for (uint64_t i = 0; i < n; i += kChunk) {
		const uint64_t cnt = std::min<uint64_t>(kChunk, n - i);
		if (cnt < kChunk)
			std::memset(a, 0, sizeof(a));
		std::memcpy(a, src + i * sizeof(In), size_t(cnt) * sizeof(In));
		for (unsigned j = 0; j < kChunk; j++)
			r[j] = f(a[j]);
		std::memcpy(dst + i * sizeof(Out), r, size_t(cnt) * sizeof(Out));
	}
}

// Reductions keep 16 partial results (one per lane), so that the loop
// vectorises without reassociating floating-point sums; the order is fixed,
// so results are the same on every host.
constexpr unsigned kLanes = 16;

template <class F>
AIC100_INLINE float reduce(const uint8_t *src, uint64_t n, float init, F f)
{
	float acc[kLanes], a[kChunk];
	std::fill(std::begin(acc), std::end(acc), init);
	for (uint64_t i = 0; i < n; i += kChunk) {
		const uint64_t cnt = std::min<uint64_t>(kChunk, n - i);
		if (cnt < kChunk)
			std::fill(std::begin(a), std::end(a), init);
		std::memcpy(a, src + i * 4, size_t(cnt) * 4);
		for (unsigned q = 0; q < kChunk / kLanes; q++)
			for (unsigned j = 0; j < kLanes; j++)
				acc[j] = f(acc[j], a[q * kLanes + j]);
	}
	for (unsigned w = kLanes / 2; w; w /= 2)
		for (unsigned j = 0; j < w; j++)
			acc[j] = f(acc[j], acc[j + w]);
	return acc[0];
}

float gelu(float x)
{
	constexpr float k = 0.7978845608028654f; // sqrt(2/pi)
	return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

// ---- fp32 GEMM -------------------------------------------------------------
//
// Goto-style: a KC×NC panel of B and an MC×KC block of A are packed into
// contiguous strips (B by NR columns, A by MR rows, both k-major, zero
// padded), and an MR×NR register tile of C is accumulated over kc.

constexpr unsigned kFKc = 256, kFNc = 512, kFMc = 120;

template <unsigned MR, unsigned NR, bool Fma>
AIC100_INLINE void tile_f32(unsigned kc, const float *__restrict a, const float *__restrict b,
			    float (&out)[MR][NR])
{
	float acc[MR][NR] = {};
	for (unsigned k = 0; k < kc; k++) {
#pragma GCC unroll 8
		for (unsigned i = 0; i < MR; i++) {
			const float av = a[k * MR + i];
#pragma GCC unroll 16
			for (unsigned j = 0; j < NR; j++) {
				// -std=c++20 does not contract a*b+c; ask for the FMA.
				if constexpr (Fma)
					acc[i][j] = __builtin_fmaf(av, b[k * NR + j], acc[i][j]);
				else
					acc[i][j] += av * b[k * NR + j];
			}
		}
	}
	std::memcpy(out, acc, sizeof(acc));
}

template <unsigned MR, unsigned NR, bool Fma>
AIC100_INLINE bool gemm_f32_impl(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
				 uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	constexpr unsigned MC = kFMc / MR * MR;
	constexpr unsigned NCP = (kFNc + NR - 1) / NR * NR;
	if (s.fa.size() < size_t(MC) * kFKc)
		s.fa.resize(size_t(MC) * kFKc);
	if (s.fb.size() < size_t(NCP) * kFKc)
		s.fb.resize(size_t(NCP) * kFKc);
	float *pa = s.fa.data(), *pb = s.fb.data();
	const uint64_t ldc = uint64_t(n) * 4;

	for (uint32_t jc = 0; jc < n; jc += kFNc) {
		const unsigned nc = std::min<uint32_t>(kFNc, n - jc);
		for (uint32_t pc = 0; pc < k; pc += kFKc) {
			const unsigned kc = std::min<uint32_t>(kFKc, k - pc);
			for (unsigned jr = 0; jr < nc; jr += NR) {
				float *dst = pb + size_t(jr) * kc;
				const unsigned w = std::min(NR, nc - jr);
				for (unsigned kk = 0; kk < kc; kk++) {
					float row[NR] = {};
					std::memcpy(row, b + ((uint64_t(pc) + kk) * n + jc + jr) * 4, w * 4);
					std::memcpy(dst + kk * NR, row, sizeof(row));
				}
			}
			for (uint32_t ic = 0; ic < m; ic += MC) {
				if (stop && (*stop)())
					return false;
				const unsigned mc = std::min<uint32_t>(MC, m - ic);
				for (unsigned ir = 0; ir < mc; ir += MR) {
					float *dst = pa + size_t(ir) * kc;
					for (unsigned i = 0; i < MR; i++) {
						float row[kFKc];
						if (ir + i < mc)
							std::memcpy(row, a + ((uint64_t(ic) + ir + i) * k + pc) * 4,
								    kc * 4);
						else
							std::memset(row, 0, kc * 4);
						for (unsigned kk = 0; kk < kc; kk++)
							dst[kk * MR + i] = row[kk];
					}
				}
				for (unsigned jr = 0; jr < nc; jr += NR) {
					const unsigned w = std::min(NR, nc - jr);
					for (unsigned ir = 0; ir < mc; ir += MR) {
						float t[MR][NR];
						tile_f32<MR, NR, Fma>(kc, pa + size_t(ir) * kc, pb + size_t(jr) * kc, t);
						const unsigned h = std::min(MR, mc - ir);
						for (unsigned i = 0; i < h; i++) {
							uint8_t *cp = c + (uint64_t(ic) + ir + i) * ldc + uint64_t(jc + jr) * 4;
							if (pc) {
								float old[NR] = {};
								std::memcpy(old, cp, w * 4);
								for (unsigned j = 0; j < NR; j++)
									t[i][j] += old[j];
							}
							std::memcpy(cp, t[i], w * 4);
						}
					}
				}
			}
		}
	}
	return true;
}

// ---- int8 GEMM --------------------------------------------------------------
//
// A's rows and B's columns are packed as int16, k-contiguous and zero padded
// to a multiple of 16; a tile is MR×NR dot products over k, which GCC turns
// into pmaddwd (16-bit products summed in pairs into 32 bits). The sums are
// unsigned so that wrapping is defined.

constexpr unsigned kIKc = 512, kINc = 256, kIMc = 96;

// Each accumulator is a separate variable: GCC vectorises several
// reductions in one loop, but not an array of them.
template <unsigned MR, unsigned NR>
struct TileI8;

template <>
struct TileI8<3, 4> {
	static AIC100_INLINE void run(unsigned kp, const int16_t *__restrict a, const int16_t *__restrict b,
				      uint32_t (&o)[3][4])
	{
		const int16_t *a0 = a, *a1 = a + kp, *a2 = a + 2 * kp;
		const int16_t *b0 = b, *b1 = b + kp, *b2 = b + 2 * kp, *b3 = b + 3 * kp;
		uint32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
		uint32_t s20 = 0, s21 = 0, s22 = 0, s23 = 0;
		kp &= ~15u; // already true; tells the vectoriser there is no tail
		for (unsigned k = 0; k < kp; k++) {
			s00 += uint32_t(a0[k] * b0[k]);
			s01 += uint32_t(a0[k] * b1[k]);
			s02 += uint32_t(a0[k] * b2[k]);
			s03 += uint32_t(a0[k] * b3[k]);
			s10 += uint32_t(a1[k] * b0[k]);
			s11 += uint32_t(a1[k] * b1[k]);
			s12 += uint32_t(a1[k] * b2[k]);
			s13 += uint32_t(a1[k] * b3[k]);
			s20 += uint32_t(a2[k] * b0[k]);
			s21 += uint32_t(a2[k] * b1[k]);
			s22 += uint32_t(a2[k] * b2[k]);
			s23 += uint32_t(a2[k] * b3[k]);
		}
		o[0][0] = s00, o[0][1] = s01, o[0][2] = s02, o[0][3] = s03;
		o[1][0] = s10, o[1][1] = s11, o[1][2] = s12, o[1][3] = s13;
		o[2][0] = s20, o[2][1] = s21, o[2][2] = s22, o[2][3] = s23;
	}
};

template <>
struct TileI8<2, 4> {
	static AIC100_INLINE void run(unsigned kp, const int16_t *__restrict a, const int16_t *__restrict b,
				      uint32_t (&o)[2][4])
	{
		const int16_t *a0 = a, *a1 = a + kp;
		const int16_t *b0 = b, *b1 = b + kp, *b2 = b + 2 * kp, *b3 = b + 3 * kp;
		uint32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
		kp &= ~15u;
		for (unsigned k = 0; k < kp; k++) {
			s00 += uint32_t(a0[k] * b0[k]);
			s01 += uint32_t(a0[k] * b1[k]);
			s02 += uint32_t(a0[k] * b2[k]);
			s03 += uint32_t(a0[k] * b3[k]);
			s10 += uint32_t(a1[k] * b0[k]);
			s11 += uint32_t(a1[k] * b1[k]);
			s12 += uint32_t(a1[k] * b2[k]);
			s13 += uint32_t(a1[k] * b3[k]);
		}
		o[0][0] = s00, o[0][1] = s01, o[0][2] = s02, o[0][3] = s03;
		o[1][0] = s10, o[1][1] = s11, o[1][2] = s12, o[1][3] = s13;
	}
};

template <unsigned MR, unsigned NR>
AIC100_INLINE bool gemm_i8_impl(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
				uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	constexpr unsigned MCP = (kIMc + MR - 1) / MR * MR;
	constexpr unsigned NCP = (kINc + NR - 1) / NR * NR;
	if (s.ia.size() < size_t(MCP) * kIKc)
		s.ia.resize(size_t(MCP) * kIKc);
	if (s.ib.size() < size_t(NCP) * kIKc)
		s.ib.resize(size_t(NCP) * kIKc);
	int16_t *pa = s.ia.data(), *pb = s.ib.data();
	const uint64_t ldc = uint64_t(n) * 4;

	for (uint32_t jc = 0; jc < n; jc += kINc) {
		const unsigned nc = std::min<uint32_t>(kINc, n - jc);
		const unsigned ncp = (nc + NR - 1) / NR * NR;
		for (uint32_t pc = 0; pc < k; pc += kIKc) {
			const unsigned kc = std::min<uint32_t>(kIKc, k - pc);
			const unsigned kp = (kc + 15) & ~15u;
			std::memset(pb, 0, size_t(ncp) * kp * 2);
			for (unsigned kk = 0; kk < kc; kk++) {
				int8_t row[kINc];
				std::memcpy(row, b + (uint64_t(pc) + kk) * n + jc, nc);
				for (unsigned j = 0; j < nc; j++)
					pb[size_t(j) * kp + kk] = row[j];
			}
			for (uint32_t ic = 0; ic < m; ic += kIMc) {
				if (stop && (*stop)())
					return false;
				const unsigned mc = std::min<uint32_t>(kIMc, m - ic);
				const unsigned mcp = (mc + MR - 1) / MR * MR;
				for (unsigned i = 0; i < mcp; i++) {
					int16_t *dst = pa + size_t(i) * kp;
					int8_t row[kIKc] = {};
					if (i < mc)
						std::memcpy(row, a + (uint64_t(ic) + i) * k + pc, kc);
					for (unsigned kk = 0; kk < kp; kk++)
						dst[kk] = row[kk];
				}
				for (unsigned jr = 0; jr < nc; jr += NR) {
					const unsigned w = std::min(NR, nc - jr);
					for (unsigned ir = 0; ir < mc; ir += MR) {
						uint32_t t[MR][NR];
						TileI8<MR, NR>::run(kp, pa + size_t(ir) * kp, pb + size_t(jr) * kp, t);
						const unsigned h = std::min(MR, mc - ir);
						for (unsigned i = 0; i < h; i++) {
							uint8_t *cp = c + (uint64_t(ic) + ir + i) * ldc + uint64_t(jc + jr) * 4;
							if (pc) {
								uint32_t old[NR] = {};
								std::memcpy(old, cp, w * 4);
								for (unsigned j = 0; j < NR; j++)
									t[i][j] += old[j];
							}
							std::memcpy(cp, t[i], w * 4);
						}
					}
				}
			}
		}
	}
	return true;
}

// Tile shapes: what fits the 16 vector registers of each path (measured).
bool gemm_f32_baseline(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
		       uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	return gemm_f32_impl<3, 8, false>(c, a, b, m, n, k, s, stop);
}

bool gemm_i8_baseline(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
		      uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	return gemm_i8_impl<3, 4>(c, a, b, m, n, k, s, stop);
}

#ifdef AIC100_X86_DISPATCH
AIC100_AVX2 bool gemm_f32_avx2(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
			       uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	return gemm_f32_impl<5, 16, true>(c, a, b, m, n, k, s, stop);
}

AIC100_AVX2 bool gemm_i8_avx2(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n,
			      uint32_t k, Scratch &s, const std::function<bool()> *stop)
{
	return gemm_i8_impl<3, 4>(c, a, b, m, n, k, s, stop);
}
#endif

} // namespace

Isa best_isa()
{
#ifdef AIC100_X86_DISPATCH
	static const bool avx2 = [] {
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	}();
	if (avx2)
		return Isa::Avx2;
#endif
	return Isa::Baseline;
}

const char *isa_name(Isa isa)
{
	return isa == Isa::Avx2 ? "avx2+fma" : "baseline";
}

void copy(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	if (n)
		std::memmove(dst, src, n);
}

void vadd_f32(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n)
{
	map2<float>(dst, x, y, n, [](float p, float q) { return p + q; });
}

void vmul_f32(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n)
{
	map2<float>(dst, x, y, n, [](float p, float q) { return p * q; });
}

void vadd_i8_sat(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n)
{
	map2<int8_t>(dst, x, y, n, [](int8_t p, int8_t q) {
		const int v = int(p) + int(q);
		return int8_t(v > 127 ? 127 : v < -128 ? -128 : v);
	});
}

void vscale_f32(uint8_t *dst, const uint8_t *src, uint64_t n, float scale)
{
	map1<float, float>(dst, src, n, [scale](float v) { return v * scale; });
}

void act_f32(uint8_t *dst, const uint8_t *src, uint64_t n, uint32_t kind)
{
	switch (kind) {
	case 0:
		map1<float, float>(dst, src, n, [](float v) { return v > 0.0f ? v : 0.0f; });
		break;
	case 1:
		map1<float, float>(dst, src, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
		break;
	case 2:
		map1<float, float>(dst, src, n, [](float v) { return std::tanh(v); });
		break;
	case 3:
		map1<float, float>(dst, src, n, gelu);
		break;
	default:
		break;
	}
}

float sum_f32(const uint8_t *src, uint64_t n)
{
	return reduce(src, n, 0.0f, [](float p, float q) { return p + q; });
}

float max_f32(const uint8_t *src, uint64_t n)
{
	// q > p is false for a NaN q: NaNs never win.
	return reduce(src, n, -std::numeric_limits<float>::infinity(),
		      [](float p, float q) { return q > p ? q : p; });
}

void bias_f32(uint8_t *dst, const uint8_t *bias, uint64_t n, uint64_t cols)
{
	if (!cols)
		return;
	for (uint64_t off = 0; off < n; off += cols) {
		uint8_t *row = dst + off * 4;
		vadd_f32(row, row, bias, std::min(cols, n - off));
	}
}

void cvt_i32_f32(uint8_t *dst, const uint8_t *src, uint64_t n, float scale)
{
	map1<float, int32_t>(dst, src, n, [scale](int32_t v) { return float(v) * scale; });
}

void im2col_i8(uint8_t *dst, const uint8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
	       uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows)
{
	const uint32_t ow = (w + 2 * pad - k) / stride + 1;
	const uint64_t pix = uint64_t(c);      // bytes of one input pixel
	const uint64_t line = uint64_t(k) * c; // bytes of one window row
	uint8_t *out = dst;
	for (uint32_t oy = row0; oy < row0 + rows; oy++) {
		for (uint32_t ox = 0; ox < ow; ox++) {
			const int64_t y0 = int64_t(oy) * stride - pad, x0 = int64_t(ox) * stride - pad;
			for (uint32_t ky = 0; ky < k; ky++, out += line) {
				const int64_t y = y0 + ky;
				if (y < 0 || y >= h) {
					std::memset(out, 0, line);
					continue;
				}
				const uint8_t *row = src + uint64_t(y) * w * pix;
				if (x0 >= 0 && x0 + k <= w) { // the common case: one run
					std::memcpy(out, row + uint64_t(x0) * pix, line);
					continue;
				}
				for (uint32_t kx = 0; kx < k; kx++) {
					const int64_t x = x0 + kx;
					if (x < 0 || x >= w)
						std::memset(out + kx * pix, 0, pix);
					else
						std::memcpy(out + kx * pix, row + uint64_t(x) * pix, pix);
				}
			}
		}
	}
}

void maxpool_i8(uint8_t *dst, const uint8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
		uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows)
{
	const uint32_t ow = (w + 2 * pad - k) / stride + 1;
	int8_t acc[kChunk], in[kChunk];
	uint8_t *out = dst;
	for (uint32_t oy = row0; oy < row0 + rows; oy++) {
		for (uint32_t ox = 0; ox < ow; ox++, out += c) {
			const int64_t y0 = int64_t(oy) * stride - pad, x0 = int64_t(ox) * stride - pad;
			const uint32_t ya = uint32_t(std::max<int64_t>(y0, 0)), xa = uint32_t(std::max<int64_t>(x0, 0));
			const uint32_t yb = uint32_t(std::min<int64_t>(y0 + k, h)), xb = uint32_t(std::min<int64_t>(x0 + k, w));
			for (uint32_t c0 = 0; c0 < c; c0 += kChunk) {
				const uint32_t cnt = std::min<uint32_t>(kChunk, c - c0);
				std::fill(std::begin(acc), std::end(acc), int8_t(-128));
				for (uint32_t y = ya; y < yb; y++)
					for (uint32_t x = xa; x < xb; x++) {
						std::memcpy(in, src + (uint64_t(y) * w + x) * c + c0, cnt);
						for (unsigned j = 0; j < kChunk; j++)
							acc[j] = in[j] > acc[j] ? in[j] : acc[j];
					}
				std::memcpy(out + c0, acc, cnt);
			}
		}
	}
}

void requant_i8(uint8_t *dst, const uint8_t *src, uint64_t n, const uint8_t *bias, const uint8_t *mult,
		const uint8_t *shift, uint32_t cols, bool relu)
{
	// The tables are read in place (unaligned, as every window operand):
	// no copy whose size a program could choose.
	auto entry = [](const uint8_t *table, uint32_t j) {
		int32_t v;
		std::memcpy(&v, table + uint64_t(j) * 4, 4);
		return v;
	};
	const int32_t lo = relu ? 0 : -128;
	int32_t acc[kChunk];
	int8_t r[kChunk];
	uint32_t j = 0; // channel of element i
	for (uint64_t i = 0; i < n; i += kChunk) {
		const unsigned cnt = unsigned(std::min<uint64_t>(kChunk, n - i));
		std::memcpy(acc, src + i * 4, size_t(cnt) * 4);
		for (unsigned e = 0; e < cnt; e++) {
			// |v| <= 2^32 and mult < 2^31: p fits in 63 bits. Half
			// up without an addition that could overflow: floor(p /
			// 2^s) plus the bit just below the cut.
			const int64_t p = (int64_t(acc[e]) + entry(bias, j)) * entry(mult, j);
			const int s = entry(shift, j);
			int64_t q = s ? (p >> s) + ((p >> (s - 1)) & 1) : p;
			q = q > 127 ? 127 : q < lo ? lo : q;
			r[e] = int8_t(q);
			if (++j == cols)
				j = 0;
		}
		std::memcpy(dst + i, r, cnt);
	}
}

void vaddq_i8(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n, uint32_t mx, uint32_t my,
	      uint32_t shift, bool relu)
{
	const int32_t a = int32_t(mx), b = int32_t(my), half = shift ? 1 << (shift - 1) : 0;
	const int32_t lo = relu ? 0 : -128;
	const int s = int(shift);
	// |x·mx + y·my| < 2^24, so the sum and the rounding fit in 32 bits.
	map2<int8_t>(dst, x, y, n, [a, b, half, lo, s](int8_t p, int8_t q) {
		const int32_t v = (int32_t(p) * a + int32_t(q) * b + half) >> s;
		return int8_t(v > 127 ? 127 : v < lo ? lo : v);
	});
}

bool gemm_i8(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
	     Scratch &s, const std::function<bool()> *stop, Isa isa)
{
#ifdef AIC100_X86_DISPATCH
	if (isa == Isa::Avx2 && best_isa() == Isa::Avx2)
		return gemm_i8_avx2(c, a, b, m, n, k, s, stop);
#else
	(void)isa;
#endif
	return gemm_i8_baseline(c, a, b, m, n, k, s, stop);
}

bool gemm_f32(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
	      Scratch &s, const std::function<bool()> *stop, Isa isa)
{
#ifdef AIC100_X86_DISPATCH
	if (isa == Isa::Avx2 && best_isa() == Isa::Avx2)
		return gemm_f32_avx2(c, a, b, m, n, k, s, stop);
#else
	(void)isa;
#endif
	return gemm_f32_baseline(c, a, b, m, n, k, s, stop);
}

} // namespace aic100::nsp::kernels
