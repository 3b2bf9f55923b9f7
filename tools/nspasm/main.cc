// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-nsp-asm: assembles an NSP program into a workload ELF
// (docs/nsp.md), or shows what a workload ELF holds.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nspasm.h"

namespace nsp = aic100::nsp;
namespace nspasm = aic100::nspasm;

namespace {

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: aic100-nsp-asm IN.s -o OUT.elf [--io-size N] [--nsps N] [--name X] [--list]\n"
		     "       aic100-nsp-asm --dump ELF\n"
		     "Assembles IN.s (syntax: tools/nspasm/nspasm.h) into a workload ELF; the options\n"
		     "override the .io_size, .nsps and .name directives (the name defaults to IN's\n"
		     "stem). --list prints the program. --dump checks ELF as the card would and\n"
		     "prints its metadata, segments and program.\n");
}

bool read_file(const std::string &path, std::vector<uint8_t> &out)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return false;
	out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	return !in.bad();
}

bool number(const char *s, uint64_t &v)
{
	char *end;
	errno = 0;
	v = std::strtoull(s, &end, 0);
	return *s && *s != '-' && !*end && !errno;
}

int dump(const std::string &path)
{
	std::vector<uint8_t> elf;
	if (!read_file(path, elf)) {
		std::fprintf(stderr, "aic100-nsp-asm: cannot read %s: %s\n", path.c_str(), std::strerror(errno));
		return 1;
	}
	std::string err;
	const auto w = nsp::parse(elf, err);
	if (!w) {
		std::fprintf(stderr, "aic100-nsp-asm: %s: refused: %s\n", path.c_str(), err.c_str());
		return 1;
	}
	std::printf("name \"%s\", %u NSP(s), io_size 0x%" PRIx64 ", entry %u, const_offset 0x%x\n",
		    w->meta.name.c_str(), w->meta.nsp_count, w->meta.io_size, w->meta.entry, w->meta.const_offset);
	for (const nsp::Segment &s : w->segments)
		std::printf("segment [0x%" PRIx64 ", +0x%" PRIx64 "), 0x%zx bytes from the file\n", s.offset,
			    s.memsz, s.data.size());
	for (const nsp::PackedRegion &r : w->packed)
		std::printf("packed [0x%" PRIx64 ", +0x%" PRIx64 "): K=%u N=%u in MMI8P's layout\n", r.offset, r.size,
			    r.k, r.n);
	std::printf("%zu instructions:\n%s", w->program.size(), nspasm::listing(w->program).c_str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	std::string in, out;
	nspasm::Options opt;
	bool list = false;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		const bool has_value = i + 1 < argc;
		uint64_t v;
		if (a == "-h" || a == "--help") {
			usage(stdout);
			return 0;
		} else if (a == "--dump" && has_value) {
			return dump(argv[i + 1]);
		} else if (a == "-o" && has_value) {
			out = argv[++i];
		} else if (a == "--io-size" && has_value && number(argv[i + 1], v)) {
			opt.io_size = v;
			i++;
		} else if (a == "--nsps" && has_value && number(argv[i + 1], v) && v >= 1 && v <= nsp::kMaxNsps) {
			opt.nsps = uint16_t(v);
			i++;
		} else if (a == "--name" && has_value) {
			opt.name = argv[++i];
		} else if (a == "--list") {
			list = true;
		} else if (a[0] != '-' && in.empty()) {
			in = a;
		} else {
			std::fprintf(stderr, "aic100-nsp-asm: bad argument '%s'\n", a.c_str());
			usage(stderr);
			return 2;
		}
	}
	if (in.empty() || out.empty()) {
		usage(stderr);
		return 2;
	}
	std::vector<uint8_t> src;
	if (!read_file(in, src)) {
		std::fprintf(stderr, "aic100-nsp-asm: cannot read %s: %s\n", in.c_str(), std::strerror(errno));
		return 1;
	}
	opt.filename = in;
	std::string err;
	auto prog = nspasm::assemble(std::string_view(reinterpret_cast<const char *>(src.data()), src.size()),
				     opt, err);
	if (!prog) {
		std::fprintf(stderr, "%s\n", err.c_str());
		return 1;
	}
	if (prog->meta.name.empty())
		prog->meta.name = std::filesystem::path(in).stem().string().substr(0, nsp::kNameSize);
	const auto elf = nspasm::write_elf(*prog, err);
	if (!elf) {
		std::fprintf(stderr, "%s: %s\n", in.c_str(), err.c_str());
		return 1;
	}
	std::ofstream o(out, std::ios::binary | std::ios::trunc);
	o.write(reinterpret_cast<const char *>(elf->data()), std::streamsize(elf->size()));
	o.close();
	if (!o) {
		std::fprintf(stderr, "aic100-nsp-asm: cannot write %s\n", out.c_str());
		return 1;
	}
	if (list)
		std::fputs(nspasm::listing(prog->code).c_str(), stdout);
	return 0;
}
