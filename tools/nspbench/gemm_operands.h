// SPDX-License-Identifier: GPL-2.0-or-later
// The operands of the GEMM benchmarks: the same pseudo-random matrices for
// the NSP kernels (aic100-nsp-bench) and for their OpenBLAS baseline
// (bench/host_bench.cc), so that both compute the same product.
#pragma once

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
