// SPDX-License-Identifier: GPL-2.0-or-later
// Program specs of the example workloads.
#include "examples.h"

#include <algorithm>
#include <cstring>

#include "nspasm.h"

namespace aic100::qpc {

namespace {

struct TensorTable {
	const char *example;
	bool input;
	Tensor tensor;
	const char *buffer; // the layout buffer it lies in
	uint64_t offset;    // from the start of that buffer
};

Tensor t(const char *name, netdesc::DataType type, std::vector<int32_t> dims)
{
	Tensor x;
	x.name = name;
	x.type = type;
	x.dims = std::move(dims);
	return x;
}

// Shapes and types of the examples' buffers (tools/workloads/README.md).
const TensorTable kTensors[] = {
	{"copy", true, t("in", netdesc::Int8Ty, {4096}), "in", 0},
	{"copy", false, t("out", netdesc::Int8Ty, {4096}), "out", 0},
	{"vadd_f32", true, t("x", netdesc::FloatTy, {1024}), "in", 0},
	{"vadd_f32", true, t("y", netdesc::FloatTy, {1024}), "in", 4096},
	{"vadd_f32", false, t("z", netdesc::FloatTy, {1024}), "out", 0},
	{"matmul_i8", true, t("a", netdesc::Int8QTy, {64, 256}), "a", 0},
	{"matmul_i8", false, t("c", netdesc::Int32QTy, {64, 128}), "c", 0},
	{"matmul_i8p", true, t("a", netdesc::Int8QTy, {64, 256}), "a", 0},
	{"matmul_i8p", false, t("c", netdesc::Int32QTy, {64, 128}), "c", 0},
	{"matmul_f32", true, t("a", netdesc::FloatTy, {32, 128}), "a", 0},
	{"matmul_f32", false, t("c", netdesc::FloatTy, {32, 64}), "c", 0},
	{"mlp_f32", true, t("x", netdesc::FloatTy, {16, 128}), "x", 0},
	{"mlp_f32", false, t("y", netdesc::FloatTy, {16, 32}), "y", 0},
	{"add_4nsp", true, t("x", netdesc::FloatTy, {4096}), "in", 0},
	{"add_4nsp", true, t("y", netdesc::FloatTy, {4096}), "in", 16384},
	{"add_4nsp", false, t("z", netdesc::FloatTy, {4096}), "out", 0},
};

} // namespace

std::optional<ProgramSpec> example_spec(const workloads::Example &e, std::string &err)
{
	const workloads::Layout &l = e.layout;
	ProgramSpec spec;
	spec.sem_in = l.sem_in;
	spec.sem_out = l.sem_out;
	for (const TensorTable &row : kTensors) {
		if (l.name != row.example)
			continue;
		const auto b = std::find_if(l.buffers.begin(), l.buffers.end(),
					    [&row](const workloads::Buffer &x) { return x.name == row.buffer; });
		if (b == l.buffers.end()) {
			err = l.name + ": no buffer " + row.buffer;
			return std::nullopt;
		}
		Tensor x = row.tensor;
		x.dev_offset = b->offset + row.offset;
		if (row.offset + tensor_bytes(x) > b->size) {
			err = l.name + ": tensor " + x.name + " does not fit in buffer " + b->name;
			return std::nullopt;
		}
		(row.input ? spec.inputs : spec.outputs).push_back(x);
	}
	if (spec.inputs.empty()) {
		err = l.name + ": no tensors are described for this example";
		return std::nullopt;
	}

	nspasm::Options opt;
	opt.filename = l.name + ".s";
	opt.read_file = [&e](const std::string &path, std::string &why) -> std::optional<std::vector<uint8_t>> {
		const auto it = e.files.find(path);
		if (it == e.files.end()) {
			why = "no file " + path;
			return std::nullopt;
		}
		return it->second;
	};
	auto prog = nspasm::assemble(e.source, opt, err);
	if (!prog)
		return std::nullopt;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (const workloads::Buffer &b : l.buffers)
		if (b.role == "weights") {
			lo = std::min(lo, b.offset);
			hi = std::max(hi, b.offset + b.size);
		}
	if (hi > lo) {
		spec.constants.assign(hi - lo, 0);
		std::vector<nsp::Segment> kept;
		for (nsp::Segment &s : prog->segments) {
			if (s.offset >= lo && s.offset + s.memsz <= hi) {
				std::copy(s.data.begin(), s.data.end(), spec.constants.begin() + long(s.offset - lo));
				continue;
			}
			kept.push_back(std::move(s));
		}
		prog->segments = std::move(kept);
		prog->meta.const_offset = uint32_t(lo);
	}
	auto elf = nspasm::write_elf(*prog, err);
	if (!elf)
		return std::nullopt;
	spec.elf = std::move(*elf);
	return spec;
}

std::string umd_test_dir(const std::string &example)
{
	if (example == "add_4nsp")
		return "aic100/v2/4nsp/4nsp-add";
	return "";
}

} // namespace aic100::qpc
