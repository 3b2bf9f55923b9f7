// SPDX-License-Identifier: GPL-2.0-or-later
// A program container for one of our NSP workloads, and back
// (docs/qpc.md). build_qpc() packs a workload ELF (docs/nsp.md), its
// inputs and outputs and its constants; read_qpc() parses every segment
// and checks that they agree with each other and with the ELF.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <aic100/nsp.h>
#include <aic100/qpc.h>

#include "aic_metadata_generated.h"
#include "aic_network_desc.pb.h"
#include "container.h"

namespace aic100::qpc {

// An input or output of the program: one user buffer, moved by one DMA
// request per inference to or from window offset `dev_offset`.
struct Tensor {
	std::string name;
	netdesc::DataType type = netdesc::FloatTy;
	std::vector<int32_t> dims;
	uint64_t dev_offset = 0;
	float qscale = 1;
	int32_t qoffset = 0;
	// Inputs of a quantized type only: the application hands the tensor
	// over as FloatTy and the network descriptor quantizes it to `type`
	// (qscale, qoffset) before the copy, with the transform sequence
	// [QuantizeTransform, CopyDMABufferTransform] that Qualcomm's compiler
	// gives a quantized network with a float input. The open UMD loads,
	// activates and describes such a program but refuses to run it
	// (QPrePostProc::validateTransformKind); docs/umd-compat.md, section 5.
	bool float_input = false;
};

// Whether the open UMD's ExecObj::run() accepts the program's transforms:
// every input and output has at most one, a CopyDMABufferTransform. When
// not, `why` names the first binding it refuses.
bool umd_runs(const netdesc::networkDescriptor &d, std::string &why);

// Bytes of one element; 0 for a type outside the enum.
unsigned element_size(netdesc::DataType t);
// Bytes of a tensor (product of the dims times the element size); 0 when
// a dim is not positive or the product overflows 32 bits.
uint64_t tensor_bytes(const Tensor &t);

struct ProgramSpec {
	// A workload ELF (docs/nsp.md): name, NSPs, window size and
	// const_offset come from its .aic.meta.
	std::vector<uint8_t> elf;
	std::vector<Tensor> inputs, outputs;
	// The host's semaphore protocol (tools/workloads/workloads.h): the
	// first input waits for sem_in == 0, the last input adds 1 to it; the
	// first output waits for sem_out >= 1, the last output takes 1 from it.
	unsigned sem_in = 0, sem_out = 1;
	// Copied by ACTIVATE to const_offset of the window (static constants).
	std::vector<uint8_t> constants;
};

// The 24 bytes of constantsdesc.bin (ConstantsDescriptor: aic100/qpc.h).
std::vector<uint8_t> encode_constants_descriptor(const ConstantsDescriptor &d);
std::optional<ConstantsDescriptor> decode_constants_descriptor(std::span<const uint8_t> b, std::string &err);

// The metadata and network descriptor build_qpc() writes for `spec`.
std::optional<meta::MetadataT> make_metadata(const ProgramSpec &spec, const nsp::Workload &w, std::string &err);
netdesc::networkDescriptor make_network_descriptor(const ProgramSpec &spec, const nsp::Workload &w);

// The container file; nullopt with the reason when the spec does not fit
// its ELF (tensors outside the window or overlapping, semaphores above
// 31, constants that do not fit, a DMA of 4 GiB or more...).
std::optional<std::vector<uint8_t>> build_qpc(const ProgramSpec &spec, std::string &err);

struct Program {
	Container container;
	std::vector<uint8_t> elf; // network.elf, metadata section included
	nsp::Workload workload;   // what the card runs from it
	std::unique_ptr<meta::MetadataT> metadata;
	netdesc::networkDescriptor desc;
	ConstantsDescriptor constants_desc{};
	std::vector<uint8_t> static_constants, dynamic_constants;
};

// Parses every segment and cross-checks them (docs/qpc.md, "What the
// reader checks"); nullopt with the first problem in `err`.
std::optional<Program> read_qpc(std::span<const uint8_t> file, std::string &err);

// Every field of a parsed container, as text (aic100-qpc --inspect).
std::string describe(const Program &p);

} // namespace aic100::qpc
