// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-run: runs the example NSP workloads on a card and checks every
// output against the host reference.
//   aic100-run [-d /dev/accel/accelN] [-n COUNT] [--depth D] [--no-check] [WORKLOAD...]
//   aic100-run [-d NODE] [-n COUNT] [--depth D] [--no-check] --qpc FILE...
// With no workload names, runs all of them. --qpc runs program containers
// (docs/qpc.md) as the open UMD does; a container named after an example
// gets that example's inputs and is checked against its reference; one
// with reference pairs next to it (input.K.bin, output.K.bin, as
// aic100-qpc --network writes them) cycles through those inputs and is
// checked against those outputs; any other runs on zeros, unchecked. Exit status 0 when every inference ran
// and matched.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fstream>
#include <iterator>

#include "pipeline.h"
#include "qpc_pipeline.h"

namespace wl = aic100::workloads;

namespace {

// One container: 0 when every inference ran (and matched), 1 otherwise.
int run_qpc(const qaic::Device &dev, const std::string &path, uint64_t count, unsigned depth, bool check)
{
	std::ifstream f(path, std::ios::binary);
	const std::vector<uint8_t> file((std::istreambuf_iterator<char>(f)), {});
	std::string err;
	const auto p = f ? aic100::qpc::read_qpc(file, err) : std::nullopt;
	if (!p) {
		std::printf("%s: error %s\n", path.c_str(), f ? err.c_str() : "cannot read the file");
		return 1;
	}
	const std::string name = p->workload.meta.name;
	const wl::Example *e = wl::find(name);
	uint64_t in_size = 0;
	for (const auto &io : p->desc.inputs())
		in_size += p->desc.dma_buffers(int(io.transformseq(0).copy_dma_buffer().buffer_num())).size();
	// Reference pairs next to the container.
	std::vector<std::vector<uint8_t>> ref_in, ref_out;
	const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
	for (unsigned k = 0; !e; k++) {
		std::ifstream fi(dir + "/input." + std::to_string(k) + ".bin", std::ios::binary);
		std::ifstream fo(dir + "/output." + std::to_string(k) + ".bin", std::ios::binary);
		if (!fi || !fo)
			break;
		ref_in.emplace_back(std::istreambuf_iterator<char>(fi), std::istreambuf_iterator<char>());
		ref_out.emplace_back(std::istreambuf_iterator<char>(fo), std::istreambuf_iterator<char>());
		if (ref_in.back().size() != in_size) {
			std::printf("%s: error %s/input.%u.bin is %zu bytes, the program's input %llu\n", path.c_str(),
				    dir.c_str(), k, ref_in.back().size(), static_cast<unsigned long long>(in_size));
			return 1;
		}
	}
	check = check && (e || !ref_in.empty());
	qaic::QpcPipeline q(dev, *p, depth);
	if (const std::string why = q.setup(); !why.empty()) {
		std::printf("%-12s error %s\n", name.c_str(), why.c_str());
		return 1;
	}
	const qaic::RunResult r = q.run(
		count,
		[&](uint64_t i) {
			if (e)
				return e->make_input(i % 4 + 1);
			return ref_in.empty() ? std::vector<uint8_t>(in_size, 0) : ref_in[i % ref_in.size()];
		},
		[&](uint64_t i, std::span<const uint8_t> out) {
			std::string why;
			if (check && e && !wl::matches(*e, out, e->reference(e->make_input(i % 4 + 1)), why))
				return why.empty() ? std::string("mismatch") : why;
			if (check && !e) {
				const std::vector<uint8_t> &want = ref_out[i % ref_out.size()];
				if (out.size() != want.size())
					return "output of " + std::to_string(out.size()) + " bytes, the reference's " +
					       std::to_string(want.size());
				for (size_t j = 0; j < want.size(); j++)
					if (out[j] != want[j])
						return "byte " + std::to_string(j) + " is " + std::to_string(int8_t(out[j])) +
						       ", the reference's " + std::to_string(int8_t(want[j]));
			}
			return std::string();
		});
	const bool ok = r.problem.empty() && !r.mismatches && r.inferences == count;
	std::printf("%-12s %s (qpc) dbc=%u %llu inferences in %.3f s (%.1f/s)%s%s%s\n", name.c_str(), ok ? "ok" : "FAIL",
		    q.dbc(), static_cast<unsigned long long>(r.inferences), r.seconds,
		    r.seconds > 0 ? r.inferences / r.seconds : 0.0, check ? ", outputs match" : ", unchecked",
		    r.problem.empty() ? "" : ("; " + r.problem).c_str(),
		    r.mismatches ? ("; " + std::to_string(r.mismatches) + " mismatches, " + r.first_mismatch).c_str() : "");
	return !ok;
}

} // namespace

int main(int argc, char **argv)
{
	std::string node;
	uint64_t count = 100;
	unsigned depth = 8;
	bool check = true;
	std::vector<std::string> names, qpcs;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "-d" && i + 1 < argc)
			node = argv[++i];
		else if (a == "-n" && i + 1 < argc)
			count = std::strtoull(argv[++i], nullptr, 0);
		else if (a == "--depth" && i + 1 < argc)
			depth = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 0));
		else if (a == "--no-check")
			check = false;
		else if (a == "--qpc" && i + 1 < argc)
			qpcs.push_back(argv[++i]);
		else if (a == "-h" || a == "--help") {
			std::printf("usage: aic100-run [-d NODE] [-n COUNT] [--depth D] [--no-check] [WORKLOAD...]\n"
				    "       aic100-run [-d NODE] [-n COUNT] [--depth D] [--no-check] --qpc FILE...\n"
				    "workloads:");
			for (const auto &e : wl::examples())
				std::printf(" %s", e.layout.name.c_str());
			std::printf("\n");
			return 0;
		} else
			names.push_back(a);
	}
	if (node.empty()) {
		auto cards = qaic::find_cards();
		if (cards.empty() || !cards[0].accel_minor) {
			std::fprintf(stderr, "aic100-run: no card with an accel node\n");
			return 2;
		}
		node = cards[0].accel_node();
	}
	if (names.empty() && qpcs.empty())
		for (const auto &e : wl::examples())
			names.push_back(e.layout.name);
	int err = 0;
	auto dev = qaic::Device::open(node, &err);
	if (!dev) {
		std::fprintf(stderr, "aic100-run: %s: %s\n", node.c_str(), std::strerror(-err > 0 ? -err : err));
		return 2;
	}
	int status = 0;
	for (const auto &path : qpcs)
		status |= run_qpc(*dev, path, count, depth, check);
	for (const auto &name : names) {
		const wl::Example *e = wl::find(name);
		if (!e) {
			std::fprintf(stderr, "aic100-run: no workload '%s'\n", name.c_str());
			return 2;
		}
		qaic::Pipeline p(*dev, *e, depth);
		if (const std::string why = p.setup(); !why.empty()) {
			std::printf("%-12s error %s\n", name.c_str(), why.c_str());
			status = 1;
			continue;
		}
		const qaic::RunResult r = p.run(count, check);
		const bool ok = r.problem.empty() && !r.mismatches && r.inferences == count;
		std::printf("%-12s %s dbc=%u %llu inferences in %.3f s (%.1f/s)%s%s%s\n", name.c_str(), ok ? "ok" : "FAIL",
			    p.dbc(), static_cast<unsigned long long>(r.inferences), r.seconds,
			    r.seconds > 0 ? r.inferences / r.seconds : 0.0, check ? ", outputs match" : "",
			    r.problem.empty() ? "" : ("; " + r.problem).c_str(),
			    r.mismatches ? ("; " + std::to_string(r.mismatches) + " mismatches, " + r.first_mismatch).c_str()
					 : "");
		status |= !ok;
	}
	return status;
}
