// SPDX-License-Identifier: GPL-2.0-or-later
// Compiled networks (tools/compiler) as program containers: the quantized
// ResNet-50 on 4 NSPs at 224×224 ("4nsp-quant-resnet50", the program the
// open UMD's tests name) and at 64×64 for quick runs. Their reference
// inputs and outputs are files next to the container (reference_files()),
// so that a guest checks outputs without running the reference itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lower.h"
#include "network.h"
#include "program.h"

namespace aic100::qpc {

struct NetworkProgram {
	std::string name;    // the program's name (.aic.meta), ≤ 24 bytes
	uint32_t resolution; // of ResNet-50's square input
	unsigned nsps;
	std::string umd_dir; // under /opt/qti-aic/test-data, or empty
};

// 4nsp-quant-resnet50 (224) and 4nsp-quant-resnet50-r64 (64).
const std::vector<NetworkProgram> &network_programs();
const NetworkProgram *find_network(const std::string &name);

compiler::Network network_of(const NetworkProgram &p);

// How a network's input reaches the card.
enum class InputForm {
	// As the card takes it (Int8QTy): the open UMD and qaic-runner run it.
	Plain,
	// As float, quantized by the network descriptor before the copy
	// (Tensor::float_input), as Qualcomm's own ResNet-50 QPC evidently is: the copy
	// in the open UMD's test directory, which its API test
	// AdversarialInvalidPPPTransform needs the UMD to refuse to run.
	FloatQuantized,
};

// The ProgramSpec of a compiled network: input "image" Int8QTy [1,H,W,C],
// output "logits" Int8QTy [1,C] (NHWC), the ELF and the constants.
std::optional<ProgramSpec> network_spec(const compiler::Network &n, const compiler::Compiled &c, std::string &err,
					InputForm input = InputForm::Plain);

// Compiles and packs one of network_programs().
std::optional<std::vector<uint8_t>> build_network_qpc(const NetworkProgram &p, std::string &err,
						       InputForm input = InputForm::Plain);

// The reference pairs written next to a container: input.K.bin and
// output.K.bin for K = 0 .. count-1 (inputs from random_input(seed K+1)).
struct ReferencePair {
	std::string input_file, output_file;
	std::vector<uint8_t> input, output;
};
std::vector<ReferencePair> reference_files(const compiler::Network &n, unsigned count);

} // namespace aic100::qpc
