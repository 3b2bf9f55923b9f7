// SPDX-License-Identifier: GPL-2.0-or-later
#include "export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "reference.h"

namespace aic100::compiler {

namespace {

std::string write_file(const std::string &path, const void *data, size_t size)
{
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	f.write(static_cast<const char *>(data), std::streamsize(size));
	f.close();
	return f ? std::string() : path + ": " + std::strerror(errno);
}

std::string write_tensors(const std::string &path, const std::vector<std::vector<int8_t>> &all)
{
	std::vector<int8_t> flat;
	for (const std::vector<int8_t> &t : all)
		flat.insert(flat.end(), t.begin(), t.end());
	return write_file(path, flat.data(), flat.size());
}

template <typename T> void json_array(std::ostringstream &o, const std::vector<T> &v)
{
	o << '[';
	for (size_t i = 0; i < v.size(); i++)
		o << (i ? "," : "") << int64_t(v[i]);
	o << ']';
}

// One layer as a JSON object; its weights go to `blob`.
void json_layer(std::ostringstream &o, const Layer &l, std::vector<int8_t> &blob)
{
	o << "{\"kind\":\"" << kind_name(l.kind) << "\",\"name\":\"" << l.name << "\",\"in0\":" << l.in0
	  << ",\"in1\":" << l.in1 << ",\"out\":" << l.out << ",\"k\":" << l.k << ",\"stride\":" << l.stride
	  << ",\"pad\":" << l.pad << ",\"weights\":[" << blob.size() << ',' << l.weights.size() << ']';
	blob.insert(blob.end(), l.weights.begin(), l.weights.end());
	o << ",\"relu\":" << (l.kind == LayerKind::Add ? l.add.relu : l.rq.relu);
	o << ",\"bias\":";
	json_array(o, l.rq.bias);
	o << ",\"mult\":";
	json_array(o, l.rq.mult);
	o << ",\"shift\":";
	json_array(o, l.rq.shift);
	o << ",\"add\":{\"mx\":" << l.add.mx << ",\"my\":" << l.add.my << ",\"shift\":" << l.add.shift << "}}";
}

std::string network_json(const Network &n, std::vector<int8_t> &blob)
{
	std::ostringstream o;
	o << std::boolalpha << "{\"name\":\"" << n.name << "\",\"layout\":\"NHWC\",\"input\":" << n.input
	  << ",\"output\":" << n.output << ",\"macs\":" << n.macs() << ",\"tensors\":[";
	for (size_t i = 0; i < n.tensors.size(); i++)
		o << (i ? "," : "") << '[' << n.tensors[i].h << ',' << n.tensors[i].w << ',' << n.tensors[i].c << ']';
	o << "],\"layers\":[\n";
	for (size_t i = 0; i < n.layers.size(); i++) {
		o << (i ? ",\n" : "");
		json_layer(o, n.layers[i], blob);
	}
	o << "\n]}\n";
	return o.str();
}

} // namespace

std::string export_network(const Network &n, const std::string &dir, unsigned inputs)
{
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec)
		return dir + ": " + ec.message();
	std::vector<int8_t> blob;
	const std::string json = network_json(n, blob);
	std::string err = write_file(dir + "/network.json", json.data(), json.size());
	if (err.empty())
		err = write_file(dir + "/weights.bin", blob.data(), blob.size());
	for (unsigned k = 1; err.empty() && k <= inputs; k++) {
		const std::vector<int8_t> in = random_input(n, k);
		const std::vector<std::vector<int8_t>> all = reference::run_all(n, in);
		const std::vector<int8_t> &out = all[size_t(n.output)];
		err = write_file(dir + "/input-" + std::to_string(k) + ".bin", in.data(), in.size());
		if (err.empty())
			err = write_file(dir + "/output-" + std::to_string(k) + ".bin", out.data(), out.size());
		if (err.empty() && k == 1)
			err = write_tensors(dir + "/tensors-1.bin", all);
	}
	return err;
}

} // namespace aic100::compiler
