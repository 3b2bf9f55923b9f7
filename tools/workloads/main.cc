// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-workloads: writes the example NSP workloads into a directory:
// NAME.elf, NAME.s (its source; aic100-nsp-asm rebuilds the same ELF from
// it), NAME.*.bin (weights read by .file), NAME.input.bin with
// NAME.output.bin (a sample input and its expected output), and
// workloads.json (window layouts, semaphores, how to compare outputs).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "workloads.h"

namespace wl = aic100::workloads;

namespace {

bool write(const std::filesystem::path &p, const void *data, size_t size)
{
	std::ofstream o(p, std::ios::binary | std::ios::trunc);
	o.write(static_cast<const char *>(data), std::streamsize(size));
	o.close();
	if (!o)
		std::fprintf(stderr, "aic100-workloads: cannot write %s\n", p.c_str());
	return bool(o);
}

bool write(const std::filesystem::path &p, const std::string &s)
{
	return write(p, s.data(), s.size());
}

bool write(const std::filesystem::path &p, const std::vector<uint8_t> &v)
{
	return write(p, v.data(), v.size());
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 2 && std::strcmp(argv[1], "--markdown") == 0) {
		std::fputs(wl::layouts_markdown().c_str(), stdout);
		return 0;
	}
	if (argc != 3 || std::strcmp(argv[1], "--out") != 0) {
		std::fprintf(stderr, "usage: aic100-workloads --out DIR\n"
				     "       aic100-workloads --markdown   (the layout table of tools/workloads/README.md)\n");
		return 2;
	}
	const std::filesystem::path dir = argv[2];
	std::error_code ec;
	std::filesystem::create_directories(dir, ec);
	if (ec) {
		std::fprintf(stderr, "aic100-workloads: %s: %s\n", dir.c_str(), ec.message().c_str());
		return 1;
	}
	for (const wl::Example &e : wl::examples()) {
		const std::string &name = e.layout.name;
		std::string err;
		const auto elf = wl::build(e, err);
		if (!elf) {
			std::fprintf(stderr, "aic100-workloads: %s\n", err.c_str());
			return 1;
		}
		const auto input = e.make_input(1);
		bool ok = write(dir / (name + ".elf"), *elf) && write(dir / (name + ".s"), e.source) &&
			  write(dir / (name + ".input.bin"), input) &&
			  write(dir / (name + ".output.bin"), e.reference(input));
		for (const auto &[file, data] : e.files)
			ok = ok && write(dir / file, data);
		if (!ok)
			return 1;
	}
	return write(dir / "workloads.json", wl::layouts_json()) ? 0 : 1;
}
