// SPDX-License-Identifier: GPL-2.0-or-later
// The compute kernels behind the NSP's vector and matrix instructions. They
// work on bytes of the workload window, which have no alignment: every
// element goes through memcpy. Callers have checked the ranges; operands
// may overlap (the result is then unspecified, never out of bounds).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace aic100::nsp::kernels {

// Buffers of the GEMMs (packed panels; copies of an operand that overlaps
// C), kept by each core so that a GEMM in a loop does not allocate.
struct Scratch {
	std::vector<uint8_t> a, b, alias_a, alias_b;
};

// The code paths of the GEMMs, in order: Baseline is plain x86-64 (SSE2)
// or whatever the compiler targets; Avx2 is compiled for AVX2+FMA, Avx512
// for AVX-512 F/BW/VL/VNNI, each only used on a CPU that has them. Every
// path gives the same results, bit for bit (docs/nsp.md).
enum class Isa { Baseline, Avx2, Avx512 };
Isa best_isa();
std::vector<Isa> usable_isas(); // Baseline .. best_isa()
const char *isa_name(Isa isa);

void copy(uint8_t *dst, const uint8_t *src, uint64_t n);
void vadd_f32(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n);
void vmul_f32(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n);
void vadd_i8_sat(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n);
void vscale_f32(uint8_t *dst, const uint8_t *src, uint64_t n, float scale);
// kind: 0 ReLU, 1 sigmoid, 2 tanh, 3 GELU (tanh form); others do nothing.
void act_f32(uint8_t *dst, const uint8_t *src, uint64_t n, uint32_t kind);
float sum_f32(const uint8_t *src, uint64_t n);
float max_f32(const uint8_t *src, uint64_t n); // NaNs ignored; -inf for n = 0
void bias_f32(uint8_t *dst, const uint8_t *bias, uint64_t n, uint64_t cols);
void cvt_i32_f32(uint8_t *dst, const uint8_t *src, uint64_t n, float scale);

// The int8 network operations (docs/nsp.md). Rows are output rows
// row0 .. row0+rows-1 of the window's output (out_h × out_w pixels); the
// caller has checked the geometry and the ranges.
//
// im2col: for each output pixel, its K×K×C window (ky, kx, c order, zeros
// where the window leaves the input): a [rows·out_w × K·K·C] matrix.
void im2col_i8(uint8_t *dst, const uint8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
	       uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows);
// Max pooling: per output pixel and channel, the largest input under the
// window (padding is not a value: it never wins).
void maxpool_i8(uint8_t *dst, const uint8_t *src, uint32_t h, uint32_t w, uint32_t c, uint32_t k,
		uint32_t stride, uint32_t pad, uint32_t row0, uint32_t rows);
// Requantization of n i32 accumulators, channel j = i % cols:
// v = src + bias[j] (64-bit), p = v · mult[j], r = p / 2^shift[j] rounded
// half up, saturated to int8, then max(r, 0) with ReLU. The tables are
// `cols` i32 each; a multiplier below 0 counts as 0 and a shift outside
// 0..62 as the nearest end (REQI8 refuses both, but the tables may change
// after its check). `isa` as the GEMMs': every path, the same bits.
void requant_i8(uint8_t *dst, const uint8_t *src, uint64_t n, const uint8_t *bias, const uint8_t *mult,
		const uint8_t *shift, uint32_t cols, bool relu, Isa isa = best_isa());
// dst = sat8((x·mx + y·my) / 2^shift rounded half up), then ReLU if asked.
void vaddq_i8(uint8_t *dst, const uint8_t *x, const uint8_t *y, uint64_t n, uint32_t mx, uint32_t my,
	      uint32_t shift, bool relu, Isa isa = best_isa());

// C[m×n] = A[m×k] × B[k×n], row-major; int8 inputs with int32 accumulation
// (wrapping), or fp32 with MMF32's fused chain (docs/nsp.md). A and B are
// read as they were before C is written (an operand overlapping C is
// copied first). `stop` (may be null) is polled between blocks of rows:
// false when it returned true (C is then partly written). An `isa` the CPU
// lacks falls back to the best it has.
bool gemm_i8(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
	     Scratch &s, const std::function<bool()> *stop, Isa isa = best_isa());
bool gemm_f32(uint8_t *c, const uint8_t *a, const uint8_t *b, uint32_t m, uint32_t n, uint32_t k,
	      Scratch &s, const std::function<bool()> *stop, Isa isa = best_isa());
// MMI8P: gemm_i8's C with B given in MMI8P's packed layout (nsp.h,
// packed_b_size(k, n) bytes at `bp`), read where it is: nothing of B is
// packed at run time. The same bits as gemm_i8 on the unpacked B.
bool gemm_i8_packed(uint8_t *c, const uint8_t *a, const uint8_t *bp, uint32_t m, uint32_t n, uint32_t k,
		    Scratch &s, const std::function<bool()> *stop, Isa isa = best_isa());

} // namespace aic100::nsp::kernels
