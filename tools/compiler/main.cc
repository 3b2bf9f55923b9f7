// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-compile: compiles ResNet-50 (tools/compiler) for N NSPs, prints
// the plan, and optionally runs it on this host's NSP interpreter against
// the reference (docs/compiler.md).
//
//   aic100-compile [--resolution R] [--nsps N] [--plan] [--listing]
//                  [--run COUNT [--profile FILE.json]] [--export DIR]
//
// --run: COUNT inferences on the interpreter (N host threads), each output
// compared with the reference's; prints inferences per second.
// --export: the network, two test inputs and their reference outputs into
// DIR (export.h), for the ONNX Runtime baseline of bench/run. Exit
// status 0 when all matched, 1 on a mismatch or a fault, 2 on usage.
// --profile: the interpreter times every instruction; where the time went,
// per layer and kind of work, goes to FILE as JSON and to stdout as a
// table (profile.h).
#include <aic100/nsp.h>
#include <aic100/nsp_run.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "export.h"
#include "lower.h"
#include "nspasm.h"
#include "profile.h"
#include "reference.h"

using namespace aic100;
using Clock = std::chrono::steady_clock;

namespace {

int usage(const char *why)
{
	if (why)
		std::fprintf(stderr, "aic100-compile: %s\n", why);
	std::fprintf(stderr, "usage: aic100-compile [--resolution R] [--nsps N] [--plan] [--listing] [--run COUNT "
			     "[--profile FILE.json]] [--export DIR]\n");
	return 2;
}

double seconds_since(Clock::time_point t)
{
	return std::chrono::duration<double>(Clock::now() - t).count();
}

// The profile of the run that just ended into `path` and onto stdout.
bool write_profile(const std::string &path, const compiler::Network &n, const compiler::Compiled &c,
		   const nsp_run::Profile &p, unsigned resolution, unsigned done, double s)
{
	namespace prof = compiler::profile;
	const prof::Report r = prof::make_report(n, c, p, resolution, done, s);
	const std::string json = prof::to_json(r);
	FILE *f = std::fopen(path.c_str(), "w");
	const bool ok = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
	if (f && std::fclose(f) != 0)
		return false;
	std::fputs(prof::table(r).c_str(), stdout);
	return ok;
}

// COUNT inferences with the host protocol of lower.h; 0 when every output
// matched the reference. With a `profile` path, profiled.
int run(const compiler::Network &n, const compiler::Compiled &c, unsigned count, unsigned resolution,
	const std::string &profile)
{
	const unsigned pairs = std::min(count, 2u);
	std::vector<std::vector<int8_t>> in, want;
	const auto t_ref = Clock::now();
	for (unsigned k = 0; k < pairs; k++) {
		in.push_back(compiler::random_input(n, k + 1));
		want.push_back(compiler::reference::run(n, in.back()));
	}
	std::printf("reference: %u inferences in %.2f s\n", pairs, seconds_since(t_ref));
	const nsp::Workload w = c.workload();
	std::vector<uint8_t> window = c.initial_window();
	nsp_run::Activation act;
	act.set_profiling(!profile.empty());
	if (!act.start(w, window)) {
		std::fprintf(stderr, "aic100-compile: the NSP threads did not start\n");
		return 1;
	}
	unsigned bad = 0, done = 0;
	const auto t0 = Clock::now();
	for (unsigned i = 0; i < count; i++) {
		if (!act.wait(compiler::kSemIn, sem::Op::WaitEq, 0))
			break;
		std::memcpy(window.data() + c.input_offset, in[i % pairs].data(), c.input_bytes);
		act.apply(compiler::kSemIn, sem::Op::Inc, 1);
		if (!act.wait(compiler::kSemOut, sem::Op::WaitGe, 1))
			break;
		bad += std::memcmp(window.data() + c.output_offset, want[i % pairs].data(), c.output_bytes) != 0;
		act.apply(compiler::kSemOut, sem::Op::Dec, 1);
		done++;
	}
	const double s = seconds_since(t0);
	const unsigned threads = act.threads(); // 0 once stopped
	act.stop();
	if (act.faulted()) {
		std::fprintf(stderr, "aic100-compile: %s\n", act.fault().c_str());
		return 1;
	}
	std::printf("interpreter: %u inferences in %.2f s (%.2f/s) on %u NSPs (%u host threads), %u differ from the reference\n",
		    done, s, done / s, unsigned(c.meta.nsp_count), threads, bad);
	if (!profile.empty() && !write_profile(profile, n, c, act.profile(), resolution, done, s)) {
		std::fprintf(stderr, "aic100-compile: could not write %s\n", profile.c_str());
		return 1;
	}
	return bad || done != count;
}

} // namespace

int main(int argc, char **argv)
{
	uint64_t resolution = 224, nsps = 4, count = 0;
	bool plan = false, listing = false;
	std::string export_dir, profile;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		uint64_t *dst = a == "--resolution" ? &resolution : a == "--nsps" ? &nsps : a == "--run" ? &count : nullptr;
		if (dst) {
			char *end = nullptr;
			if (i + 1 >= argc || (*dst = std::strtoull(argv[++i], &end, 0), *end != '\0'))
				return usage((a + " needs a number").c_str());
		} else if (a == "--plan") {
			plan = true;
		} else if (a == "--listing") {
			listing = true;
		} else if (a == "--export" && i + 1 < argc) {
			export_dir = argv[++i];
		} else if (a == "--profile" && i + 1 < argc) {
			profile = argv[++i];
		} else {
			return usage(("unknown argument " + a).c_str());
		}
	}
	if (resolution > 4096 || nsps > 16)
		return usage("--resolution is at most 4096, --nsps at most 16");
	if (!profile.empty() && !count)
		return usage("--profile needs --run");
	const compiler::Network n = compiler::resnet50(uint32_t(resolution));
	if (!export_dir.empty()) {
		const std::string err = compiler::export_network(n, export_dir, 2);
		if (!err.empty()) {
			std::fprintf(stderr, "aic100-compile: --export: %s\n", err.c_str());
			return 1;
		}
	}
	compiler::Options o;
	o.nsps = unsigned(nsps);
	std::string err;
	const auto c = compiler::compile(n, o, err);
	if (!c) {
		std::fprintf(stderr, "aic100-compile: %s\n", err.c_str());
		return 1;
	}
	std::printf("%s: %zu layers, %.3f G MACs, %zu instructions, %u barriers, window %llu bytes (constants %zu at 0x%x)\n",
		    n.name.c_str(), n.layers.size(), double(n.macs()) / 1e9, c->code.size(), c->barriers,
		    static_cast<unsigned long long>(c->meta.io_size), c->constants.size(), c->meta.const_offset);
	if (plan)
		for (const std::string &line : c->plan)
			std::printf("  %s\n", line.c_str());
	if (listing)
		std::fputs(nspasm::listing(c->code).c_str(), stdout);
	return count ? run(n, *c, unsigned(count), unsigned(resolution), profile) : 0;
}
