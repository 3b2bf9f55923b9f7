// SPDX-License-Identifier: GPL-2.0-or-later
// The plain C++ reference of a network (network.h): direct loops over
// NHWC tensors, no im2col, no GEMM, no code of the compiler's. The
// compiled program's outputs must equal its outputs byte for byte.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "network.h"

namespace aic100::compiler::reference {

// The requantization of one accumulator, as network.h defines it, in
// 128-bit arithmetic.
int8_t requantize(int64_t acc, int32_t bias, int32_t mult, int32_t shift, bool relu);
// The residual add of two int8 values.
int8_t add(int8_t x, int8_t y, const AddParams &p);

// Every tensor of one inference (index = tensor id); `input` must have the
// input's element count.
std::vector<std::vector<int8_t>> run_all(const Network &n, std::span<const int8_t> input);
// The output tensor only.
std::vector<int8_t> run(const Network &n, std::span<const int8_t> input);

} // namespace aic100::compiler::reference
