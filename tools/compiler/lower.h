// SPDX-License-Identifier: GPL-2.0-or-later
// The network compiler: lowers a Network (network.h) to one NSP program
// for N NSPs (docs/nsp.md), its constants (weights, requantization
// blocks) and the window layout the host's DMA requests use.
//
// Work split (docs/compiler.md): convolutions, pooling and adds split their
// output rows between the NSPs (NSP k takes rows row0_k .. +rows_k, the
// first OH % N NSPs one more); each convolution is IM2COL (skipped for
// 1×1/1 convolutions, whose input rows are already the matrix) + MMI8 on
// the matrix unit + REQI8. A convolution whose weights dwarf its input
// (output channels > 64 × pixels: small, wide late layers) splits its
// output channels instead: every NSP takes all pixels and its own slice of
// the weights, stored contiguously, and writes its channels pixel by pixel;
// an add after it splits the same channels. The global average pool is an
// MMI8 of a row of ones by the activation, done by every NSP into its own
// copy; the FC layer splits its output channels. Between layers a barrier
// on one counting semaphore (each NSP adds 1, then waits for N times the
// barrier's number) is placed only where a layer reads what another NSP
// wrote since the last one.
#pragma once

#include <aic100/nsp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "network.h"

namespace aic100::compiler {

// Semaphores of the compiled program. In, out, done and phase are the
// protocol of the example workloads (tools/workloads/workloads.h): the
// host waits in == 0, writes the input, adds 1; it waits out > 0, reads
// the output, takes 1.
constexpr unsigned kSemIn = 0, kSemOut = 1, kSemDone = 2, kSemPhase = 3, kSemBarrier = 4;

struct Options {
	unsigned nsps = 4;
	std::string name; // the program's name (.aic.meta, ≤ 24 bytes); default: the network's
};

// The output rows (or channels) of one NSP.
struct Slice {
	uint32_t first = 0, count = 0;
};
// `total` split between `parts`: the first total % parts get one more.
std::vector<Slice> split(uint32_t total, unsigned parts);

// REQI8's parameter block (docs/nsp.md) for channels first .. first+count
// of a requantization.
std::vector<uint8_t> requant_block(const Requant &q, uint32_t first, uint32_t count);

struct Compiled {
	nsp::Meta meta; // name, nsp_count, io_size, const_offset
	std::vector<nsp::Instr> code;
	// Per instruction of `code`, the index of the layer it belongs to in
	// Network::layers (a barrier's go with the layer before it, whose rows
	// it waits for), -1 for the inference loop around the layers: how a
	// profile names where the time went.
	std::vector<int32_t> layer_of;
	std::vector<uint8_t> constants; // copied to meta.const_offset at ACTIVATE
	// The constants' weights in MMI8P's layout, in the window (.aic.packed),
	// sorted by offset.
	std::vector<nsp::PackedRegion> packed;
	uint64_t input_offset = 0, input_bytes = 0;
	uint64_t output_offset = 0, output_bytes = 0;
	unsigned barriers = 0;       // per inference
	std::vector<std::string> plan; // one line per layer: what each NSP does

	// The workload the NSPs run, and its window as ACTIVATE leaves it: the
	// constants at meta.const_offset, zeros elsewhere.
	nsp::Workload workload() const;
	std::vector<uint8_t> initial_window() const;
};

// nullopt with the reason in `err` when the network is unsound (check()),
// a layer exceeds what the instructions encode (a geometry field, a GEMM
// dimension), or the window would pass 4 GiB.
std::optional<Compiled> compile(const Network &n, const Options &o, std::string &err);

// The workload ELF of a compiled network.
std::optional<std::vector<uint8_t>> workload_elf(const Compiled &c, std::string &err);

} // namespace aic100::compiler
