// SPDX-License-Identifier: GPL-2.0-or-later
// Compiled networks as program containers.
#include "networks.h"

#include "reference.h"

namespace aic100::qpc {

const std::vector<NetworkProgram> &network_programs()
{
	static const std::vector<NetworkProgram> all = {
		{"4nsp-quant-resnet50", 224, 4, "aic100/v2/4nsp/4nsp-quant-resnet50"},
		{"4nsp-quant-resnet50-r64", 64, 4, ""},
	};
	return all;
}

const NetworkProgram *find_network(const std::string &name)
{
	for (const NetworkProgram &p : network_programs())
		if (p.name == name)
			return &p;
	return nullptr;
}

compiler::Network network_of(const NetworkProgram &p)
{
	return compiler::resnet50(p.resolution);
}

std::optional<ProgramSpec> network_spec(const compiler::Network &n, const compiler::Compiled &c, std::string &err,
					InputForm input)
{
	const compiler::Shape &in = n.tensors.at(size_t(n.input)), &out = n.tensors.at(size_t(n.output));
	if (out.h != 1 || out.w != 1) {
		err = n.name + ": the output is not a vector";
		return std::nullopt;
	}
	ProgramSpec spec;
	Tensor x;
	x.name = "image";
	x.type = netdesc::Int8QTy;
	x.dims = {1, int32_t(in.h), int32_t(in.w), int32_t(in.c)};
	x.dev_offset = c.input_offset;
	x.float_input = input == InputForm::FloatQuantized;
	spec.inputs.push_back(x);
	Tensor y;
	y.name = "logits";
	y.type = netdesc::Int8QTy;
	y.dims = {1, int32_t(out.c)};
	y.dev_offset = c.output_offset;
	spec.outputs.push_back(y);
	spec.sem_in = compiler::kSemIn;
	spec.sem_out = compiler::kSemOut;
	spec.constants = c.constants;
	auto elf = compiler::workload_elf(c, err);
	if (!elf)
		return std::nullopt;
	spec.elf = std::move(*elf);
	return spec;
}

std::optional<std::vector<uint8_t>> build_network_qpc(const NetworkProgram &p, std::string &err, InputForm input)
{
	const compiler::Network n = network_of(p);
	compiler::Options o;
	o.nsps = p.nsps;
	o.name = p.name;
	const auto c = compiler::compile(n, o, err);
	if (!c)
		return std::nullopt;
	const auto spec = network_spec(n, *c, err, input);
	if (!spec)
		return std::nullopt;
	return build_qpc(*spec, err);
}

std::vector<ReferencePair> reference_files(const compiler::Network &n, unsigned count)
{
	std::vector<ReferencePair> r;
	for (unsigned k = 0; k < count; k++) {
		const auto in = compiler::random_input(n, k + 1);
		const auto out = compiler::reference::run(n, in);
		ReferencePair p;
		p.input_file = "input." + std::to_string(k) + ".bin";
		p.output_file = "output." + std::to_string(k) + ".bin";
		p.input.assign(reinterpret_cast<const uint8_t *>(in.data()),
			       reinterpret_cast<const uint8_t *>(in.data()) + in.size());
		p.output.assign(reinterpret_cast<const uint8_t *>(out.data()),
				reinterpret_cast<const uint8_t *>(out.data()) + out.size());
		r.push_back(std::move(p));
	}
	return r;
}

} // namespace aic100::qpc
