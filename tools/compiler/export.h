// SPDX-License-Identifier: GPL-2.0-or-later
// A network (network.h) written out for other runtimes: the ONNX Runtime
// baseline of bench/run (bench/ort_baseline.py) rebuilds the same int8
// network from it, so both run the same weights, requantization and
// inputs. Into DIR:
//   network.json   tensors, layers and their parameters; each layer's
//                  weights as an offset and length into weights.bin
//   weights.bin    every layer's int8 weights, in network.h's layouts
//   input-K.bin    the K-th test input (random_input(n, K), NHWC int8)
//   output-K.bin   the reference's output for it (the compiled program's
//                  must equal it byte for byte)
//   tensors-1.bin  every tensor of the reference's first inference, in
//                  tensor order (to compare another runtime layer by layer)
#pragma once

#include <string>

#include "network.h"

namespace aic100::compiler {

// Writes `inputs` test inputs (seeds 1..inputs) with their reference
// outputs. Empty on success, else what failed.
std::string export_network(const Network &n, const std::string &dir, unsigned inputs);

} // namespace aic100::compiler
