// SPDX-License-Identifier: GPL-2.0-or-later
// Compute kernels of the NSP interpreter. Written as plain loops over
// fixed-size blocks so that GCC vectorises them at -O2 (its "very cheap"
// cost model only takes loops whose trip count is a known multiple of the
// vector width), with no -march flag. The GEMMs have three code paths, for
// baseline x86-64, AVX2+FMA and AVX-512 with VNNI (micro-kernels written
// with intrinsics in functions compiled for those targets), picked at run
// time by what the CPU has; all three give the same bits (docs/nsp.md).
#include "aic100/nsp_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "aic100/nsp.h" // kReqMaxShift

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AIC100_X86_DISPATCH 1
#define AIC100_AVX2 __attribute__((target("avx2,fma")))
#define AIC100_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))
#include <immintrin.h>
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

// ---- GEMMs: the common blocking ----------------------------------------------
//
// Goto/BLIS-style: for each NC-column panel of B and each KC-deep slice of
// it, the slice is packed into strips of NR columns; for each MC-row block
// of A, the block is packed into strips of MR rows; an MR×NR tile of C is
// then computed from one strip of each by a micro-kernel that keeps the
// tile in registers. The packed layouts and the micro-kernels are those of
// a code path (a "Path" below: MR, NR, the packers and the tile).
//
// The tile starts from C's values when the K slice is not the first
// (`accumulate`): the fp32 sums then go on from where the previous slice
// left them, so the result is the same fused chain over k = 0..K-1
// whatever the blocking (docs/nsp.md, MMF32). Tiles across C's edge run
// on a copy of the part of C inside it.

struct Blocking {
	unsigned kc, mc, nc;
};

// A KC slice of a strip of MMI8P's packed B (nsp.h): the strip holding
// column `col`, from its quad of k pc/4 on.
inline const uint8_t *packed_slice(const uint8_t *bp, uint32_t k, uint32_t col, uint32_t pc)
{
	return bp + col / kPackedCols * packed_b_strip_size(k) + uint64_t(pc) / kPackedDepth * kPackedCols * 4;
}

// With `prepacked` (MMI8P's B), B's strips are read where they are: the
// path's packed B must be nsp.h's layout (NR = kPackedCols, quads of k),
// and the blocking's KC and NC multiples of 4 and NR.
template <class Path>
bool gemm_blocked(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
		  const Blocking &bl, std::vector<uint8_t> &abuf, std::vector<uint8_t> &bbuf,
		  const std::function<bool()> *stop, const uint8_t *prepacked = nullptr)
{
	constexpr unsigned MR = Path::MR, NR = Path::NR;
	using Packed = typename Path::Packed;
	const unsigned mcp = (bl.mc + MR - 1) / MR * MR, ncp = (bl.nc + NR - 1) / NR * NR;
	const unsigned kcp = Path::padded_k(bl.kc);
	// Strips start on 64-byte boundaries.
	const size_t a_strip = Path::a_strip_bytes(kcp), b_strip = size_t(NR) * kcp * sizeof(Packed);
	if (abuf.size() < a_strip * (mcp / MR) + 64)
		abuf.resize(a_strip * (mcp / MR) + 64);
	if (!prepacked && bbuf.size() < b_strip * (ncp / NR) + 64)
		bbuf.resize(b_strip * (ncp / NR) + 64);
	auto align = [](uint8_t *p) { return p + (-reinterpret_cast<uintptr_t>(p) & 63); };
	uint8_t *pa = align(abuf.data()), *pb = align(bbuf.data());
	const uint64_t ldc = uint64_t(n) * 4;

	for (uint32_t jc = 0; jc < n; jc += bl.nc) {
		const unsigned nc = std::min<uint32_t>(bl.nc, n - jc);
		for (uint32_t pc = 0; pc < k; pc += bl.kc) {
			const unsigned kc = std::min<uint32_t>(bl.kc, k - pc);
			const unsigned kp = Path::padded_k(kc);
			// A path without a packer reads MMI8P's strips only.
			if constexpr (requires { &Path::pack_b; }) {
				if (!prepacked)
					for (unsigned jr = 0; jr < nc; jr += NR)
						Path::pack_b(pb + (jr / NR) * b_strip, b, n, pc, kc, jc + jr,
							     std::min(NR, nc - jr));
			}
			for (uint32_t ic = 0; ic < m; ic += bl.mc) {
				if (stop && (*stop)())
					return false;
				const unsigned mc = std::min<uint32_t>(bl.mc, m - ic);
				for (unsigned ir = 0; ir < mc; ir += MR)
					Path::pack_a(pa + (ir / MR) * a_strip, a, k, ic + ir, std::min(MR, mc - ir), pc, kc);
				for (unsigned jr = 0; jr < nc; jr += NR) {
					const unsigned w = std::min(NR, nc - jr);
					const uint8_t *sb = prepacked ? packed_slice(prepacked, k, jc + jr, pc)
								      : pb + (jr / NR) * b_strip;
					for (unsigned ir = 0; ir < mc; ir += MR) {
						const unsigned h = std::min(MR, mc - ir);
						const uint8_t *sa = pa + (ir / MR) * a_strip;
						uint8_t *cp = c + (uint64_t(ic) + ir) * ldc + uint64_t(jc + jr) * 4;
						if (h == MR && w == NR) {
							Path::tile(kp, sa, sb, cp, ldc, pc != 0);
							continue;
						}
						alignas(64) uint8_t t[MR * NR * 4] = {};
						if (pc)
							for (unsigned i = 0; i < h; i++)
								std::memcpy(t + i * NR * 4, cp + i * ldc, w * 4);
						if constexpr (requires { Path::edge_tile; })
							Path::edge_tile(h, kp, sa, sb, t, NR * 4, pc != 0);
						else
							Path::tile(kp, sa, sb, t, NR * 4, pc != 0);
						for (unsigned i = 0; i < h; i++)
							std::memcpy(cp + i * ldc, t + i * NR * 4, w * 4);
					}
				}
			}
		}
	}
	return true;
}

// ---- fp32 --------------------------------------------------------------------
//
// Packed A: per strip, k-major, MR values per k (rows past the edge 0).
// Packed B: per strip, k-major, NR values per k (columns past the edge 0).

template <unsigned MR_, unsigned NR_>
struct F32Packing {
	static constexpr unsigned MR = MR_, NR = NR_;
	using Packed = float;
	static unsigned padded_k(unsigned kc) { return kc; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp * 4 + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		auto *d = reinterpret_cast<float *>(dst);
		float line[256];
		for (unsigned i = 0; i < MR; i++)
			for (unsigned k0 = 0; k0 < kc; k0 += 256) {
				const unsigned cnt = std::min(256u, kc - k0);
				if (i < h)
					std::memcpy(line, a + ((row + i) * k + pc + k0) * 4, cnt * 4);
				else
					std::memset(line, 0, cnt * 4);
				for (unsigned kk = 0; kk < cnt; kk++)
					d[(k0 + kk) * MR + i] = line[kk];
			}
	}
	static void pack_b(uint8_t *dst, const uint8_t *b, uint32_t n, uint32_t pc, unsigned kc, uint64_t col,
			   unsigned w)
	{
		for (unsigned kk = 0; kk < kc; kk++) {
			uint8_t *d = dst + size_t(kk) * NR * 4;
			std::memcpy(d, b + ((uint64_t(pc) + kk) * n + col) * 4, w * 4);
			if (w < NR)
				std::memset(d + w * 4, 0, (NR - w) * 4);
		}
	}
};

// fma(x, y, z) rounded once, from double arithmetic only (for the plain
// path on x86-64, whose baseline has no FMA instruction): x·y is exact in a
// double; the sum is rounded to odd (the double nearest, moved one unit
// towards the exact value when that is inexact and the nearest is even),
// and a double rounded to odd then to nearest float is the float nearest
// the exact value (53 bits >= 2·24 + 2).
AIC100_INLINE float fma_by_double(float x, float y, float z)
{
	const double p = double(x) * double(y), q = double(z);
	const double s = p + q;
	const double bv = s - p; // TwoSum: s + err == p + q exactly
	const double err = (p - (s - bv)) + (q - bv);
	uint64_t bits = std::bit_cast<uint64_t>(s);
	if ((err > 0 || err < 0) && !(bits & 1)) // a NaN or infinite s has err NaN: left alone
		bits += (err > 0) == (s > 0) ? 1 : uint64_t(-1);
	return float(std::bit_cast<double>(bits));
}

AIC100_INLINE float fused(float x, float y, float z)
{
#if defined(__x86_64__) && !defined(__FMA__)
	return fma_by_double(x, y, z);
#else
	return __builtin_fmaf(x, y, z);
#endif
}

struct F32Plain : F32Packing<4, 8> {
	static void tile(unsigned kc, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc, bool acc_in)
	{
		const auto *pa = reinterpret_cast<const float *>(sa);
		const auto *pb = reinterpret_cast<const float *>(sb);
		float acc[MR][NR] = {};
		if (acc_in)
			for (unsigned i = 0; i < MR; i++)
				std::memcpy(acc[i], c + i * ldc, NR * 4);
		for (unsigned kk = 0; kk < kc; kk++)
			for (unsigned i = 0; i < MR; i++)
				for (unsigned j = 0; j < NR; j++)
					acc[i][j] = fused(pa[kk * MR + i], pb[kk * NR + j], acc[i][j]);
		for (unsigned i = 0; i < MR; i++)
			std::memcpy(c + i * ldc, acc[i], NR * 4);
	}
};

// ---- int8, the plain path ------------------------------------------------------
//
// Packed A: per strip, row after row, kp int16 each (k zero padded to a
// multiple of 16); packed B: per strip, column after column, likewise. A
// tile is MR×NR dot products over k, which GCC turns into pmaddwd (16-bit
// products summed in pairs into 32 bits). The sums are unsigned so that
// wrapping is defined.

// Each accumulator is a separate variable: GCC vectorises several
// reductions in one loop, but not an array of them.
AIC100_INLINE void dots_3x4(unsigned kp, const int16_t *__restrict a, const int16_t *__restrict b,
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

struct I8Plain {
	static constexpr unsigned MR = 3, NR = 4;
	using Packed = int16_t;
	static unsigned padded_k(unsigned kc) { return (kc + 15) & ~15u; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp * 2 + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		const unsigned kp = padded_k(kc);
		auto *d = reinterpret_cast<int16_t *>(dst);
		for (unsigned i = 0; i < MR; i++) {
			int16_t *out = d + size_t(i) * kp;
			if (i >= h) {
				std::memset(out, 0, size_t(kp) * 2);
				continue;
			}
			const auto *src = reinterpret_cast<const int8_t *>(a + (row + i) * k + pc);
			for (unsigned kk = 0; kk < kc; kk++)
				out[kk] = src[kk];
			for (unsigned kk = kc; kk < kp; kk++)
				out[kk] = 0;
		}
	}
	static void pack_b(uint8_t *dst, const uint8_t *b, uint32_t n, uint32_t pc, unsigned kc, uint64_t col,
			   unsigned w)
	{
		const unsigned kp = padded_k(kc);
		auto *d = reinterpret_cast<int16_t *>(dst);
		std::memset(d, 0, size_t(NR) * kp * 2);
		for (unsigned kk = 0; kk < kc; kk++) {
			const auto *row = reinterpret_cast<const int8_t *>(b + (uint64_t(pc) + kk) * n + col);
			for (unsigned j = 0; j < w; j++)
				d[size_t(j) * kp + kk] = row[j];
		}
	}
	static void tile(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc, bool acc_in)
	{
		uint32_t t[MR][NR];
		dots_3x4(kp, reinterpret_cast<const int16_t *>(sa), reinterpret_cast<const int16_t *>(sb), t);
		for (unsigned i = 0; i < MR; i++) {
			if (acc_in) {
				uint32_t old[NR];
				std::memcpy(old, c + i * ldc, sizeof(old));
				for (unsigned j = 0; j < NR; j++)
					t[i][j] += old[j];
			}
			std::memcpy(c + i * ldc, t[i], sizeof(t[i]));
		}
	}
};

// ---- int8 on nsp.h's packed B (MMI8P) -------------------------------------------
//
// B's strips are MMI8P's layout (NR = 32 columns, per quad of k one 4-byte
// word per column, offset binary), read where they are: these paths have
// no packer of B. They differ in how they hold A.

// The plain path: packed A per quad of k, MR words of 4 s8 (one per row).
struct I8PlainQuads {
	static constexpr unsigned MR = 4, NR = kPackedCols;
	using Packed = uint8_t;
	static unsigned padded_k(unsigned kc) { return (kc + 3) & ~3u; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		const unsigned kp = padded_k(kc);
		for (unsigned i = 0; i < MR; i++)
			for (unsigned kk = 0; kk < kp; kk++)
				dst[(size_t(kk / 4) * MR + i) * 4 + kk % 4] =
					i < h && kk < kc ? a[(row + i) * k + pc + kk] : 0;
	}
	static void tile(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc, bool acc_in)
	{
		uint32_t acc[MR][NR] = {};
		if (acc_in)
			for (unsigned i = 0; i < MR; i++)
				std::memcpy(acc[i], c + i * ldc, sizeof(acc[i]));
		for (unsigned q = 0; q < kp / 4; q++, sa += MR * 4, sb += NR * 4)
			for (unsigned i = 0; i < MR; i++)
				for (unsigned j = 0; j < NR; j++)
					for (unsigned t = 0; t < 4; t++)
						acc[i][j] += uint32_t(int32_t(int8_t(sa[i * 4 + t])) *
								      int32_t(int8_t(sb[j * 4 + t] ^ 0x80)));
		for (unsigned i = 0; i < MR; i++)
			std::memcpy(c + i * ldc, acc[i], sizeof(acc[i]));
	}
};

#ifdef AIC100_X86_DISPATCH

// ---- AVX2 + FMA ----------------------------------------------------------------

// fp32: a 6×16 tile in 12 ymm accumulators.
struct F32Avx2 : F32Packing<6, 16> {
	AIC100_AVX2 static void tile(unsigned kc, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
				     bool acc_in)
	{
		const auto *pa = reinterpret_cast<const float *>(sa);
		const auto *pb = reinterpret_cast<const float *>(sb);
		__m256 acc[MR][2];
#pragma GCC unroll 6
		for (unsigned i = 0; i < MR; i++) {
			auto *row = reinterpret_cast<float *>(c + i * ldc);
			acc[i][0] = acc_in ? _mm256_loadu_ps(row) : _mm256_setzero_ps();
			acc[i][1] = acc_in ? _mm256_loadu_ps(row + 8) : _mm256_setzero_ps();
		}
		for (unsigned kk = 0; kk < kc; kk++, pa += MR, pb += NR) {
			const __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8);
#pragma GCC unroll 6
			for (unsigned i = 0; i < MR; i++) {
				const __m256 av = _mm256_broadcast_ss(pa + i);
				acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
				acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
			}
		}
#pragma GCC unroll 6
		for (unsigned i = 0; i < MR; i++) {
			auto *row = reinterpret_cast<float *>(c + i * ldc);
			_mm256_storeu_ps(row, acc[i][0]);
			_mm256_storeu_ps(row + 8, acc[i][1]);
		}
	}
};

// int8: pairs of k as int16 (vpmaddwd: two products summed into 32 bits,
// exact), a 6×16 tile. Packed A: per pair of k, MR pairs (one 32-bit word
// per row); packed B: per pair of k, NR pairs.
struct I8Avx2 {
	static constexpr unsigned MR = 6, NR = 16;
	using Packed = int16_t;
	static unsigned padded_k(unsigned kc) { return (kc + 1) & ~1u; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp * 2 + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		const unsigned kp = padded_k(kc);
		auto *d = reinterpret_cast<int16_t *>(dst);
		for (unsigned i = 0; i < MR; i++) {
			const auto *src = reinterpret_cast<const int8_t *>(a + (row + i) * k + pc);
			for (unsigned kk = 0; kk < kp; kk++)
				d[(kk / 2) * MR * 2 + i * 2 + kk % 2] = i < h && kk < kc ? src[kk] : 0;
		}
	}
	static void pack_b(uint8_t *dst, const uint8_t *b, uint32_t n, uint32_t pc, unsigned kc, uint64_t col,
			   unsigned w)
	{
		const unsigned kp = padded_k(kc);
		auto *d = reinterpret_cast<int16_t *>(dst);
		for (unsigned kk = 0; kk < kp; kk++) {
			int16_t *out = d + (kk / 2) * NR * 2 + kk % 2;
			if (kk >= kc) {
				for (unsigned j = 0; j < NR; j++)
					out[j * 2] = 0;
				continue;
			}
			const auto *row = reinterpret_cast<const int8_t *>(b + (uint64_t(pc) + kk) * n + col);
			for (unsigned j = 0; j < NR; j++)
				out[j * 2] = j < w ? row[j] : 0;
		}
	}
	AIC100_AVX2 static void tile(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
				     bool acc_in)
	{
		__m256i acc[MR][2];
#pragma GCC unroll 6
		for (unsigned i = 0; i < MR; i++) {
			uint8_t *row = c + i * ldc;
			acc[i][0] = acc_in ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row))
					   : _mm256_setzero_si256();
			acc[i][1] = acc_in ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 32))
					   : _mm256_setzero_si256();
		}
		for (unsigned q = 0; q < kp / 2; q++, sa += MR * 4, sb += NR * 4) {
			const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i *>(sb));
			const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i *>(sb + 32));
#pragma GCC unroll 6
			for (unsigned i = 0; i < MR; i++) {
				int32_t pair;
				std::memcpy(&pair, sa + i * 4, 4);
				const __m256i av = _mm256_set1_epi32(pair);
				acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
				acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
			}
		}
#pragma GCC unroll 6
		for (unsigned i = 0; i < MR; i++) {
			uint8_t *row = c + i * ldc;
			_mm256_storeu_si256(reinterpret_cast<__m256i *>(row), acc[i][0]);
			_mm256_storeu_si256(reinterpret_cast<__m256i *>(row + 32), acc[i][1]);
		}
	}
};

// int8 on MMI8P's packed B: per quad, eight columns' words (32 bytes)
// unbiased and widened to int16 in two halves; vpmaddwd with a row's quad
// of A leaves two partial sums per column, which horizontal adds join
// (exact: each pair of products fits 32 bits; the sums wrap as MMI8's).
// Packed A: per quad of k, MR rows of 4 int16. The tile goes over its 32
// columns eight at a time.
struct I8Avx2Quads {
	static constexpr unsigned MR = 4, NR = kPackedCols;
	using Packed = uint8_t;
	static unsigned padded_k(unsigned kc) { return (kc + 3) & ~3u; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp * 2 + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		const unsigned kp = padded_k(kc);
		auto *d = reinterpret_cast<int16_t *>(dst);
		for (unsigned i = 0; i < MR; i++)
			for (unsigned kk = 0; kk < kp; kk++)
				d[(size_t(kk / 4) * MR + i) * 4 + kk % 4] =
					i < h && kk < kc ? int8_t(a[(row + i) * k + pc + kk]) : 0;
	}
	AIC100_AVX2 static void tile(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
				     bool acc_in)
	{
		const __m256i bias = _mm256_set1_epi8(char(0x80));
		for (unsigned j0 = 0; j0 < NR; j0 += 8) {
			__m256i acc[MR][2];
#pragma GCC unroll 4
			for (unsigned i = 0; i < MR; i++)
				acc[i][0] = acc[i][1] = _mm256_setzero_si256();
			const uint8_t *pa = sa, *pb = sb + j0 * 4;
			for (unsigned q = 0; q < kp / 4; q++, pa += MR * 8, pb += NR * 4) {
				const __m256i raw = _mm256_xor_si256(
					_mm256_loadu_si256(reinterpret_cast<const __m256i *>(pb)), bias);
				const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw));
				const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(raw, 1));
#pragma GCC unroll 4
				for (unsigned i = 0; i < MR; i++) {
					int64_t quad;
					std::memcpy(&quad, pa + i * 8, 8);
					const __m256i av = _mm256_set1_epi64x(quad);
					acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, lo));
					acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, hi));
				}
			}
#pragma GCC unroll 4
			for (unsigned i = 0; i < MR; i++) {
				// Per 128-bit lane columns (0, 1, 4, 5) and (2, 3, 6, 7).
				__m256i r = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xD8);
				auto *out = reinterpret_cast<__m256i *>(c + i * ldc + j0 * 4);
				if (acc_in)
					r = _mm256_add_epi32(r, _mm256_loadu_si256(out));
				_mm256_storeu_si256(out, r);
			}
		}
	}
};

// ---- AVX-512 (F, BW, VL, VNNI) ---------------------------------------------------

// fp32: a 12×32 tile in 24 zmm accumulators.
struct F32Avx512 : F32Packing<12, 32> {
	AIC100_AVX512 static void tile(unsigned kc, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
				       bool acc_in)
	{
		const auto *pa = reinterpret_cast<const float *>(sa);
		const auto *pb = reinterpret_cast<const float *>(sb);
		__m512 acc[MR][2];
#pragma GCC unroll 12
		for (unsigned i = 0; i < MR; i++) {
			uint8_t *row = c + i * ldc;
			acc[i][0] = acc_in ? _mm512_loadu_ps(row) : _mm512_setzero_ps();
			acc[i][1] = acc_in ? _mm512_loadu_ps(row + 64) : _mm512_setzero_ps();
		}
		for (unsigned kk = 0; kk < kc; kk++, pa += MR, pb += NR) {
			const __m512 b0 = _mm512_load_ps(pb), b1 = _mm512_load_ps(pb + 16);
#pragma GCC unroll 12
			for (unsigned i = 0; i < MR; i++) {
				const __m512 av = _mm512_set1_ps(pa[i]);
				acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
				acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
			}
		}
#pragma GCC unroll 12
		for (unsigned i = 0; i < MR; i++) {
			uint8_t *row = c + i * ldc;
			_mm512_storeu_ps(row, acc[i][0]);
			_mm512_storeu_ps(row + 64, acc[i][1]);
		}
	}
};

// int8 with VNNI: vpdpbusd adds four u8×s8 products into each 32-bit lane.
// B is packed biased by 128 (b + 128 as u8), A as it is (s8), so a lane
// gets Σ a·(b + 128) = Σ a·b + 128·Σ a; the tile subtracts 128 times each
// row's sum of A over the slice (all modulo 2^32, where the sums wrap as
// MMI8's do). Packed A: per quad of k, MR words of 4 s8 (one per row), then
// the MR row sums; packed B: per quad of k, NR words of 4 u8.
struct I8Avx512 {
	static constexpr unsigned MR = 12, NR = 32;
	using Packed = uint8_t;
	static unsigned padded_k(unsigned kc) { return (kc + 3) & ~3u; }
	static size_t a_strip_bytes(unsigned kcp) { return (size_t(MR) * kcp + MR * 4 + 63) & ~size_t(63); }
	static void pack_a(uint8_t *dst, const uint8_t *a, uint32_t k, uint64_t row, unsigned h, uint32_t pc,
			   unsigned kc)
	{
		const unsigned kp = padded_k(kc);
		int32_t sums[MR] = {};
		for (unsigned i = 0; i < MR; i++) {
			if (i >= h) {
				for (unsigned q = 0; q < kp / 4; q++)
					std::memset(dst + (size_t(q) * MR + i) * 4, 0, 4);
				continue;
			}
			const auto *src = reinterpret_cast<const int8_t *>(a + (row + i) * k + pc);
			int32_t s = 0;
			for (unsigned kk = 0; kk < kc; kk++)
				s += src[kk];
			sums[i] = s;
			for (unsigned q = 0; q < kc / 4; q++)
				std::memcpy(dst + (size_t(q) * MR + i) * 4, src + q * 4, 4);
			if (kc % 4) {
				uint8_t last[4] = {};
				std::memcpy(last, src + kc / 4 * 4, kc % 4);
				std::memcpy(dst + (size_t(kc / 4) * MR + i) * 4, last, 4);
			}
		}
		std::memcpy(dst + size_t(kp) * MR, sums, sizeof(sums));
	}
	// Four rows of B (one quad of k) interleaved byte by byte, 16 columns
	// at a time (SSE2, part of x86-64's baseline): with few rows of A this
	// is most of an MMI8's time.
	static void pack_b(uint8_t *dst, const uint8_t *b, uint32_t n, uint32_t pc, unsigned kc, uint64_t col,
			   unsigned w)
	{
		const unsigned kp = padded_k(kc);
		const __m128i bias = _mm_set1_epi8(char(0x80));
		for (unsigned q = 0; q < kp / 4; q++) {
			uint8_t *out = dst + size_t(q) * NR * 4;
			for (unsigned j0 = 0; j0 < NR; j0 += 16) {
				__m128i r[4];
				for (unsigned t = 0; t < 4; t++) {
					const unsigned kk = q * 4 + t;
					const uint8_t *src = b + (uint64_t(pc) + kk) * n + col + j0;
					if (kk < kc && j0 + 16 <= w) {
						r[t] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
					} else {
						uint8_t part[16] = {}; // zeros: 0x80 once biased
						if (kk < kc && j0 < w)
							std::memcpy(part, src, std::min(16u, w - j0));
						r[t] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(part));
					}
					r[t] = _mm_xor_si128(r[t], bias);
				}
				const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), hi01 = _mm_unpackhi_epi8(r[0], r[1]);
				const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
				auto *o = reinterpret_cast<__m128i *>(out + j0 * 4);
				_mm_storeu_si128(o, _mm_unpacklo_epi16(lo01, lo23));     // columns 0-3
				_mm_storeu_si128(o + 1, _mm_unpackhi_epi16(lo01, lo23)); // 4-7
				_mm_storeu_si128(o + 2, _mm_unpacklo_epi16(hi01, hi23)); // 8-11
				_mm_storeu_si128(o + 3, _mm_unpackhi_epi16(hi01, hi23)); // 12-15
			}
		}
	}
	// The first H rows of a strip's tile: a block's last rows (a few
	// pixels per NSP in a network's late layers) cost 4 or 8 rows' work
	// instead of 12.
	template <unsigned H>
	AIC100_AVX512 static void tile_rows(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
					    bool acc_in)
	{
		__m512i acc[H][2];
#pragma GCC unroll 12
		for (unsigned i = 0; i < H; i++) {
			uint8_t *row = c + i * ldc;
			acc[i][0] = acc_in ? _mm512_loadu_si512(row) : _mm512_setzero_si512();
			acc[i][1] = acc_in ? _mm512_loadu_si512(row + 64) : _mm512_setzero_si512();
		}
		const uint8_t *sums = sa + size_t(kp) * MR;
		for (unsigned q = 0; q < kp / 4; q++, sa += MR * 4, sb += NR * 4) {
			// Unaligned loads: an MMI8P strip lies wherever the program put it.
			const __m512i b0 = _mm512_loadu_si512(sb), b1 = _mm512_loadu_si512(sb + 64);
#pragma GCC unroll 12
			for (unsigned i = 0; i < H; i++) {
				int32_t quad;
				std::memcpy(&quad, sa + i * 4, 4);
				const __m512i av = _mm512_set1_epi32(quad);
				acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], b0, av);
				acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], b1, av);
			}
		}
#pragma GCC unroll 12
		for (unsigned i = 0; i < H; i++) {
			int32_t s;
			std::memcpy(&s, sums + i * 4, 4);
			const __m512i bias = _mm512_set1_epi32(int32_t(uint32_t(s) << 7));
			uint8_t *row = c + i * ldc;
			_mm512_storeu_si512(row, _mm512_sub_epi32(acc[i][0], bias));
			_mm512_storeu_si512(row + 64, _mm512_sub_epi32(acc[i][1], bias));
		}
	}
	static void tile(unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc, bool acc_in)
	{
		tile_rows<MR>(kp, sa, sb, c, ldc, acc_in);
	}
	// A tile of h < MR rows.
	static void edge_tile(unsigned h, unsigned kp, const uint8_t *sa, const uint8_t *sb, uint8_t *c, uint64_t ldc,
			      bool acc_in)
	{
		if (h <= 4)
			tile_rows<4>(kp, sa, sb, c, ldc, acc_in);
		else if (h <= 8)
			tile_rows<8>(kp, sa, sb, c, ldc, acc_in);
		else
			tile_rows<MR>(kp, sa, sb, c, ldc, acc_in);
	}
};

// int8 with few rows of A (the row split of a network over several NSPs
// leaves an NSP a few output pixels of a late layer): B is read where it
// is, two rows (two k) at a time, interleaved in registers into int16
// pairs and multiplied with vpdpwssd (two products summed into 32 bits,
// exact, then added wrapping). No packing: with few rows, packing B cost
// more than the products. Rows of A go by H (1..4), columns by 64 (four
// zmm per row); lane e of the four accumulators of a row holds the
// columns given by narrow_column().
constexpr unsigned kNarrowRows = 4, kNarrowCols = 64;
// Up to this many rows of A, the narrow kernel beats packing (measured).
constexpr uint32_t kI8NarrowMaxRows = 8;

// Column (0..63) of element e (0..15) of accumulator v (0..3): the byte
// unpacks work within 128-bit lanes and each sign extension takes half a
// register.
constexpr unsigned narrow_column(unsigned v, unsigned e)
{
	constexpr unsigned base[4] = {0, 8, 32, 40};
	return base[v] + (e < 8 ? e : 16 + e - 8);
}

// GCC 12's headers build 512-bit shuffles with an "undefined" operand that
// -Wmaybe-uninitialized then reports inside the intrinsic.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <unsigned H>
AIC100_AVX512 void narrow_block(uint8_t *c, uint64_t ldc, const uint8_t *a, uint32_t k, const uint8_t *b, uint32_t n,
				unsigned w)
{
	const __mmask64 cols = w >= 64 ? ~__mmask64(0) : (__mmask64(1) << w) - 1;
	__m512i acc[H][4];
#pragma GCC unroll 4
	for (unsigned r = 0; r < H; r++)
		for (unsigned v = 0; v < 4; v++)
			acc[r][v] = _mm512_setzero_si512();
	for (uint32_t p = 0; p < k; p += 2) {
		const bool pair = p + 1 < k;
		const __m512i x = _mm512_maskz_loadu_epi8(cols, b + uint64_t(p) * n);
		const __m512i y = pair ? _mm512_maskz_loadu_epi8(cols, b + uint64_t(p + 1) * n) : _mm512_setzero_si512();
		const __m512i lo = _mm512_unpacklo_epi8(x, y), hi = _mm512_unpackhi_epi8(x, y);
		const __m512i lo_up = _mm512_shuffle_i64x2(lo, lo, 0xEE), hi_up = _mm512_shuffle_i64x2(hi, hi, 0xEE);
		const __m512i bv[4] = {_mm512_cvtepi8_epi16(_mm512_castsi512_si256(lo)),
				       _mm512_cvtepi8_epi16(_mm512_castsi512_si256(hi)),
				       _mm512_cvtepi8_epi16(_mm512_castsi512_si256(lo_up)),
				       _mm512_cvtepi8_epi16(_mm512_castsi512_si256(hi_up))};
#pragma GCC unroll 4
		for (unsigned r = 0; r < H; r++) {
			const auto *ar = reinterpret_cast<const int8_t *>(a + uint64_t(r) * k + p);
			const uint32_t av = uint16_t(int16_t(ar[0])) | uint32_t(uint16_t(int16_t(pair ? ar[1] : 0))) << 16;
			const __m512i ap = _mm512_set1_epi32(int32_t(av));
#pragma GCC unroll 4
			for (unsigned v = 0; v < 4; v++)
				acc[r][v] = _mm512_dpwssd_epi32(acc[r][v], bv[v], ap);
		}
	}
	for (unsigned r = 0; r < H; r++) {
		alignas(64) int32_t t[4][16];
		for (unsigned v = 0; v < 4; v++)
			_mm512_store_si512(t[v], acc[r][v]);
		int32_t row[kNarrowCols];
		for (unsigned v = 0; v < 4; v++)
			for (unsigned e = 0; e < 16; e++)
				row[narrow_column(v, e)] = t[v][e];
		std::memcpy(c + uint64_t(r) * ldc, row, size_t(w) * 4);
	}
}
#pragma GCC diagnostic pop

bool gemm_i8_narrow(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
		    const std::function<bool()> *stop)
{
	const uint64_t ldc = uint64_t(n) * 4;
	for (uint32_t i = 0; i < m; i += kNarrowRows) {
		const unsigned h = std::min(kNarrowRows, m - i);
		for (uint32_t j = 0; j < n; j += kNarrowCols) {
			if (j % (16 * kNarrowCols) == 0 && stop && (*stop)())
				return false;
			const unsigned w = std::min(kNarrowCols, n - j);
			uint8_t *cp = c + uint64_t(i) * ldc + uint64_t(j) * 4;
			const uint8_t *ap = a + uint64_t(i) * k, *bp = b + j;
			switch (h) {
			case 1:
				narrow_block<1>(cp, ldc, ap, k, bp, n, w);
				break;
			case 2:
				narrow_block<2>(cp, ldc, ap, k, bp, n, w);
				break;
			case 3:
				narrow_block<3>(cp, ldc, ap, k, bp, n, w);
				break;
			default:
				narrow_block<4>(cp, ldc, ap, k, bp, n, w);
				break;
			}
		}
	}
	return true;
}

// ---- REQI8 and VADDQI8 with AVX-512 ---------------------------------------------
//
// The plain loops' integer arithmetic (requant_plain(), vaddq_i8()), a
// vector of elements at a time: exact, so the same bits. REQI8's tables
// are read in place, as the plain loop reads them.

// GCC 12's masked loads and conversions warn as narrow_block's shuffles do.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// REQI8 on `len` elements of channels 0..len-1, 8 at a time in 64-bit
// lanes: (acc + bias) · mult as acc · mult + bias · mult, each a 32×32-bit
// product (vpmuldq) below 2^62, so the sum is exact.
AIC100_AVX512 void requant_row_avx512(uint8_t *dst, const uint8_t *src, uint32_t len, const uint8_t *bias,
				      const uint8_t *mult, const uint8_t *shift, int32_t lo)
{
	const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
	const __m512i max_shift = _mm512_set1_epi64(kReqMaxShift);
	const __m512i low = _mm512_set1_epi64(lo), high = _mm512_set1_epi64(127);
	for (uint32_t j = 0; j < len; j += 8) {
		const __mmask8 m = len - j >= 8 ? __mmask8(0xFF) : __mmask8((1u << (len - j)) - 1);
		const __m512i acc = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, src + uint64_t(j) * 4));
		const __m512i b = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, bias + uint64_t(j) * 4));
		const __m512i mu = _mm512_max_epi64(_mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, mult + uint64_t(j) * 4)), zero);
		__m512i sh = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, shift + uint64_t(j) * 4));
		sh = _mm512_min_epi64(_mm512_max_epi64(sh, zero), max_shift);
		const __m512i p = _mm512_add_epi64(_mm512_mul_epi32(acc, mu), _mm512_mul_epi32(b, mu));
		// Half up: the bit just below the cut, where there is a cut.
		const __m512i below = _mm512_srav_epi64(p, _mm512_max_epi64(_mm512_sub_epi64(sh, one), zero));
		const __m512i round = _mm512_maskz_and_epi64(_mm512_cmpgt_epi64_mask(sh, zero), below, one);
		__m512i q = _mm512_add_epi64(_mm512_srav_epi64(p, sh), round);
		q = _mm512_min_epi64(_mm512_max_epi64(q, low), high);
		_mm512_mask_cvtepi64_storeu_epi8(dst + j, m, q);
	}
}

// Rows of `cols` elements, each from channel 0 (element i is channel i % cols).
void requant_avx512(uint8_t *dst, const uint8_t *src, uint64_t n, const uint8_t *bias, const uint8_t *mult,
		    const uint8_t *shift, uint32_t cols, bool relu)
{
	for (uint64_t off = 0; off < n; off += cols)
		requant_row_avx512(dst + off, src + off * 4, uint32_t(std::min<uint64_t>(cols, n - off)), bias, mult,
				   shift, relu ? 0 : -128);
}

// VADDQI8, 16 elements at a time in 32-bit lanes (|x·mx + y·my| < 2^24).
AIC100_AVX512 void vaddq_avx512(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n, uint32_t mx,
				uint32_t my, uint32_t shift, bool relu)
{
	const __m512i a = _mm512_set1_epi32(int32_t(mx)), b = _mm512_set1_epi32(int32_t(my));
	const __m512i half = _mm512_set1_epi32(shift ? 1 << (shift - 1) : 0);
	const __m512i low = _mm512_set1_epi32(relu ? 0 : -128), high = _mm512_set1_epi32(127);
	const __m128i count = _mm_cvtsi32_si128(int(shift));
	for (uint64_t i = 0; i < n; i += 16) {
		const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
		const __m512i p = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, x + i));
		const __m512i q = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, y + i));
		__m512i v = _mm512_add_epi32(_mm512_mullo_epi32(p, a), _mm512_mullo_epi32(q, b));
		v = _mm512_sra_epi32(_mm512_add_epi32(v, half), count);
		v = _mm512_min_epi32(_mm512_max_epi32(v, low), high);
		_mm512_mask_cvtepi32_storeu_epi8(dst + i, m, v);
	}
}
#pragma GCC diagnostic pop

#endif // AIC100_X86_DISPATCH

// Blocking per path: the A block (MC×KC) stays in L2, a B strip (KC×NR)
// in L1 (measured at 256³ and 1024³ on a Sapphire Rapids host).
constexpr Blocking kF32Plain{256, 128, 1024}, kF32Avx2{256, 120, 1024}, kF32Avx512{256, 144, 1024};
constexpr Blocking kI8Plain{512, 96, 256}, kI8Avx2{512, 120, 1024}, kI8Avx512{1024, 144, 1024};
constexpr Blocking kI8PlainQuads{512, 96, 256}, kI8Avx2Quads{512, 120, 1024};
static_assert(kI8PlainQuads.kc % 4 == 0 && kI8PlainQuads.nc % kPackedCols == 0 && kI8Avx2Quads.kc % 4 == 0 &&
		      kI8Avx2Quads.nc % kPackedCols == 0 && kI8Avx512.kc % 4 == 0 && kI8Avx512.nc % kPackedCols == 0,
	      "MMI8P's strips are read in slices of whole quads and strips");

// MMF32 and MMI8 read A and B as they were before C is written: an operand
// that overlaps C is copied first.
const uint8_t *unaliased(const uint8_t *op, uint64_t bytes, const uint8_t *c, uint64_t c_bytes,
			 std::vector<uint8_t> &copy)
{
	const auto o = reinterpret_cast<uintptr_t>(op), cc = reinterpret_cast<uintptr_t>(c);
	if (o + bytes <= cc || cc + c_bytes <= o)
		return op;
	copy.assign(op, op + bytes);
	return copy.data();
}
} // namespace

Isa best_isa()
{
#ifdef AIC100_X86_DISPATCH
	static const Isa best = [] {
		__builtin_cpu_init();
		if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
			return Isa::Baseline;
		if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
			return Isa::Avx512;
		return Isa::Avx2;
	}();
	return best;
#else
	return Isa::Baseline;
#endif
}

std::vector<Isa> usable_isas()
{
	std::vector<Isa> v = {Isa::Baseline};
	if (best_isa() >= Isa::Avx2)
		v.push_back(Isa::Avx2);
	if (best_isa() >= Isa::Avx512)
		v.push_back(Isa::Avx512);
	return v;
}

const char *isa_name(Isa isa)
{
	switch (isa) {
	case Isa::Avx2:
		return "avx2+fma";
	case Isa::Avx512:
		return "avx512+vnni";
	default:
		return "baseline";
	}
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

namespace {

void requant_plain(uint8_t *dst, const uint8_t *src, uint64_t n, const uint8_t *bias, const uint8_t *mult,
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
			// The tables are in shared memory: REQI8 checked them, but
			// another NSP or a DMA may have changed them since. Out of
			// range reads as the nearest valid value, never as UB.
			const int64_t p = (int64_t(acc[e]) + entry(bias, j)) * std::max(entry(mult, j), 0);
			const int s = std::clamp(entry(shift, j), 0, int(kReqMaxShift));
			int64_t q = s ? (p >> s) + ((p >> (s - 1)) & 1) : p;
			q = q > 127 ? 127 : q < lo ? lo : q;
			r[e] = int8_t(q);
			if (++j == cols)
				j = 0;
		}
		std::memcpy(dst + i, r, cnt);
	}
}

} // namespace

// Rows narrower than a vector would leave most of its lanes idle.
void requant_i8(uint8_t *dst, const uint8_t *src, uint64_t n, const uint8_t *bias, const uint8_t *mult,
		const uint8_t *shift, uint32_t cols, bool relu, Isa isa)
{
#ifdef AIC100_X86_DISPATCH
	if (std::min(isa, best_isa()) == Isa::Avx512 && cols >= 8)
		return requant_avx512(dst, src, n, bias, mult, shift, cols, relu);
#endif
	(void)isa;
	requant_plain(dst, src, n, bias, mult, shift, cols, relu);
}

void vaddq_i8(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n, uint32_t mx, uint32_t my,
	      uint32_t shift, bool relu, Isa isa)
{
#ifdef AIC100_X86_DISPATCH
	if (std::min(isa, best_isa()) == Isa::Avx512)
		return vaddq_avx512(dst, x, y, n, mx, my, shift, relu);
#endif
	(void)isa;
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
	const uint64_t c_bytes = uint64_t(m) * n * 4;
	a = unaliased(a, uint64_t(m) * k, c, c_bytes, s.alias_a);
	b = unaliased(b, uint64_t(k) * n, c, c_bytes, s.alias_b);
	isa = std::min(isa, best_isa());
#ifdef AIC100_X86_DISPATCH
	if (isa == Isa::Avx512 && m <= kI8NarrowMaxRows)
		return gemm_i8_narrow(c, a, b, m, n, k, stop);
	if (isa == Isa::Avx512)
		return gemm_blocked<I8Avx512>(c, a, b, m, n, k, kI8Avx512, s.a, s.b, stop);
	if (isa == Isa::Avx2)
		return gemm_blocked<I8Avx2>(c, a, b, m, n, k, kI8Avx2, s.a, s.b, stop);
#endif
	return gemm_blocked<I8Plain>(c, a, b, m, n, k, kI8Plain, s.a, s.b, stop);
}

bool gemm_i8_packed(uint8_t *c, const uint8_t *a, const uint8_t *bp, uint32_t m, uint32_t n, uint32_t k,
		    Scratch &s, const std::function<bool()> *stop, Isa isa)
{
	const uint64_t c_bytes = uint64_t(m) * n * 4;
	a = unaliased(a, uint64_t(m) * k, c, c_bytes, s.alias_a);
	bp = unaliased(bp, packed_b_size(k, n), c, c_bytes, s.alias_b);
	isa = std::min(isa, best_isa());
#ifdef AIC100_X86_DISPATCH
	static_assert(I8Avx512::NR == kPackedCols, "the VNNI path's packed B is MMI8P's");
	if (isa == Isa::Avx512)
		return gemm_blocked<I8Avx512>(c, a, nullptr, m, n, k, kI8Avx512, s.a, s.b, stop, bp);
	if (isa == Isa::Avx2)
		return gemm_blocked<I8Avx2Quads>(c, a, nullptr, m, n, k, kI8Avx2Quads, s.a, s.b, stop, bp);
#endif
	return gemm_blocked<I8PlainQuads>(c, a, nullptr, m, n, k, kI8PlainQuads, s.a, s.b, stop, bp);
}

bool gemm_f32(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
	      Scratch &s, const std::function<bool()> *stop, Isa isa)
{
	const uint64_t c_bytes = uint64_t(m) * n * 4;
	a = unaliased(a, uint64_t(m) * k * 4, c, c_bytes, s.alias_a);
	b = unaliased(b, uint64_t(k) * n * 4, c, c_bytes, s.alias_b);
	isa = std::min(isa, best_isa());
#ifdef AIC100_X86_DISPATCH
	if (isa == Isa::Avx512)
		return gemm_blocked<F32Avx512>(c, a, b, m, n, k, kF32Avx512, s.a, s.b, stop);
	if (isa == Isa::Avx2)
		return gemm_blocked<F32Avx2>(c, a, b, m, n, k, kF32Avx2, s.a, s.b, stop);
#endif
	return gemm_blocked<F32Plain>(c, a, b, m, n, k, kF32Plain, s.a, s.b, stop);
}

} // namespace aic100::nsp::kernels
