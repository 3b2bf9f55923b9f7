// SPDX-License-Identifier: GPL-2.0-or-later
// The operands of the GEMM benchmarks: the same pseudo-random matrices for
// the NSP kernels (aic100-nsp-bench) and for their OpenBLAS baseline
// (bench/host_bench.cc), so that both compute the same product.
#pragma once

#include <aic100/nsp.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

struct GemmOperands {
	std::vector<float> af, bf; // M x K and K x N, in [-1, 1]
	std::vector<int8_t> ai, bi;

	GemmOperands(unsigned m, unsigned n, unsigned k)
		: af(size_t(m) * k), bf(size_t(k) * n), ai(size_t(m) * k), bi(size_t(k) * n)
	{
		std::mt19937 rng(1);
		for (float &x : af)
			x = float(rng() % 2001) / 1000 - 1;
		for (float &x : bf)
			x = float(rng() % 2001) / 1000 - 1;
		for (int8_t &x : ai)
			x = int8_t(rng());
		for (int8_t &x : bi)
			x = int8_t(rng());
	}
};

// A program that runs one GEMM instruction `reps` times, as a workload's
// loop does (the core makes its packing buffers in the first one): C at
// c_off, A at a_off, B at b_off of the window.
inline std::vector<aic100::nsp::Instr> gemm_loop_program(aic100::nsp::Op op, uint64_t a_off, uint64_t b_off,
							 uint64_t c_off, unsigned m, unsigned n, unsigned k,
							 uint64_t reps)
{
	namespace nsp = aic100::nsp;
	return {
		{uint8_t(nsp::Op::Li), 3, 0, 0, 0, c_off},
		{uint8_t(nsp::Op::Li), 4, 0, 0, 0, a_off},
		{uint8_t(nsp::Op::Li), 5, 0, 0, 0, b_off},
		{uint8_t(nsp::Op::Li), 6, 0, 0, 0, reps},
		{uint8_t(op), 3, 4, 5, 0, nsp::pack_mnk(m, n, k)},
		{uint8_t(nsp::Op::Addi), 7, 7, 0, 0, 1},
		{uint8_t(nsp::Op::Bne), 7, 6, 0, 4, 0},
		{uint8_t(nsp::Op::Halt), 0, 0, 0, 0, 0},
	};
}
