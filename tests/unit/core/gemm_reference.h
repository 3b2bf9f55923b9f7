// SPDX-License-Identifier: GPL-2.0-or-later
// MMI8's and MMF32's definitions (docs/nsp.md), written the plain way, for
// the tests of the instructions and of the kernels behind them.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aic100::test {

// C = A x B, row-major, int8 products summed modulo 2^32.
inline std::vector<int32_t> reference_i8(const std::vector<int8_t> &a, const std::vector<int8_t> &b, size_t m,
					 size_t n, size_t k)
{
	std::vector<int32_t> c(m * n);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			uint32_t s = 0;
			for (size_t p = 0; p < k; p++)
				s += uint32_t(int32_t(a[i * k + p]) * b[p * n + j]);
			c[i * n + j] = int32_t(s);
		}
	return c;
}

// C = A x B, fp32: one fused multiply-add per k, k ascending, from +0.
inline std::vector<float> reference_f32(const std::vector<float> &a, const std::vector<float> &b, size_t m,
					size_t n, size_t k)
{
	std::vector<float> c(m * n);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			float s = 0.0f;
			for (size_t p = 0; p < k; p++)
				s = std::fma(a[i * k + p], b[p * n + j], s);
			c[i * n + j] = s;
		}
	return c;
}

} // namespace aic100::test
